package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/conformance"
)

func mustAdapter(t *testing.T, cfg Config) *Adapter {
	t.Helper()
	if cfg.Provider == "" {
		cfg.Provider = "anthropic"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

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

func TestRequestMapping(t *testing.T) {
	temp := 0.2
	req := &llm.Request{
		Model:  "anthropic/claude-sonnet-4-5",
		System: "Be brief.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{llm.Text("Look:"), {Type: llm.BlockImage, URL: "data:image/png;base64,iVBOR"}}},
			{Role: llm.RoleUser, Content: []llm.Block{llm.Text("and this"), {Type: llm.BlockImage, URL: "https://example.org/cat.jpg"}}},
			{Role: llm.RoleAssistant, Content: []llm.Block{
				{Type: llm.BlockReasoning, Text: "signed thought", Signature: "sig-1"},
				{Type: llm.BlockReasoning, Redacted: "opaque"},
				llm.Reasoning("unsigned thought from another model"),
				llm.Text("Two cats."),
				llm.ToolCall("toolu_1", "zoom", `{"factor": 2}`),
				llm.ToolCall("toolu_2", "look", `not json`),
			}},
			{Role: llm.RoleSystem, Content: []llm.Block{llm.Text("history note")}},
			{Role: llm.RoleUser, Content: []llm.Block{
				{Type: llm.BlockToolResult, ToolCallID: "toolu_1", Content: []llm.Block{llm.Text("zoomed"), {Type: llm.BlockImage, URL: "data:image/jpeg;base64,/9j/"}}},
			}},
			{Role: llm.RoleUser, Content: []llm.Block{
				llm.Text("also:"),
				{Type: llm.BlockToolResult, ToolCallID: "toolu_2", IsError: true, Content: []llm.Block{llm.Text("boom")}},
				{Type: llm.BlockToolResult, ToolCallID: "toolu_3"},
			}},
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.Reasoning("dropped, message becomes empty")}},
		},
		Tools:       []llm.ToolSchema{{Name: "zoom", Description: "Zoom", Parameters: json.RawMessage(`{"type":"object"}`)}},
		ToolChoice:  "required",
		Temperature: &temp,
		Stop:        []string{"\n\nHuman:"},
	}
	body, err := mustAdapter(t, Anthropic().Config).RequestBody(req)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, body, `{
	 "model":"claude-sonnet-4-5",
	 "max_tokens":32000,
	 "system":[{"type":"text","text":"Be brief."},{"type":"text","text":"history note","cache_control":{"type":"ephemeral"}}],
	 "messages":[
	  {"role":"user","content":[
	    {"type":"text","text":"Look:"},
	    {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}},
	    {"type":"text","text":"and this"},
	    {"type":"image","source":{"type":"url","url":"https://example.org/cat.jpg"}}]},
	  {"role":"assistant","content":[
	    {"type":"thinking","thinking":"signed thought","signature":"sig-1"},
	    {"type":"redacted_thinking","data":"opaque"},
	    {"type":"text","text":"Two cats."},
	    {"type":"tool_use","id":"toolu_1","name":"zoom","input":{"factor":2}},
	    {"type":"tool_use","id":"toolu_2","name":"look","input":{}}]},
	  {"role":"user","content":[
	    {"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"zoomed"},{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/"}}]},
	    {"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"boom"}],"is_error":true},
	    {"type":"tool_result","tool_use_id":"toolu_3"},
	    {"type":"text","text":"also:","cache_control":{"type":"ephemeral"}}]}
	 ],
	 "tools":[{"name":"zoom","description":"Zoom","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],
	 "tool_choice":{"type":"any"},
	 "temperature":0.2,
	 "stop_sequences":["\n\nHuman:"],
	 "stream":true
	}`)
}

