package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/conformance"
)

func user(s string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.Text(s)}}
}

func results(rs ...llm.Block) llm.Message { return llm.Message{Role: llm.RoleUser, Content: rs} }

func result(id, text string) llm.Block {
	b := llm.Block{Type: llm.BlockToolResult, ToolCallID: llm.CallID(id)}
	if text != "" {
		b.Content = []llm.Block{llm.Text(text)}
	}
	return b
}

func assistant(bs ...llm.Block) llm.Message { return llm.Message{Role: llm.RoleAssistant, Content: bs} }

func mustAdapter(t *testing.T, cfg Config) *Adapter {
	t.Helper()
	if cfg.Provider == "" {
		cfg.Provider = "deepseek"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://api.deepseek.com"
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// jsonEqual compares two JSON documents semantically.
func jsonEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want invalid JSON: %v", err)
	}
	gb, _ := json.MarshalIndent(g, "", "  ")
	wb, _ := json.MarshalIndent(w, "", "  ")
	if !bytes.Equal(gb, wb) {
		t.Errorf("JSON differs\n got: %s\nwant: %s", gb, wb)
	}
}

func messagesOf(t *testing.T, body []byte) []byte {
	t.Helper()
	var m struct {
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m.Messages
}

// thinkingHistory is a DeepSeek thinking-mode session: a finished turn with
// tool calls, a finished turn without, and the current turn two steps into
// its tool loop.
func thinkingHistory() []llm.Message {
	return []llm.Message{
		user("Weather in Paris?"),
		assistant(llm.Reasoning("R1a: call the tool."), llm.ToolCall("call_1", "get_weather", `{"city":"Paris"}`)),
		results(result("call_1", "18°C")),
		assistant(llm.Reasoning("R1b: answer."), llm.Text("Paris: 18°C.")),
		user("Tell me a joke."),
		assistant(llm.Reasoning("R2: a joke."), llm.Text("Why did the chicken…")),
		user("Check the two files."),
		assistant(llm.Reasoning("R3a: read both."),
			llm.ToolCall("call_2", "read", `{"path":"a.txt"}`),
			llm.ToolCall("call_3", "read", `{"path":"b.txt"}`)),
		results(result("call_2", "alpha"), result("call_3", "")),
		assistant(llm.Reasoning("R3b: now grep."), llm.ToolCall("call_4", "grep", `{"pattern":"x"}`)),
		results(result("call_4", "no matches")),
	}
}

const thinkingToolTurns = `[
 {"role":"system","content":"sys"},
 {"role":"user","content":"Weather in Paris?"},
 {"role":"assistant","content":null,"reasoning_content":"R1a: call the tool.",
  "tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
 {"role":"tool","tool_call_id":"call_1","content":"18°C"},
 {"role":"assistant","content":"Paris: 18°C.","reasoning_content":"R1b: answer."},
 {"role":"user","content":"Tell me a joke."},
 {"role":"assistant","content":"Why did the chicken…"},
 {"role":"user","content":"Check the two files."},
 {"role":"assistant","content":null,"reasoning_content":"R3a: read both.",
  "tool_calls":[{"id":"call_2","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.txt\"}"}},
                {"id":"call_3","type":"function","function":{"name":"read","arguments":"{\"path\":\"b.txt\"}"}}]},
 {"role":"tool","tool_call_id":"call_2","content":"alpha"},
 {"role":"tool","tool_call_id":"call_3","content":"(no output)"},
 {"role":"assistant","content":null,"reasoning_content":"R3b: now grep.",
  "tool_calls":[{"id":"call_4","type":"function","function":{"name":"grep","arguments":"{\"pattern\":\"x\"}"}}]},
 {"role":"tool","tool_call_id":"call_4","content":"no matches"}
]`

// TestDeepSeekThinkingPassback checks the reasoning_content DeepSeek's
// thinking mode requires: every assistant message of the current tool loop
// carries its reasoning; so does every assistant message of an earlier turn
// that made tool calls (DeepSeek's thinking-mode guide: "between two user
// messages, if the model made tool calls, the assistant's reasoning_content
// must be passed back in all subsequent requests", else HTTP 400); earlier
// turns without tool calls drop it.
func TestDeepSeekThinkingPassback(t *testing.T) {
	a := mustAdapter(t, DeepSeek().Config)
	body, err := a.RequestBody(&llm.Request{Model: "deepseek/deepseek-v4-flash", System: "sys", Messages: thinkingHistory()})
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, messagesOf(t, body), thinkingToolTurns)

	// The literal "current tool loop only" rule is available as a policy.
	cfg := DeepSeek().Config
	cfg.ReasoningReplay = ReplayCurrentTurn
	body, _ = mustAdapter(t, cfg).RequestBody(&llm.Request{Model: "deepseek-v4-flash", System: "sys", Messages: thinkingHistory()})
	var msgs []map[string]any
	json.Unmarshal(messagesOf(t, body), &msgs)
	var withReasoning []string
	for _, m := range msgs {
		if r, ok := m["reasoning_content"]; ok {
			withReasoning = append(withReasoning, r.(string))
		}
	}
	if strings.Join(withReasoning, "|") != "R3a: read both.|R3b: now grep." {
		t.Errorf("current-turn policy sent reasoning %q", withReasoning)
	}

	// OpenAI never gets reasoning_content.
	body, _ = mustAdapter(t, OpenAI().Config).RequestBody(&llm.Request{Model: "gpt-5", Messages: thinkingHistory()})
	if bytes.Contains(body, []byte("reasoning_content")) {
		t.Errorf("openai preset sent reasoning_content")
	}
}

