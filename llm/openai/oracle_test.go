package openai

import (
	"bytes"
	"encoding/json"

	"github.com/dshq/dsh/llm"
)

// This file keeps the encoder as it was before the wire cache: the whole
// request built as one struct and marshalled at once. It is the oracle the
// wire cache's property test compares against, byte for byte.

type wholeRequest struct {
	Model               string          `json:"model"`
	Messages            []wireMessage   `json:"messages"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options,omitempty"`
	Thinking            *thinking       `json:"thinking,omitempty"`
	ReasoningEffort     string          `json:"reasoning_effort,omitempty"`
	Tools               []wireTool      `json:"tools,omitempty"`
	ToolChoice          json.RawMessage `json:"tool_choice,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	Stop                []string        `json:"stop,omitempty"`
}

// wholeBody is RequestBody before the wire cache.
func (a *Adapter) wholeBody(req *llm.Request) ([]byte, error) {
	w := wholeRequest{
		Model:       a.wireModel(req.Model),
		Messages:    a.wholeMessages(req),
		Stream:      true,
		Temperature: req.Temperature,
		Stop:        req.Stop,
	}
	if !a.cfg.NoStreamOptions {
		w.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if a.cfg.Thinking != "" {
		w.Thinking = &thinking{Type: a.cfg.Thinking}
	}
	w.ReasoningEffort = a.cfg.ReasoningEffort
	if req.MaxTokens > 0 {
		if a.cfg.MaxTokensField == "max_completion_tokens" {
			w.MaxCompletionTokens = req.MaxTokens
		} else {
			w.MaxTokens = req.MaxTokens
		}
	}
	for _, t := range req.Tools {
		params := bytes.TrimSpace(t.Parameters)
		if len(params) == 0 || string(params) == "null" {
			params = []byte(`{"type":"object","properties":{}}`)
		}
		if !json.Valid(params) {
			return nil, a.badRequest("tool %q: parameters are not valid JSON", t.Name)
		}
		w.Tools = append(w.Tools, wireTool{Type: "function", Function: wireToolFunc{
			Name: t.Name, Description: t.Description, Parameters: params, Strict: t.Strict}})
	}
	if len(w.Tools) > 0 {
		switch req.ToolChoice {
		case "":
		case "auto", "none", "required":
			w.ToolChoice, _ = json.Marshal(req.ToolChoice)
		default:
			w.ToolChoice, _ = json.Marshal(map[string]any{
				"type": "function", "function": map[string]string{"name": req.ToolChoice}})
		}
	}
	return json.Marshal(w)
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