func TestRequestOptions(t *testing.T) {
	base := Anthropic().Config
	decode := func(cfg Config, req *llm.Request) map[string]json.RawMessage {
		t.Helper()
		body, err := mustAdapter(t, cfg).RequestBody(req)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		json.Unmarshal(body, &m)
		return m
	}
	temp := 0.5
	user := []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.Text("hi")}}}

	// Thinking: budget sent, temperature dropped, max_tokens above budget.
	cfg := base
	cfg.ThinkingBudget = 10000
	m := decode(cfg, &llm.Request{Model: "claude-opus-4-1", Messages: user, Temperature: &temp, MaxTokens: 4000})
	if string(m["thinking"]) != `{"type":"enabled","budget_tokens":10000}` || m["temperature"] != nil || string(m["max_tokens"]) != "18192" {
		t.Errorf("thinking: %s %s %s", m["thinking"], m["temperature"], m["max_tokens"])
	}
	// Model limits feed max_tokens; unknown models get the default.
	if m := decode(base, &llm.Request{Model: "claude-opus-4-1", Messages: user}); string(m["max_tokens"]) != "32000" {
		t.Errorf("known model max_tokens %s", m["max_tokens"])
	}
	if m := decode(base, &llm.Request{Model: "claude-next", Messages: user}); string(m["max_tokens"]) != "8192" {
		t.Errorf("unknown model max_tokens %s", m["max_tokens"])
	}
	// Tool choice variants.
	tools := []llm.ToolSchema{{Name: "t"}}
	for choice, want := range map[string]string{"auto": `{"type":"auto"}`, "none": `{"type":"none"}`, "t": `{"type":"tool","name":"t"}`} {
		if m := decode(base, &llm.Request{Model: "m", Messages: user, Tools: tools, ToolChoice: choice}); string(m["tool_choice"]) != want {
			t.Errorf("%s: %s", choice, m["tool_choice"])
		}
	}
	// Prefill becomes a final assistant message without trailing spaces.
	m = decode(base, &llm.Request{Model: "m", Messages: user, Prefill: []llm.Block{llm.Text("{\"a\": ")}})
	if !bytes.Contains(m["messages"], []byte(`{"role":"assistant","content":[{"type":"text","text":"{\"a\":"`)) {
		t.Errorf("prefill: %s", m["messages"])
	}
	// Explicit cache hints win over automatic breakpoints, at most four.
	var blocks []llm.Block
	for i := 0; i < 6; i++ {
		blocks = append(blocks, llm.Block{Type: llm.BlockText, Text: "x", Cache: llm.CacheEphemeral})
	}
	m = decode(base, &llm.Request{Model: "m", System: "s", Messages: []llm.Message{{Role: llm.RoleUser, Content: blocks}}})
	if n := bytes.Count(m["messages"], []byte("cache_control")); n != 4 || bytes.Contains(m["system"], []byte("cache_control")) {
		t.Errorf("explicit hints: %d in messages, system %s", n, m["system"])
	}
	cfg = base
	cfg.NoAutoCache = true
	if m := decode(cfg, &llm.Request{Model: "m", System: "s", Messages: user}); bytes.Contains(m["system"], []byte("cache")) || bytes.Contains(m["messages"], []byte("cache")) {
		t.Errorf("NoAutoCache still marks breakpoints")
	}
	if _, err := mustAdapter(t, base).RequestBody(&llm.Request{Model: "m", Tools: []llm.ToolSchema{{Name: "bad", Parameters: json.RawMessage("{")}}}); llm.CodeOf(err) != llm.CodeBadRequest {
		t.Errorf("bad schema: %v", err)
	}
	if _, err := mustAdapter(t, base).Stream(context.Background(), &llm.Request{Model: "m"}); llm.CodeOf(err) != llm.CodeAuth || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("missing key: %v", err)
	}
}

// TestThinkingRoundTrip streams a thinking turn with a tool call from a
// loopback server and checks the next request sends the thinking block back
// with its signature, before the tool_use, as the API requires.
func TestThinkingRoundTrip(t *testing.T) {
	step1, _ := fs.ReadFile(conformance.Transcripts("anthropic"), "tool-split.sse")
	step2, _ := fs.ReadFile(conformance.Transcripts("anthropic"), "text.sse")
	var bodies [][]byte
	var hdr http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, b)
		hdr = r.Header.Clone()
		w.Header().Set("Content-Type", "text/event-stream")
		if len(bodies) == 1 {
			w.Write(step1)
		} else {
			w.Write(step2)
		}
	}))
	defer srv.Close()
	cfg := Anthropic().Resolve(func(k string) string {
		return map[string]string{"ANTHROPIC_API_KEY": "sk-ant", "ANTHROPIC_BASE_URL": srv.URL}[k]
	}, false)
	cfg.Headers = map[string]string{"anthropic-beta": "interleaved-thinking-2025-05-14"}
	a := mustAdapter(t, cfg)
	history := []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.Text("Save a note.")}}}
	run := func() llm.Message {
		stream, err := a.Stream(context.Background(), &llm.Request{Model: "anthropic/claude-sonnet-4-5", Messages: history})
		if err != nil {
			t.Fatal(err)
		}
		var asm llm.Assembler
		for c, err := range stream {
			if err != nil {
				t.Fatal(err)
			}
			asm.Push(c)
		}
		msg, _ := asm.Message()
		return msg
	}
	m1 := run()
	history = append(history, m1, llm.Message{Role: llm.RoleUser, Content: []llm.Block{
		{Type: llm.BlockToolResult, ToolCallID: m1.Content[1].ID, Content: []llm.Block{llm.Text("saved")}}}})
	run()
	if hdr.Get("X-Api-Key") != "sk-ant" || hdr.Get("Anthropic-Version") != DefaultVersion || hdr.Get("Anthropic-Beta") == "" {
		t.Errorf("headers: %v", hdr)
	}
	var req struct {
		Messages json.RawMessage `json:"messages"`
	}
	json.Unmarshal(bodies[1], &req)
	jsonEqual(t, req.Messages, `[
	 {"role":"user","content":[{"type":"text","text":"Save a note."}]},
	 {"role":"assistant","content":[
	   {"type":"thinking","thinking":"I need to write the file.","signature":"`+m1.Content[0].Signature+`"},
	   {"type":"tool_use","id":"toolu_01Fz8Kq2Wn5Xr3Tv9Mb6Hc1J","name":"write_file","input":{"path":"notes/café.md","content":"line 1\nline \"2\"\tend ✓"}}]},
	 {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01Fz8Kq2Wn5Xr3Tv9Mb6Hc1J","content":[{"type":"text","text":"saved"}],"cache_control":{"type":"ephemeral"}}]}
	]`)
	if m1.Content[0].Signature == "" {
		t.Errorf("no signature assembled")
	}
}

