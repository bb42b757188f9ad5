package claudemsg

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

func event(t *testing.T, seq int64, typ string, data any) session.Event {
	t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return session.Event{Type: typ, Seq: seq, Data: b}
}

func TestConverterShapes(t *testing.T) {
	c := Converter{Session: "s1", Model: "deepseek/deepseek-chat"}
	events := []session.Event{
		event(t, 1, session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text("hi")}}),
		event(t, 2, session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1, Content: []llm.Block{
			{Type: llm.BlockReasoning, Text: "think", Signature: "sig"},
			llm.Text("Let me look."),
			llm.ToolCall("call_1", "bash", `{"command":"ls","timeoutMs":5000}`),
		}, Usage: &llm.Usage{InputTokens: 10, OutputTokens: 3, CacheReadTokens: 64}}),
		event(t, 3, session.TypeToolResult, session.ToolResult{CallID: "call_1", Content: []llm.Block{llm.Text("a\nb\n")}}),
		event(t, 4, session.TypeToolResult, session.ToolResult{CallID: "call_2", IsError: true, Content: []llm.Block{llm.Text("x"), {Type: llm.BlockImage, URL: "data:image/png;base64,iVBOR"}}}),
		event(t, 5, session.TypeStepEnd, session.StepBoundary{Turn: 1, Step: 1}),
	}
	var got []string
	for _, e := range c.Events(events) {
		var m any = e.User
		if e.Kind == KindAssistant {
			m = e.Assistant
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Kind+" "+string(b))
	}
	id := StepMessageID("s1", 1, 1)
	usage := `"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":64,"output_tokens":3}`
	want := []string{
		`user {"role":"user","content":[{"type":"text","text":"hi"}]}`,
		`assistant {"id":"` + id + `","type":"message","role":"assistant","model":"deepseek/deepseek-chat","content":[{"type":"thinking","thinking":"think","signature":"sig"}],"stop_reason":null,"stop_sequence":null,` + usage + `}`,
		`assistant {"id":"` + id + `","type":"message","role":"assistant","model":"deepseek/deepseek-chat","content":[{"type":"text","text":"Let me look."}],"stop_reason":null,"stop_sequence":null,` + usage + `}`,
		`assistant {"id":"` + id + `","type":"message","role":"assistant","model":"deepseek/deepseek-chat","content":[{"type":"tool_use","id":"call_1","name":"Bash","input":{"command":"ls","timeout":5000}}],"stop_reason":null,"stop_sequence":null,` + usage + `}`,
		`user {"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"a\nb\n","is_error":false}]}`,
		`user {"role":"user","content":[{"type":"tool_result","tool_use_id":"call_2","content":[{"type":"text","text":"x"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}}],"is_error":true}]}`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("entries (-want +got):\n%s", d)
	}
	entries := c.Events(events)
	if !entries[0].Prompt || entries[4].Prompt {
		t.Fatalf("prompt marks wrong: %+v", entries)
	}
	if entries[1].UUID == entries[2].UUID || len(entries[1].UUID) != 36 {
		t.Fatalf("uuids not distinct per block: %s %s", entries[1].UUID, entries[2].UUID)
	}
	if again := c.Events(events); again[2].UUID != entries[2].UUID {
		t.Fatal("uuids are not stable")
	}
}

func TestRoundTrip(t *testing.T) {
	in := []llm.Block{
		llm.Text("t"),
		llm.ToolCall("c1", "bash_output", `{"task_id":"b1"}`),
		{Type: llm.BlockToolResult, ToolCallID: "c1", Content: []llm.Block{llm.Text("ok")}},
		{Type: llm.BlockImage, URL: "https://example.org/x.png"},
	}
	b, err := json.Marshal(Blocks(in))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"name":"BashOutput","input":{"bash_id":"b1"}`) {
		t.Fatalf("claude names not used: %s", b)
	}
	var back []Block
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, ToLLM(back)); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}
}

func TestInputKeepsMalformedArguments(t *testing.T) {
	if got := string(Input(`{"a":`)); got != `{"_raw":"{\"a\":"}` {
		t.Fatalf("Input = %s", got)
	}
	if got := string(Input("")); got != `{}` {
		t.Fatalf("Input empty = %s", got)
	}
}

func TestNames(t *testing.T) {
	for dsh, cc := range map[string]string{"bash": "Bash", "task": "Agent", "mcp__x__y": "mcp__x__y", "read": "Read"} {
		if ToolName(dsh) != cc || DshToolName(cc) != dsh {
			t.Errorf("%s <-> %s: got %s, %s", dsh, cc, ToolName(dsh), DshToolName(cc))
		}
	}
	// Claude Code's older names still reach dsh's tools.
	if DshToolName("Task") != "task" || ToolName("fork") != "Agent" || DshToolName("TaskStop") != "bash_kill" {
		t.Errorf("aliases: Task->%s fork->%s TaskStop->%s", DshToolName("Task"), ToolName("fork"), DshToolName("TaskStop"))
	}
	if a := Aliases("Agent"); len(a) != 1 || a[0] != "Task" {
		t.Errorf("Agent aliases %v", a)
	}
}

// Hooks see absolute paths, resolved as the file tools resolve them.
func TestAbsoluteInput(t *testing.T) {
	in := ToolInputAt("edit", json.RawMessage(`{"file_path":"sub/../x.go","old_string":"a","new_string":"b"}`), "/work/p")
	var m map[string]any
	json.Unmarshal(in, &m)
	if m["file_path"] != "/work/p/x.go" || m["old_string"] != "a" {
		t.Errorf("edit input %s", in)
	}
	in = ToolInputAt("bash", json.RawMessage(`{"command":"ls","timeoutMs":5000}`), "/w")
	if string(in) != `{"command":"ls","timeout":5000}` {
		t.Errorf("bash input %s", in)
	}
	if in := ToolInputAt("read", json.RawMessage(`{"file_path":"/etc/../etc/hosts"}`), "/w"); string(in) != `{"file_path":"/etc/hosts"}` {
		t.Errorf("absolute path %s", in)
	}
}
