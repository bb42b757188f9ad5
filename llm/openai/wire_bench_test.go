package openai

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dshq/dsh/internal/wiretest"
	"github.com/dshq/dsh/llm"
)

// BenchmarkRequestBody: "whole" marshals the whole request (the encoder
// before the wire cache), "cached" is RequestBody (see wiretest.Bench);
// the DeepSeek preset, whose reasoning replay makes encodings positional.
func BenchmarkRequestBody(b *testing.B) {
	wiretest.Bench(b, "deepseek/deepseek-chat", func() map[string]wiretest.Encoder {
		a, err := New(DeepSeek().Config)
		if err != nil {
			b.Fatal(err)
		}
		return map[string]wiretest.Encoder{"whole": a.wholeBody, "cached": a.RequestBody}
	})
}

// BenchmarkRequestBodyTools is the next step's body of a short session
// (10 tool steps) that offers an agent's tool list: 16 tools, each with a
// paragraph of description and a parameter schema as tools write them
// (indented). Every step sends the same list; its encoding is kept
// between steps (tailCache).
func BenchmarkRequestBodyTools(b *testing.B) {
	a, err := New(DeepSeek().Config)
	if err != nil {
		b.Fatal(err)
	}
	var tools []llm.ToolSchema
	for i := range 16 {
		tools = append(tools, llm.ToolSchema{
			Name:        fmt.Sprintf("tool_%d", i),
			Description: strings.Repeat("Reads a file from the workspace, with line numbers; use \"offset\" and <limit> for long files. ", 6),
			Parameters: []byte(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "the file, relative to the workspace"},
    "offset": {"type": "integer", "description": "the first line to read (1-based)"},
    "limit": {"type": "integer", "description": "how many lines to read"},
    "pattern": {"type": "string", "description": "a regular expression the lines must match"}
  },
  "required": ["path"],
  "additionalProperties": false
}`)})
	}
	base := wiretest.Steps(10, 1024)
	req := &llm.Request{Model: "deepseek/deepseek-chat", System: "You are a coding agent.", SessionID: "s", Messages: base, Tools: tools}
	if _, err := a.RequestBody(req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		base = append(append([]llm.Message{base[0]}, base[3:]...), wiretest.Step(10+i, 1024)...)
		req.Messages = base
		b.StartTimer()
		if _, err := a.RequestBody(req); err != nil {
			b.Fatal(err)
		}
	}
}
