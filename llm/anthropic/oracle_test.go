package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/dshq/dsh/llm"
)

// This file keeps the encoder as it was before the wire cache: the whole
// request built as one struct and marshalled at once. It is the oracle the
// wire cache's property test compares against, byte for byte.

type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

type wholeRequest struct {
	Model         string          `json:"model"`
	MaxTokens     int             `json:"max_tokens"`
	System        []wireBlock     `json:"system,omitempty"`
	Messages      []wireMessage   `json:"messages"`
	Tools         []wireTool      `json:"tools,omitempty"`
	ToolChoice    *toolChoice     `json:"tool_choice,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Thinking      *thinkingConfig `json:"thinking,omitempty"`
	Stream        bool            `json:"stream"`
}

// wholeBody is RequestBody before the wire cache.
func (a *Adapter) wholeBody(req *llm.Request) ([]byte, error) {
	model := a.wireModel(req.Model)
	w := wholeRequest{
		Model:         model,
		MaxTokens:     a.maxTokens(model, req.MaxTokens),
		Stream:        true,
		StopSequences: req.Stop,
		Temperature:   req.Temperature,
	}
	if a.cfg.ThinkingBudget > 0 {
		w.Thinking = &thinkingConfig{Type: "enabled", BudgetTokens: a.cfg.ThinkingBudget}
		w.Temperature = nil
		if w.MaxTokens <= a.cfg.ThinkingBudget {
			w.MaxTokens = a.cfg.ThinkingBudget + DefaultMaxTokens
		}
	}
	if !blank(req.System) {
		w.System = append(w.System, textBlock(req.System, ""))
	}
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
		var pre []wireBlock
		for i, b := range req.Prefill {
			if b.Type != llm.BlockText {
				continue
			}
			t := b.Text
			if i == len(req.Prefill)-1 {
				t = strings.TrimRight(t, " \t\r\n") // the API rejects trailing whitespace here
			}
			if !blank(t) {
				pre = append(pre, textBlock(t, ""))
			}
		}
		msgs = append(msgs, wireMessage{Role: "assistant", Content: pre})
	}
	w.Messages = mergeMessages(msgs)

	for _, t := range req.Tools {
		params := bytes.TrimSpace(t.Parameters)
		if len(params) == 0 || string(params) == "null" {
			params = []byte(`{"type":"object","properties":{}}`)
		}
		if !json.Valid(params) {
			return nil, a.client.Errorf(llm.CodeBadRequest, "tool %q: parameters are not valid JSON", t.Name)
		}
		w.Tools = append(w.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: params})
	}
	if len(w.Tools) > 0 {
		switch req.ToolChoice {
		case "":
		case "auto", "none":
			w.ToolChoice = &toolChoice{Type: req.ToolChoice}
		case "required":
			w.ToolChoice = &toolChoice{Type: "any"}
		default:
			w.ToolChoice = &toolChoice{Type: "tool", Name: req.ToolChoice}
		}
	}
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