func TestReplayMaskEdges(t *testing.T) {
	// A tool-loop message of an earlier turn without reasoning still sends
	// reasoning_content: "" (DeepSeek checks the field's presence).
	msgs := []llm.Message{
		user("q1"),
		assistant(llm.ToolCall("c1", "f", "{}")),
		results(result("c1", "ok")),
		assistant(llm.Text("done")),
		user("q2"),
	}
	a := mustAdapter(t, DeepSeek().Config)
	body, _ := a.RequestBody(&llm.Request{Model: "m", Messages: msgs})
	jsonEqual(t, messagesOf(t, body), `[
	 {"role":"user","content":"q1"},
	 {"role":"assistant","content":null,"reasoning_content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
	 {"role":"tool","tool_call_id":"c1","content":"ok"},
	 {"role":"assistant","content":"done","reasoning_content":""},
	 {"role":"user","content":"q2"}]`)
	// No prompt at all: everything is the current turn.
	if m := ReplayMask([]llm.Message{assistant(llm.Text("x"))}, ReplayCurrentTurn); !m[0] {
		t.Errorf("mask without a prompt = %v", m)
	}
	if ReplayMask(msgs, ReplayNone) != nil {
		t.Errorf("none policy returned a mask")
	}
}

func TestRequestMapping(t *testing.T) {
	temp := 0.3
	strict := true
	req := &llm.Request{
		Model:  "openai/gpt-5",
		System: "Be brief.",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: []llm.Block{llm.Text("history system")}},
			{Role: llm.RoleUser, Content: []llm.Block{llm.Text("What is this? "), {Type: llm.BlockImage, URL: "data:image/png;base64,iVBOR"}}},
			assistant(llm.Text("A cat."), llm.ToolCall("c1", "zoom", "")),
			{Role: llm.RoleUser, Content: []llm.Block{result("c1", "zoomed"), llm.Text("and now?")}},
			assistant(llm.Reasoning("only reasoning, not replayed")),
			{Role: llm.RoleUser, Content: []llm.Block{{Type: "plugin-note", Raw: json.RawMessage(`{"type":"plugin-note"}`)}}},
		},
		Tools: []llm.ToolSchema{
			{Name: "zoom", Description: "Zoom in", Parameters: json.RawMessage(`{"type":"object","properties":{"f":{"type":"number"}}}`), Strict: &strict},
			{Name: "noop"},
		},
		ToolChoice:  "zoom",
		Temperature: &temp,
		MaxTokens:   500,
		Stop:        []string{"END"},
	}
	body, err := mustAdapter(t, OpenAI().Config).RequestBody(req)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, body, `{
	 "model":"gpt-5",
	 "messages":[
	  {"role":"system","content":"Be brief."},
	  {"role":"system","content":"history system"},
	  {"role":"user","content":[{"type":"text","text":"What is this? "},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR"}}]},
	  {"role":"assistant","content":"A cat.","tool_calls":[{"id":"c1","type":"function","function":{"name":"zoom","arguments":"{}"}}]},
	  {"role":"tool","tool_call_id":"c1","content":"zoomed"},
	  {"role":"user","content":"and now?"},
	  {"role":"user","content":""}
	 ],
	 "stream":true,
	 "stream_options":{"include_usage":true},
	 "tools":[
	  {"type":"function","function":{"name":"zoom","description":"Zoom in","parameters":{"type":"object","properties":{"f":{"type":"number"}}},"strict":true}},
	  {"type":"function","function":{"name":"noop","parameters":{"type":"object","properties":{}}}}
	 ],
	 "tool_choice":{"type":"function","function":{"name":"zoom"}},
	 "temperature":0.3,
	 "max_completion_tokens":500,
	 "stop":["END"]
	}`)

	// DeepSeek: max_tokens, thinking and effort, images replaced, plain
	// tool_choice strings; no tool_choice without tools.
	cfg := DeepSeek().Config
	cfg.Thinking, cfg.ReasoningEffort = "enabled", "max"
	for choice, want := range map[string]string{"auto": `"auto"`, "none": `"none"`, "required": `"required"`} {
		r := &llm.Request{Model: "deepseek/deepseek-v4-pro", MaxTokens: 9, ToolChoice: choice,
			Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockImage, URL: "https://x/y.png"}}}},
			Tools:    []llm.ToolSchema{{Name: "t", Parameters: json.RawMessage(`{"type":"object"}`)}}}
		body, err := mustAdapter(t, cfg).RequestBody(r)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		json.Unmarshal(body, &m)
		if string(m["tool_choice"]) != want || string(m["max_tokens"]) != "9" || string(m["thinking"]) != `{"type":"enabled"}` ||
			string(m["reasoning_effort"]) != `"max"` || string(m["model"]) != `"deepseek-v4-pro"` {
			t.Errorf("%s: body %s", choice, body)
		}
		if !bytes.Contains(m["messages"], []byte("image omitted")) {
			t.Errorf("image not replaced: %s", m["messages"])
		}
	}
	body, _ = mustAdapter(t, cfg).RequestBody(&llm.Request{Model: "m", ToolChoice: "required"})
	if bytes.Contains(body, []byte("tool_choice")) {
		t.Errorf("tool_choice sent without tools: %s", body)
	}
}

