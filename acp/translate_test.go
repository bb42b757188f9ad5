package acp

import (
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
	"github.com/dshq/dsh/tools/bashtool"
	"github.com/dshq/dsh/tools/fstool"
	"github.com/dshq/dsh/tools/todo"
)

type toolMap map[string]tool.Tool

func (m toolMap) Get(name string) (tool.Tool, bool) {
	t, ok := m[name]
	return t, ok
}

// tools are the real tools (for their presenters); they never run here.
func tools(t *testing.T) toolMap {
	m := toolMap{}
	var exec bash.Executor // presenters never touch the executor
	for _, tl := range append(append(bashtool.Tools(exec, bashtool.Options{}), fstool.Tools(nil, nil, fstool.Options{})...), todo.New()) {
		m[tl.Info().Name] = tl
	}
	return m
}

// log builds events with consecutive seqs.
type log struct{ events []session.Event }

func (l *log) add(typ string, data any) session.Event {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	e := session.Event{Type: typ, Seq: int64(len(l.events)), Data: b}
	l.events = append(l.events, e)
	return e
}

func wire(t *testing.T, us []sdk.SessionUpdate) []string {
	t.Helper()
	var out []string
	for _, u := range us {
		b, err := json.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

func TestTranslateTextReasoningAndUsage(t *testing.T) {
	tr := newTranslator("/w", tools(t), func(string) int { return 1000 })
	var l log
	var got []string
	for _, e := range []session.Event{
		l.add(session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1, Chunk: llm.ReasoningChunk(0, "hmm")}),
		l.add(session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1, Chunk: llm.TextChunk(1, "Hi")}),
		l.add(session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1, Chunk: llm.EndChunk(1, llm.Text("Hi"))}),
		l.add(session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1, Content: []llm.Block{llm.Reasoning("hmm"), llm.Text("Hi")},
			Usage: &llm.Usage{InputTokens: 10, CacheReadTokens: 5, OutputTokens: 3}, Model: "m"}),
		// A message recorded without its stream is shown whole.
		l.add(session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 2, Content: []llm.Block{llm.Text("whole")}}),
	} {
		got = append(got, wire(t, tr.translate(e))...)
	}
	want := []string{
		`{"content":{"text":"hmm","type":"text"},"sessionUpdate":"agent_thought_chunk"}`,
		`{"content":{"text":"Hi","type":"text"},"sessionUpdate":"agent_message_chunk"}`,
		`{"sessionUpdate":"usage_update","size":1000,"used":18}`,
		`{"content":{"text":"whole","type":"text"},"sessionUpdate":"agent_message_chunk"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTranslateToolCards(t *testing.T) {
	tr := newTranslator("/w", tools(t), nil)
	var l log
	call := func(id, name string, args any) []sdk.SessionUpdate {
		a, _ := json.Marshal(args)
		return tr.translate(l.add(session.TypeToolCall, session.ToolCall{Turn: 1, Step: 1, CallID: llm.CallID(id), Name: name, Arguments: string(a)}))
	}
	result := func(id string, text string, isErr bool, meta any) []sdk.SessionUpdate {
		var m json.RawMessage
		if meta != nil {
			m, _ = json.Marshal(meta)
		}
		return tr.translate(l.add(session.TypeToolResult, session.ToolResult{Turn: 1, Step: 1, CallID: llm.CallID(id), Content: []llm.Block{llm.Text(text)}, IsError: isErr, Meta: m}))
	}
	// read: title relativised, location absolute.
	u := call("r", "read", map[string]any{"file_path": "/w/src/a.go", "offset": 3, "limit": 2})
	if got := wire(t, u)[0]; got != `{"kind":"read","locations":[{"line":3,"path":"/w/src/a.go"}],"rawInput":{"file_path":"/w/src/a.go","limit":2,"offset":3},"sessionUpdate":"tool_call","status":"pending","title":"Read src/a.go (3 - 4)","toolCallId":"r"}` {
		t.Fatalf("read card %s", got)
	}
	if got := wire(t, result("r", "3\tx", false, nil))[0]; got != `{"content":[{"content":{"text":"3\tx","type":"text"},"type":"content"}],"sessionUpdate":"tool_call_update","status":"completed","toolCallId":"r"}` {
		t.Fatalf("read result %s", got)
	}
	// write: a diff from the call; outside the cwd the title stays absolute.
	u = call("w", "write", map[string]any{"file_path": "/elsewhere/b.txt", "content": "new"})
	if got := wire(t, u)[0]; !strings.Contains(got, `"title":"Write /elsewhere/b.txt"`) || !strings.Contains(got, `{"newText":"new","path":"/elsewhere/b.txt","type":"diff"}`) {
		t.Fatalf("write card %s", got)
	}
	// bash: description as text, result as a console block with failures.
	u = call("b", "bash", map[string]any{"command": "make test", "description": "run the tests"})
	if got := wire(t, u)[0]; !strings.Contains(got, `"kind":"execute"`) || !strings.Contains(got, `"title":"make test"`) || !strings.Contains(got, `"text":"run the tests"`) {
		t.Fatalf("bash card %s", got)
	}
	if got := wire(t, result("b", "FAIL\n[exit code: 2]", false, map[string]any{"exitCode": 2}))[0]; !strings.Contains(got, "```console\\nFAIL\\n[exit code: 2]\\n```") {
		t.Fatalf("bash result %s", got)
	}
	// An in-progress mark is sent once; a call without a result is closed
	// as failed when its turn ends.
	call("x", "bash", map[string]any{"command": "sleep 100", "description": "wait"})
	if _, ok := tr.start("x"); !ok {
		t.Fatal("no in_progress")
	}
	if _, ok := tr.start("x"); ok {
		t.Fatal("in_progress twice")
	}
	end := wire(t, tr.translate(l.add(session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndAborted}})))
	if len(end) != 2 || !strings.Contains(end[1], `"toolCallId":"x"`) || !strings.Contains(end[1], `"status":"failed"`) || strings.Contains(end[0], `"toolCallId":"b"`) {
		// w has no result either, so it is closed too (first).
		t.Fatalf("turn end %q", end)
	}
	// Unknown tools: the generic card with the name as title.
	u = call("m", "mcp__thing", map[string]any{"q": 1})
	if got := wire(t, u)[0]; got != `{"kind":"other","rawInput":{"q":1},"sessionUpdate":"tool_call","status":"pending","title":"mcp__thing","toolCallId":"m"}` {
		t.Fatalf("generic card %s", got)
	}
}

func TestTranslatePlanAndReplay(t *testing.T) {
	tr := newTranslator("/w", tools(t), nil)
	tr.replay = true
	var l log
	got := wire(t, tr.translate(l.add(session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text("do it"), {Type: llm.BlockImage, URL: "data:image/png;base64,AAAA"}}})))
	want := []string{
		`{"content":{"text":"do it","type":"text"},"sessionUpdate":"user_message_chunk"}`,
		`{"content":{"data":"AAAA","mimeType":"image/png","type":"image"},"sessionUpdate":"user_message_chunk"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("replayed prompt %q", got)
	}
	// Plugin-sourced prompts are not the user's words.
	if us := tr.translate(l.add(session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text("x")}, Source: llm.PluginSource("p")})); len(us) != 0 {
		t.Fatalf("plugin prompt replayed: %v", us)
	}
	plan := wire(t, tr.translate(l.add(TypeTodoWrite, map[string]any{"todos": []map[string]string{
		{"content": "a", "status": "completed"}, {"content": "b", "status": "in_progress"}, {"content": "c", "status": "weird"},
	}})))
	if plan[0] != `{"entries":[{"content":"a","priority":"medium","status":"completed"},{"content":"b","priority":"medium","status":"in_progress"},{"content":"c","priority":"medium","status":"pending"}],"sessionUpdate":"plan"}` {
		t.Fatalf("plan %s", plan[0])
	}
	// Live streams never echo the user.
	live := newTranslator("/w", nil, nil)
	if us := live.translate(l.add(session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text("x")}})); len(us) != 0 {
		t.Fatalf("live echo %v", us)
	}
}

