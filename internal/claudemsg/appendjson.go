package claudemsg

import (
	"bytes"
	"encoding/json"

	"github.com/dshq/dsh/llm"
)

// The transcript and the stream-json output write every assistant message
// and tool result once more. Through encoding/json a 10 MB answer was
// copied four times over (the block's own Marshal, the outer encoder's
// compaction of it, the buffer's growth, the returned copy); appending
// writes it once. The output is byte for byte what encoding/json wrote
// before (a property test holds it to a reflection-based reference).

// AppendJSON appends exactly the fields of the block's type.
func (b Block) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"type":`...)
	dst = llm.AppendJSONString(dst, b.Type)
	switch b.Type {
	case "text":
		dst = append(dst, `,"text":`...)
		dst = llm.AppendJSONString(dst, b.Text)
	case "thinking":
		dst = append(dst, `,"thinking":`...)
		dst = llm.AppendJSONString(dst, b.Thinking)
		dst = append(dst, `,"signature":`...)
		dst = llm.AppendJSONString(dst, b.Signature)
	case "redacted_thinking":
		dst = append(dst, `,"data":`...)
		dst = llm.AppendJSONString(dst, b.Data)
	case "tool_use":
		dst = append(dst, `,"id":`...)
		dst = llm.AppendJSONString(dst, b.ID)
		dst = append(dst, `,"name":`...)
		dst = llm.AppendJSONString(dst, b.Name)
		dst = append(dst, `,"input":`...)
		dst = appendRawJSON(dst, b.Input, `{}`)
	case "tool_result":
		dst = append(dst, `,"tool_use_id":`...)
		dst = llm.AppendJSONString(dst, b.ToolUseID)
		dst = append(dst, `,"content":`...)
		switch {
		case len(b.Content) == 1 && b.Content[0].Type == "text":
			dst = llm.AppendJSONString(dst, b.Content[0].Text)
		case b.Content == nil:
			dst = append(dst, `""`...)
		default:
			dst = appendBlocks(dst, b.Content)
		}
		dst = append(dst, `,"is_error":`...)
		dst = appendBool(dst, b.IsError)
	case "image":
		dst = append(dst, `,"source":`...)
		dst = appendMarshal(dst, b.Source)
	}
	return append(dst, '}')
}

// AppendJSON appends the message as encoding/json would write it.
func (m AssistantMessage) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = llm.AppendJSONString(dst, m.ID)
	dst = append(dst, `,"type":`...)
	dst = llm.AppendJSONString(dst, m.Type)
	dst = append(dst, `,"role":`...)
	dst = llm.AppendJSONString(dst, m.Role)
	dst = append(dst, `,"model":`...)
	dst = llm.AppendJSONString(dst, m.Model)
	dst = append(dst, `,"content":`...)
	dst = appendBlocks(dst, m.Content)
	dst = append(dst, `,"stop_reason":`...)
	dst = appendOptString(dst, m.StopReason)
	dst = append(dst, `,"stop_sequence":`...)
	dst = appendOptString(dst, m.StopSequence)
	dst = append(dst, `,"usage":`...)
	dst = appendMarshal(dst, m.Usage)
	return append(dst, '}')
}

// AppendJSON appends the message as encoding/json would write it.
func (m UserMessage) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"role":`...)
	dst = llm.AppendJSONString(dst, m.Role)
	dst = append(dst, `,"content":`...)
	dst = appendBlocks(dst, m.Content)
	return append(dst, '}')
}

func appendBlocks(dst []byte, blocks []Block) []byte {
	if blocks == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, b := range blocks {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = b.AppendJSON(dst)
	}
	return append(dst, ']')
}

func appendOptString(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return llm.AppendJSONString(dst, *s)
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

// appendMarshal appends a small value through encoding/json (usage, an
// image source): nothing there is large enough to matter.
func appendMarshal(dst []byte, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return append(dst, "null"...)
	}
	return append(dst, b...)
}

// appendRawJSON appends raw JSON compacted and HTML-escaped, as
// encoding/json writes a json.RawMessage field; empty raw becomes def.
// Text that is not JSON (which encoding/json refused, dropping the whole
// line) is kept visible as {"_raw": text}, as [Input] does.
func appendRawJSON(dst []byte, raw json.RawMessage, def string) []byte {
	if len(raw) == 0 {
		return append(dst, def...)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return append(dst, Input(string(raw))...)
	}
	buf := bytes.NewBuffer(dst)
	json.HTMLEscape(buf, compact.Bytes())
	return buf.Bytes()
}
