package session

import (
	"encoding/json"
	"testing"

	"github.com/dshq/dsh/llm"
)

// The fast encoders write exactly what encoding/json writes.
func FuzzFastPayloads(f *testing.F) {
	f.Add("text", "call-1", `{"a":1}`, 3, true, "model")
	f.Add("\x00<&>\u2028", "", "", 0, false, "")
	f.Fuzz(func(t *testing.T, s, id, args string, n int, flag bool, model string) {
		orig := args + "!"
		vals := []any{
			StepBoundary{Turn: n, Step: n + 1},
			AssistantMessage{Turn: n, Step: 1, Content: []llm.Block{llm.Text(s), llm.Reasoning(s), llm.ToolCall(llm.CallID(id), s, args)}, Usage: &llm.Usage{InputTokens: n, CacheReadTokens: n % 5}, Model: model},
			AssistantMessage{Turn: n, Step: 1},
			AssistantMessage{Turn: n, Step: 1, Content: []llm.Block{llm.Text(s)}, Model: model, Interrupted: flag},
			ToolCall{Turn: n, Step: 2, CallID: llm.CallID(id), Name: s, Arguments: args, OriginalArguments: &orig, RewrittenBy: model},
			ToolCall{Turn: n, Step: 2, CallID: llm.CallID(id), Name: s, Arguments: args},
			ToolResult{Turn: n, Step: 2, CallID: llm.CallID(id), Content: []llm.Block{llm.Text(s)}, IsError: flag, Error: &ErrorInfo{Name: s, Code: id}},
			ToolResult{Turn: n, Step: 2, CallID: llm.CallID(id), Content: []llm.Block{}},
			ToolResult{Turn: n, Step: 2, CallID: llm.CallID(id), Content: []llm.Block{llm.Text(s)}, Meta: json.RawMessage(`{"x":1}`)},
		}
		for _, v := range vals {
			fast := v.(llm.JSONAppender).AppendJSON(nil)
			var slow []byte
			var err error
			switch x := v.(type) {
			case StepBoundary:
				type p StepBoundary
				slow, err = json.Marshal(p(x))
			case AssistantMessage:
				type p AssistantMessage
				slow, err = json.Marshal(p(x))
			case ToolCall:
				type p ToolCall
				slow, err = json.Marshal(p(x))
			case ToolResult:
				type p ToolResult
				slow, err = json.Marshal(p(x))
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(fast) != string(slow) {
				t.Fatalf("%T\nfast %s\nslow %s", v, fast, slow)
			}
		}
	})
}
