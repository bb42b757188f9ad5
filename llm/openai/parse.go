package openai

import "github.com/dshq/dsh/llm/sse"

// parse decodes one chunk into d.w with the reflection-free scanner (the
// adapter's hot path). Unknown fields are validated and skipped; a value of
// the wrong type is an error, as with encoding/json.
func (d *decoder) parse(data []byte) error {
	choices := d.w.Choices[:cap(d.w.Choices)]
	clear(choices) // keep the capacity, drop the previous event's values
	d.w = chunkWire{Choices: choices[:0]}
	s := &d.sc
	s.Reset(data)
	err := s.Object(func(key []byte) (err error) {
		switch string(key) {
		case "choices":
			err = d.parseChoices(s)
		case "usage":
			if !s.Null() {
				d.w.HasUsage = true
				err = parseUsage(s, &d.w.Usage)
			}
		case "error":
			if !s.Null() {
				d.w.Error = &sse.ErrorEvent{}
				err = sse.ParseErrorEvent(s, d.w.Error)
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

func (d *decoder) parseChoices(s *sse.JSONScanner) error {
	if s.Null() {
		return nil
	}
	return s.Array(func() error {
		d.w.Choices = append(d.w.Choices, choiceWire{})
		return parseChoice(s, &d.w.Choices[len(d.w.Choices)-1])
	})
}

func parseChoice(s *sse.JSONScanner, c *choiceWire) error {
	return s.Object(func(key []byte) (err error) {
		switch string(key) {
		case "index":
			c.Index, _, err = s.OptInt()
		case "delta", "message":
			if !s.Null() {
				err = parseDelta(s, &c.Delta)
			}
		case "finish_reason":
			c.FinishReason, err = s.OptString()
		default:
			err = s.Skip()
		}
		return err
	})
}

func parseDelta(s *sse.JSONScanner, dw *deltaWire) error {
	return s.Object(func(key []byte) (err error) {
		switch string(key) {
		case "content":
			dw.Content, err = s.OptString()
		case "reasoning_content":
			dw.ReasoningContent, err = s.OptString()
		case "reasoning":
			dw.Reasoning, err = s.OptString()
		case "refusal":
			dw.Refusal, err = s.OptString()
		case "tool_calls":
			err = parseToolCalls(s, dw)
		default:
			err = s.Skip()
		}
		return err
	})
}

func parseToolCalls(s *sse.JSONScanner, dw *deltaWire) error {
	if s.Null() {
		return nil
	}
	return s.Array(func() error {
		dw.ToolCalls = append(dw.ToolCalls, toolDeltaWire{})
		tc := &dw.ToolCalls[len(dw.ToolCalls)-1]
		return s.Object(func(key []byte) (err error) {
			switch string(key) {
			case "index":
				tc.Index, tc.HasIndex, err = s.OptInt()
			case "id":
				tc.ID, err = s.OptString()
			case "function":
				if !s.Null() {
					err = parseFunction(s, tc)
				}
			default:
				err = s.Skip()
			}
			return err
		})
	})
}

func parseFunction(s *sse.JSONScanner, tc *toolDeltaWire) error {
	return s.Object(func(key []byte) (err error) {
		switch string(key) {
		case "name":
			tc.Name, err = s.OptString()
		case "arguments":
			// A string per the API; some compatible servers send the
			// object itself, kept as raw JSON text.
			tc.Arguments, err = stringOrRaw(s)
		default:
			err = s.Skip()
		}
		return err
	})
}

// stringOrRaw reads a string (or null), or keeps any other value as its raw
// JSON text.
func stringOrRaw(s *sse.JSONScanner) (string, error) {
	switch s.Peek() {
	case '"', 'n':
		return s.OptString()
	}
	raw, err := s.Raw()
	return string(raw), err
}

func parseUsage(s *sse.JSONScanner, u *usageWire) error {
	*u = usageWire{}
	return s.Object(func(key []byte) (err error) {
		switch string(key) {
		case "prompt_tokens":
			u.PromptTokens, _, err = s.OptInt()
		case "completion_tokens":
			u.CompletionTokens, _, err = s.OptInt()
		case "prompt_cache_hit_tokens":
			u.Hit, u.HasHit, err = s.OptInt()
		case "prompt_cache_miss_tokens":
			u.Miss, u.HasMiss, err = s.OptInt()
		case "prompt_tokens_details":
			err = subInt(s, "cached_tokens", &u.Cached, &u.HasCached)
		case "completion_tokens_details":
			err = subInt(s, "reasoning_tokens", &u.ReasoningTokens, nil)
		default:
			err = s.Skip()
		}
		return err
	})
}

// subInt reads one integer member of an object (or null).
func subInt(s *sse.JSONScanner, name string, dst *int, set *bool) error {
	if s.Null() {
		return nil
	}
	return s.Object(func(key []byte) (err error) {
		if string(key) != name {
			return s.Skip()
		}
		var has bool
		*dst, has, err = s.OptInt()
		if set != nil {
			*set = has
		}
		return err
	})
}