func TestStreamRejectsBeforeIO(t *testing.T) {
	cfg := DeepSeek().Config
	_, err := mustAdapter(t, cfg).Stream(context.Background(), &llm.Request{Model: "m"})
	if llm.CodeOf(err) != llm.CodeAuth || !strings.Contains(err.Error(), "DEEPSEEK_API_KEY") {
		t.Errorf("missing key: %v", err)
	}
	cfg.APIKey = "k"
	_, err = mustAdapter(t, cfg).Stream(context.Background(), &llm.Request{Model: "m", Prefill: []llm.Block{llm.Text("{")}})
	if llm.CodeOf(err) != llm.CodeBadRequest {
		t.Errorf("prefill: %v", err)
	}
	_, err = mustAdapter(t, cfg).Stream(context.Background(), &llm.Request{Model: "m", Tools: []llm.ToolSchema{{Name: "bad", Parameters: json.RawMessage(`{`)}}})
	if llm.CodeOf(err) != llm.CodeBadRequest || !strings.HasPrefix(err.Error(), "deepseek: ") {
		t.Errorf("bad schema: %v", err)
	}
	if _, err := New(Config{Provider: "x", BaseURL: "ftp://x"}); err == nil {
		t.Errorf("bad base URL accepted")
	}
}

// TestDeepSeekMultiStepToolTurn drives two steps of a thinking-mode tool
// loop against a loopback server: the assistant message assembled from
// step one's stream (reasoning + tool call) goes back in step two with its
// reasoning_content, exactly as the stream produced it.
func TestDeepSeekMultiStepToolTurn(t *testing.T) {
	tr := conformance.Transcripts("openai")
	step1, _ := fs.ReadFile(tr, "tool-split.sse")
	step2, _ := fs.ReadFile(tr, "reasoning-text.sse")
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		n := len(bodies)
		mu.Unlock()
		if r.URL.Path != "/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-ds" {
			http.Error(w, "bad request line", 400)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if n == 1 {
			w.Write(step1)
		} else {
			w.Write(step2)
		}
	}))
	defer srv.Close()
	p := DeepSeek()
	cfg := p.Resolve(func(k string) string {
		return map[string]string{"DEEPSEEK_API_KEY": "sk-ds", "DEEPSEEK_BASE_URL": srv.URL}[k]
	}, false)
	a := mustAdapter(t, cfg)

	history := []llm.Message{user("Save a note.")}
	tools := []llm.ToolSchema{{Name: "write_file", Parameters: json.RawMessage(`{"type":"object"}`)}}
	run := func() llm.Message {
		stream, err := a.Stream(context.Background(), &llm.Request{Model: "deepseek/deepseek-v4-flash", System: "sys", Messages: history, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		var asm llm.Assembler
		for c, err := range stream {
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := asm.Push(c); err != nil {
				t.Fatal(err)
			}
		}
		msg, err := asm.Message()
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	m1 := run()
	call := m1.Content[1]
	history = append(history, m1, results(llm.Block{Type: llm.BlockToolResult, ToolCallID: call.ID, Content: []llm.Block{llm.Text("saved")}}))
	m2 := run()
	if llm.TextOf(m2.Content) != "9.8 is larger than 9.11." {
		t.Errorf("step 2 reply = %+v", m2)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 {
		t.Fatalf("%d requests", len(bodies))
	}
	args, _ := json.Marshal(call.Arguments)
	jsonEqual(t, messagesOf(t, bodies[1]), `[
	 {"role":"system","content":"sys"},
	 {"role":"user","content":"Save a note."},
	 {"role":"assistant","content":null,"reasoning_content":"I need to write the file.",
	  "tool_calls":[{"id":"call_00_kP3xR9vT2mQ8wN5jL1hB7cF4","type":"function","function":{"name":"write_file","arguments":`+string(args)+`}}]},
	 {"role":"tool","tool_call_id":"call_00_kP3xR9vT2mQ8wN5jL1hB7cF4","content":"saved"}
	]`)
}
