package anthropic

import (
	"encoding/json"

	"github.com/dshq/dsh/llm"
)

// This file keeps the encoder as it was before the wire cache: the whole
// request built as one struct and marshalled at once. It is the oracle the
// wire cache's property test compares against, byte for byte.

type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

// wholeRequest is the request as one struct: the fields before the
// messages, the messages, and the rest, in that order on the wire.
type wholeRequest struct {
	head
	Messages []wireMessage `json:"messages"`
	tail
}

// wholeBody is RequestBody before the wire cache.
func (a *Adapter) wholeBody(req *llm.Request) ([]byte, error) {
	h, t, err := a.fields(req)
	if err != nil {
		return nil, err
	}
	w := wholeRequest{head: h, tail: t}
	msgs := make([]wireMessage, 0, len(req.Messages)+1)
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem:
			for _, b := range m.Content {
				if b.Type == llm.BlockText && !blank(b.Text) {
					w.System = append(w.System, textBlock(b.Text, b.Cache))
				}
			}
		case llm.RoleUser:
			msgs = append(msgs, wireMessage{Role: "user", Content: userBlocks(m.Content)})
		case llm.RoleAssistant:
			msgs = append(msgs, wireMessage{Role: "assistant", Content: assistantBlocks(m.Content)})
		}
	}
	if len(req.Prefill) > 0 {
		msgs = append(msgs, wireMessage{Role: "assistant", Content: prefillBlocks(req.Prefill)})
	}
	w.Messages = mergeMessages(msgs)
	wholeBreakpoints(a, &w)
	return json.Marshal(w)
}

// mergeMessages drops empty messages, merges consecutive messages of the
// same role (the API requires alternation) and puts tool results first in
// user messages (the API requires them before other content).
func mergeMessages(in []wireMessage) []wireMessage {
	out := in[:0:0]
	for _, m := range in {
		if len(m.Content) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			out[n-1].Content = append(out[n-1].Content, m.Content...)
			continue
		}
		out = append(out, wireMessage{Role: m.Role, Content: append([]wireBlock(nil), m.Content...)})
	}
	for i := range out {
		if out[i].Role != "user" {
			continue
		}
		c := out[i].Content
		sorted := make([]wireBlock, 0, len(c))
		for _, b := range c {
			if b.Type == "tool_result" {
				sorted = append(sorted, b)
			}
		}
		for _, b := range c {
			if b.Type != "tool_result" {
				sorted = append(sorted, b)
			}
		}
		out[i].Content = sorted
	}
	return out
}

// placeCacheBreakpoints keeps at most four cache_control markers; without
// explicit hints it marks the end of the tools, of the system prompt and of
// the last message, so an agent loop re-reads its growing prefix from the
// cache.
func wholeBreakpoints(a *Adapter, w *wholeRequest) {
	count := 0
	visit := func(cc **cacheControl) {
		if *cc == nil {
			return
		}
		count++
		if count > maxBreakpoints {
			*cc = nil
		}
	}
	for i := range w.Tools {
		visit(&w.Tools[i].CacheControl)
	}
	for i := range w.System {
		visit(&w.System[i].CacheControl)
	}
	for i := range w.Messages {
		for j := range w.Messages[i].Content {
			b := &w.Messages[i].Content[j]
			visit(&b.CacheControl)
			for k := range b.Content {
				visit(&b.Content[k].CacheControl)
			}
		}
	}
	if count > 0 || a.cfg.NoAutoCache {
		return
	}
	eph := &cacheControl{Type: "ephemeral"}
	if n := len(w.Tools); n > 0 {
		w.Tools[n-1].CacheControl = eph
	}
	if n := len(w.System); n > 0 {
		w.System[n-1].CacheControl = eph
	}
	if n := len(w.Messages); n > 0 {
		c := w.Messages[n-1].Content
		for j := len(c) - 1; j >= 0; j-- {
			if c[j].Type != "thinking" && c[j].Type != "redacted_thinking" {
				c[j].CacheControl = eph
				break
			}
		}
	}
}