// TestBlankTextDropped: the Messages API rejects text blocks that are empty
// or only whitespace, so a stored assistant answer of "\n\n" must not make
// every later request fail. Blank text is dropped everywhere, a message left
// empty disappears (its neighbours merge) and a tool result whose text is
// all blank says "(no output)".
func TestBlankTextDropped(t *testing.T) {
	req := &llm.Request{
		Model:  "anthropic/claude-sonnet-4-5",
		System: " \n",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: []llm.Block{llm.Text("\t")}},
			{Role: llm.RoleUser, Content: []llm.Block{llm.Text("Hi")}},
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("\n\n")}},
			{Role: llm.RoleUser, Content: []llm.Block{llm.Text("  "), {Type: llm.BlockImage, URL: "data:image/png;base64,iVBOR"}}},
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text(" \t"), llm.ToolCall("toolu_1", "read", `{"path":"a"}`), llm.Text("\n")}},
			{Role: llm.RoleUser, Content: []llm.Block{
				llm.Text("  "),
				{Type: llm.BlockToolResult, ToolCallID: "toolu_1", Content: []llm.Block{llm.Text("\n")}},
			}},
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("\u00a0\u2003")}},
			{Role: llm.RoleUser, Content: []llm.Block{llm.Text("Go on."), llm.Text("\r\n")}},
		},
	}
	body, err := mustAdapter(t, Anthropic().Config).RequestBody(req)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, body, `{
	 "model":"claude-sonnet-4-5",
	 "max_tokens":32000,
	 "messages":[
	  {"role":"user","content":[
	    {"type":"text","text":"Hi"},
	    {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}}]},
	  {"role":"assistant","content":[
	    {"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"a"}}]},
	  {"role":"user","content":[
	    {"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"(no output)"}]},
	    {"type":"text","text":"Go on.","cache_control":{"type":"ephemeral"}}]}
	 ],
	 "stream":true
	}`)
	// Prefill: a blank block is dropped too.
	req = &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.Text("hi")}}},
		Prefill: []llm.Block{llm.Text(" "), llm.Text("{")}}
	body, err = mustAdapter(t, Anthropic().Config).RequestBody(req)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(body, []byte(`{"role":"assistant","content":[{"type":"text","text":"{"`)) {
		t.Errorf("prefill: %s", body)
	}
}

// TestBaseURLWithQuery: an API root with a query string gets /v1/messages
// joined to its path, the query kept.
func TestBaseURLWithQuery(t *testing.T) {
	text, _ := fs.ReadFile(conformance.Transcripts("anthropic"), "text.sse")
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.URL.Path + " ? " + r.URL.RawQuery:
		default:
			t.Errorf("more than one request per call")
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(text)
	}))
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	for base, want := range map[string]string{
		"/gateway/anthropic?api-version=2024-10-21": "/gateway/anthropic/v1/messages ? api-version=2024-10-21",
		"/?key=a%2Fb": "/v1/messages ? key=a%2Fb",
		"/gateway/":   "/gateway/v1/messages ? ",
	} {
		a := mustAdapter(t, Config{Provider: "anthropic", BaseURL: srv.URL + base, APIKey: "k", HTTPClient: &http.Client{Transport: tr}})
		res := conformance.Collect(context.Background(), a, &llm.Request{Model: "anthropic/claude-sonnet-4-5",
			Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.Text("hi")}}}})
		if res.Err != nil {
			t.Fatalf("%s: %v", base, res.Err)
		}
		if g := <-got; g != want {
			t.Errorf("base %q: request %q, want %q", base, g, want)
		}
	}
	if _, err := New(Config{Provider: "anthropic", BaseURL: srv.URL + "#x"}); err == nil || !strings.Contains(err.Error(), "fragment") {
		t.Errorf("fragment: %v", err)
	}
}