func TestTranslateZedTerminal(t *testing.T) {
	tr := newTranslator("/w", tools(t), nil)
	tr.zedTerminal = true
	var l log
	a, _ := json.Marshal(map[string]any{"command": "ls", "description": "list"})
	card := wire(t, tr.translate(l.add(session.TypeToolCall, session.ToolCall{CallID: "t", Name: "bash", Arguments: string(a)})))[0]
	if !strings.Contains(card, `{"terminalId":"t","type":"terminal"}`) || !strings.Contains(card, `"terminal_info":{"cwd":"/w","terminal_id":"t"}`) {
		t.Fatalf("card %s", card)
	}
	res := wire(t, tr.translate(l.add(session.TypeToolResult, session.ToolResult{CallID: "t", Content: []llm.Block{llm.Text("a\nb\n")}})))[0]
	if !strings.Contains(res, `"terminal_output":{"data":"a\nb\n","terminal_id":"t"}`) || !strings.Contains(res, `"terminal_exit":{"exit_code":0`) || strings.Contains(res, `"content"`) {
		t.Fatalf("result %s", res)
	}
}

func TestRelativize(t *testing.T) {
	tr := &translator{cwd: "/w"}
	for _, c := range []struct{ title, path, want string }{
		{"Edit /w/a/b.go", "/w/a/b.go", "Edit a/b.go"},
		{"Edit /w", "/w", "Edit /w"},
		{"Edit /x/a.go", "/x/a.go", "Edit /x/a.go"},
		{"Edit /w/..cache/x", "/w/..cache/x", "Edit ..cache/x"},
		{"Read /w/z.txt (from line 3)", "", "Read z.txt (from line 3)"},
		{"Edit rel.go", "rel.go", "Edit rel.go"},
	} {
		if got := tr.relativize(c.title, c.path); got != c.want {
			t.Errorf("relativize(%q, %q) = %q, want %q", c.title, c.path, got, c.want)
		}
	}
}

