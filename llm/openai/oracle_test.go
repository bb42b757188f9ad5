package openai

import (
	"encoding/json"

	"github.com/dshq/dsh/llm"
)

// This file keeps the encoder as it was before the wire cache: the whole
// request built as one struct and marshalled at once. It is the oracle the
// wire cache's property test compares against, byte for byte.

// wholeRequest is the request as one struct: the fields before the
// messages, the messages, and the rest, in that order on the wire.
type wholeRequest struct {
	Model    string        `json:"model"`
	Messages []wireMessage `json:"messages"`
	tail
}

// wholeBody is RequestBody before the wire cache.
func (a *Adapter) wholeBody(req *llm.Request) ([]byte, error) {
	t, err := a.fields(req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(wholeRequest{Model: a.wireModel(req.Model), Messages: a.wholeMessages(req), tail: t})
}

func (a *Adapter) wholeMessages(req *llm.Request) []wireMessage {
	out := make([]wireMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		out = append(out, wireMessage{Role: "system", Content: req.System})
	}
	replay := ReplayMask(req.Messages, a.cfg.ReasoningReplay)
	for i, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem:
			if t := llm.TextOf(m.Content); t != "" {
				out = append(out, wireMessage{Role: "system", Content: t})
			}
		case llm.RoleUser:
			out = a.userMessages(out, m)
		case llm.RoleAssistant:
			if wm, ok := assistantMessage(m, replay != nil && replay[i]); ok {
				out = append(out, wm)
			}
		}
	}
	return out
}
