package anthropic

import (
	"bytes"

	"github.com/dshq/dsh/llm/sse"
)

// names interns the event, block and delta type names so decoding them
// does not allocate.
var names = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{
		"message_start", "message_delta", "message_stop", "content_block_start", "content_block_delta",
		"content_block_stop", "ping", "error", "text", "thinking", "redacted_thinking", "tool_use",
		"text_delta", "thinking_delta", "signature_delta", "input_json_delta", "citations_delta",
		"end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "pause_turn",
	} {
		m[n] = n
	}
	return m
}()

func name(s *sse.JSONScanner) (string, error) {
	if s.Null() {
		return "", nil
	}
	b, err := s.Bytes()
	if err != nil {
		return "", err
	}
	if n, ok := names[string(b)]; ok {
		return n, nil
	}
	return string(b), nil
}

// parse decodes one event into d.w with the reflection-free scanner.
func (d *decoder) parse(data []byte) error {
	d.w = eventWire{}
	w := &d.w
	s := &d.sc
	s.Reset(data)
	err := s.Object(func(key []byte) (err error) {
		switch string(key) {
		case "type":
			w.Type, err = name(s)
		case "index":
			w.Index, _, err = s.OptInt()
		case "message":
			if !s.Null() {
				err = parseMessage(s, w)
			}
		case "content_block":
			if !s.Null() {
				w.HasBlock = true
				err = parseBlock(s, &w.Block)
			}
		case "delta":
			if !s.Null() {
				w.HasDelta = true
				err = parseDelta(s, &w.Delta)
			}
		case "usage":
			if !s.Null() {
				w.HasUsage = true
				err = parseUsage(s, &w.Usage)
			}
		case "error":
			if !s.Null() {
				w.HasError = true
				err = sse.ParseErrorEvent(s, &w.Error)
			}
		default:
			err = s.Skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	return s.End()
}

func parseMessage(s *sse.JSONScanner, w *eventWire) error {
	return s.Object(func(key []byte) (err error) {
		if string(key) == "usage" && !s.Null() {
			w.HasMsg = true
			err = parseUsage(s, &w.Message)
		} else {
			err = s.Skip()
		}
		return err
	})
}

func parseBlock(s *sse.JSONScanner, b *contentBlockWire) error {
	return s.Object(func(key []byte) (err error) {
		switch string(key) {
		case "type":
			b.Type, err = name(s)
		case "text":
			b.Text, err = s.OptString()
		case "thinking":
			b.Thinking, err = s.OptString()
		case "signature":
			b.Signature, err = s.OptString()
		case "data":
			b.Data, err = s.OptString()
		case "id":
			b.ID, err = s.OptString()
		case "name":
			b.Name, err = s.OptString()
		case "input":
			var raw []byte
			raw, err = s.Raw()
			b.Input = bytes.Clone(raw)
		default:
			err = s.Skip()
		}
		return err
	})
}

func parseDelta(s *sse.JSONScanner, dw *deltaWire) error {
	return s.Object(func(key []byte) (err error) {
		switch string(key) {
		case "type":
			dw.Type, err = name(s)
		case "text":
			dw.Text, err = s.OptString()
		case "thinking":
			dw.Thinking, err = s.OptString()
		case "signature":
			dw.Signature, err = s.OptString()
		case "partial_json":
			dw.PartialJSON, err = s.OptString()
		case "stop_reason":
			dw.StopReason, err = name(s)
		default:
			err = s.Skip()
		}
		return err
	})
}

func parseUsage(s *sse.JSONScanner, u *usageWire) error {
	return s.Object(func(key []byte) (err error) {
		switch string(key) {
		case "input_tokens":
			u.Input, u.HasInput, err = s.OptInt()
		case "output_tokens":
			u.Output, u.HasOutput, err = s.OptInt()
		case "cache_read_input_tokens":
			u.CacheRead, u.HasCacheRead, err = s.OptInt()
		case "cache_creation_input_tokens":
			u.CacheWrite, u.HasCacheWrite, err = s.OptInt()
		default:
			err = s.Skip()
		}
		return err
	})
}