func TestToBlocks(t *testing.T) {
	mime := "text/x-go"
	bs, err := toBlocks([]sdk.ContentBlock{
		sdk.TextBlock("look at "),
		sdk.ResourceLinkBlock("main.go", "file:///w/main.go"),
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{Uri: "file:///w/x.go", Text: "package x", MimeType: &mime}}),
		sdk.ImageBlock("AAAA", "image/png"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 4 || !strings.Contains(bs[1].Text, `[resource_link name="main.go" uri="file:///w/main.go"]`) ||
		!strings.Contains(bs[2].Text, "package x") || bs[3].URL != "data:image/png;base64,AAAA" {
		t.Fatalf("blocks %+v", bs)
	}
	if _, err := toBlocks([]sdk.ContentBlock{sdk.TextBlock(" \n")}); err == nil {
		t.Fatal("blank prompt accepted")
	}
}

// BenchmarkChunkFrame is the ACP layer's own share of a streamed chunk:
// decoding the assistant/chunk event, translating it and encoding the
// session/update frame as the JSON-RPC library does.
func BenchmarkChunkFrame(b *testing.B) {
	tr := newTranslator("/w", nil, nil)
	var l log
	e := l.add(session.TypeAssistantChunk, session.AssistantChunk{Turn: 3, Step: 2, Chunk: llm.TextChunk(1, "some streamed text, ")})
	b.ReportAllocs()
	for b.Loop() {
		for _, u := range tr.translate(e) {
			params, err := json.Marshal(sdk.SessionNotification{SessionId: "0b9f2a52-8a43-4c1e-9d7e-4f4b6a1f2c3d", Update: u})
			if err != nil {
				b.Fatal(err)
			}
			frame, _ := json.Marshal(struct {
				JSONRPC string          `json:"jsonrpc"`
				Method  string          `json:"method"`
				Params  json.RawMessage `json:"params"`
			}{"2.0", "session/update", params})
			_ = frame
		}
	}
}
