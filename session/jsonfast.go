package session

import (
	"encoding/json"
	"strconv"

	"github.com/dshq/dsh/llm"
)

// The per-step payloads encode themselves without reflection: a step
// appends a step/start, an assistant message, tool calls and results and a
// step/end, and encoding/json's reflection was the largest cost of a step.
// Each AppendJSON writes exactly what encoding/json would (fuzzed in
// session_fast_test.go).

func appendInt(dst []byte, k string, v int) []byte {
	dst = append(dst, k...)
	return strconv.AppendInt(dst, int64(v), 10)
}

// AppendJSON implements llm.JSONAppender.
func (b StepBoundary) AppendJSON(dst []byte) []byte {
	dst = appendInt(dst, `{"turn":`, b.Turn)
	dst = appendInt(dst, `,"step":`, b.Step)
	return append(dst, '}')
}

// fastBlocks reports whether every block encodes without reflection.
func fastBlocks(bs []llm.Block) bool {
	for _, b := range bs {
		switch b.Type {
		case llm.BlockText, llm.BlockReasoning, llm.BlockToolCall:
		default:
			return false
		}
	}
	return true
}

func appendBlocks(dst []byte, bs []llm.Block) []byte {
	if bs == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, b := range bs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = b.AppendJSON(dst)
	}
	return append(dst, ']')
}

// AppendJSON implements llm.JSONAppender.
func (m AssistantMessage) AppendJSON(dst []byte) []byte {
	if !fastBlocks(m.Content) {
		return appendSlow(dst, m)
	}
	dst = appendInt(dst, `{"turn":`, m.Turn)
	dst = appendInt(dst, `,"step":`, m.Step)
	dst = append(dst, `,"content":`...)
	dst = appendBlocks(dst, m.Content)
	if m.Usage != nil {
		dst = append(dst, `,"usage":`...)
		dst = m.Usage.AppendJSON(dst)
	}
	if m.Model != "" {
		dst = append(dst, `,"model":`...)
		dst = llm.AppendJSONString(dst, m.Model)
	}
	if m.Interrupted {
		dst = append(dst, `,"interrupted":true`...)
	}
	return append(dst, '}')
}

// AppendJSON implements llm.JSONAppender.
func (c ToolCall) AppendJSON(dst []byte) []byte {
	dst = appendInt(dst, `{"turn":`, c.Turn)
	dst = appendInt(dst, `,"step":`, c.Step)
	dst = append(dst, `,"callId":`...)
	dst = llm.AppendJSONString(dst, string(c.CallID))
	dst = append(dst, `,"name":`...)
	dst = llm.AppendJSONString(dst, c.Name)
	dst = append(dst, `,"arguments":`...)
	dst = llm.AppendJSONString(dst, c.Arguments)
	if c.OriginalArguments != nil {
		dst = append(dst, `,"originalArguments":`...)
		dst = llm.AppendJSONString(dst, *c.OriginalArguments)
	}
	if c.RewrittenBy != "" {
		dst = append(dst, `,"rewrittenBy":`...)
		dst = llm.AppendJSONString(dst, c.RewrittenBy)
	}
	return append(dst, '}')
}

// AppendJSON implements llm.JSONAppender.
func (r ToolResult) AppendJSON(dst []byte) []byte {
	if !fastBlocks(r.Content) || len(r.Meta) > 0 {
		return appendSlow(dst, r)
	}
	dst = appendInt(dst, `{"turn":`, r.Turn)
	dst = appendInt(dst, `,"step":`, r.Step)
	dst = append(dst, `,"callId":`...)
	dst = llm.AppendJSONString(dst, string(r.CallID))
	dst = append(dst, `,"content":`...)
	dst = appendBlocks(dst, r.Content)
	if r.IsError {
		dst = append(dst, `,"isError":true`...)
	} else {
		dst = append(dst, `,"isError":false`...)
	}
	if r.Error != nil {
		dst = append(dst, `,"error":{"name":`...)
		dst = llm.AppendJSONString(dst, r.Error.Name)
		dst = append(dst, `,"code":`...)
		dst = llm.AppendJSONString(dst, r.Error.Code)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// appendSlow falls back to encoding/json for the rare shapes the fast paths
// do not cover (plugin blocks, tool-result meta).
func appendSlow(dst []byte, v any) []byte {
	type plainAM AssistantMessage
	type plainTR ToolResult
	var b []byte
	var err error
	switch x := v.(type) {
	case AssistantMessage:
		b, err = jsonMarshal(plainAM(x))
	case ToolResult:
		b, err = jsonMarshal(plainTR(x))
	}
	if err != nil {
		return append(dst, "null"...)
	}
	return append(dst, b...)
}

var jsonMarshal = json.Marshal
