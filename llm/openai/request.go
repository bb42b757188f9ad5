package openai

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/dshq/dsh/llm"
)

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type thinking struct {
	Type string `json:"type"`
}

type wireMessage struct {
	Role             string         `json:"role"`
	Content          any            `json:"content"` // string, []wirePart or nil
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
}

type wirePart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string       `json:"type"`
	Function wireToolFunc `json:"function"`
}

type wireToolFunc struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict,omitempty"`
}

const noOutput = "(no output)"

// head and tail are the request's fields before and after "messages", in
// wire order. The messages between them are spliced from the encodings the
// wire cache keeps, so a request costs its new messages, not its whole
// history.
type head struct {
	Model string `json:"model"`
}

type tail struct {
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

// fields returns everything of the request after its messages: the
// options and the tools.
func (a *Adapter) fields(req *llm.Request) (tail, error) {
	w := tail{
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
			return w, a.badRequest("tool %q: parameters are not valid JSON", t.Name)
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
	return w, nil
}

// encoded is the wire form of one history message: the comma-separated
// wire messages it becomes (none, one, or a tool message per result plus
// the user's own).
type encoded struct {
	json []byte
	err  error
}

// RequestBody returns the JSON body the adapter sends for req: exactly
// what marshalling the whole request at once would write, built from the
// session's cached message encodings plus the new messages.
func (a *Adapter) RequestBody(req *llm.Request) ([]byte, error) {
	tj, err := a.tail(req)
	if err != nil {
		return nil, err
	}
	hj, err := json.Marshal(head{Model: a.wireModel(req.Model)})
	if err != nil {
		return nil, err
	}
	// Which assistant messages replay their reasoning depends on where the
	// latest prompt is: it is the encoding's variant.
	replay := ReplayMask(req.Messages, a.cfg.ReasoningReplay)
	var variant func(int) uint8
	if replay != nil {
		variant = func(i int) uint8 {
			if replay[i] {
				return 1
			}
			return 0
		}
	}
	encs := a.wire.Encode(req.SessionID, req.Messages, variant, a.encode)
	size := len(hj) + len(tj) + len(req.System) + 64
	for _, e := range encs {
		if e.err != nil {
			return nil, e.err
		}
		size += len(e.json) + 1
	}
	out := make([]byte, 0, size)
	out = append(out, hj[:len(hj)-1]...)
	out = append(out, `,"messages":[`...)
	first := true
	if req.System != "" {
		sys, err := json.Marshal(wireMessage{Role: "system", Content: req.System})
		if err != nil {
			return nil, err
		}
		out, first = append(out, sys...), false
	}
	for _, e := range encs {
		if len(e.json) == 0 {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		out, first = append(out, e.json...), false
	}
	out = append(out, ']', ',')
	return append(out, tj[1:]...), nil
}

func (a *Adapter) badRequest(format string, args ...any) *llm.Error {
	return a.client.Errorf(llm.CodeBadRequest, format, args...)
}

// wireModel strips the provider prefix from a model reference.
func (a *Adapter) wireModel(ref string) string {
	if p := a.cfg.Provider; p != "" && strings.HasPrefix(ref, p+"/") {
		return ref[len(p)+1:]
	}
	return ref
}

// encode is the wire cache's encoder: variant 1 is an assistant message
// that replays its reasoning.
func (a *Adapter) encode(m llm.Message, variant uint8) encoded {
	var wms []wireMessage
	switch m.Role {
	case llm.RoleSystem:
		if t := llm.TextOf(m.Content); t != "" {
			wms = append(wms, wireMessage{Role: "system", Content: t})
		}
	case llm.RoleUser:
		wms = a.userMessages(nil, m)
	case llm.RoleAssistant:
		if wm, ok := assistantMessage(m, variant == 1); ok {
			wms = append(wms, wm)
		}
	}
	var e encoded
	for i, wm := range wms {
		b, err := json.Marshal(wm)
		if err != nil {
			return encoded{err: err}
		}
		if i > 0 {
			e.json = append(e.json, ',')
		}
		e.json = append(e.json, b...)
	}
	return e
}

// userMessages appends one role:"tool" message per tool result (first, so
// they directly follow the assistant's tool calls), then the user's own
// content if any.
func (a *Adapter) userMessages(out []wireMessage, m llm.Message) []wireMessage {
	hasResults := false
	for _, b := range m.Content {
		if b.Type != llm.BlockToolResult {
			continue
		}
		hasResults = true
		text := llm.TextOf(b.Content)
		if text == "" {
			text = noOutput
		}
		out = append(out, wireMessage{Role: "tool", ToolCallID: string(b.ToolCallID), Content: text})
	}
	var parts []wirePart
	hasImage, hasOther := false, false
	for _, b := range m.Content {
		switch b.Type {
		case llm.BlockText:
			hasOther = true
			parts = append(parts, wirePart{Type: "text", Text: b.Text})
		case llm.BlockImage:
			hasOther = true
			if a.cfg.NoImages {
				parts = append(parts, wirePart{Type: "text", Text: "[image omitted: this model does not accept images]"})
				continue
			}
			hasImage = true
			parts = append(parts, wirePart{Type: "image_url", ImageURL: &imageURL{URL: b.URL}})
		}
	}
	if !hasOther && hasResults {
		return out
	}
	if hasImage {
		return append(out, wireMessage{Role: "user", Content: parts})
	}
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteString(p.Text)
	}
	return append(out, wireMessage{Role: "user", Content: sb.String()})
}

func assistantMessage(m llm.Message, replay bool) (wireMessage, bool) {
	var text, reasoning strings.Builder
	var calls []wireToolCall
	for _, b := range m.Content {
		switch b.Type {
		case llm.BlockText:
			text.WriteString(b.Text)
		case llm.BlockReasoning:
			reasoning.WriteString(b.Text)
		case llm.BlockToolCall:
			args := b.Arguments
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			calls = append(calls, wireToolCall{ID: string(b.ID), Type: "function",
				Function: wireFunction{Name: b.Name, Arguments: args}})
		}
	}
	wm := wireMessage{Role: "assistant", ToolCalls: calls}
	switch {
	case text.Len() > 0:
		wm.Content = text.String()
	case len(calls) > 0:
		wm.Content = nil
	case replay && reasoning.Len() > 0:
		wm.Content = ""
	default:
		return wm, false // nothing the provider would accept
	}
	if replay {
		r := reasoning.String()
		wm.ReasoningContent = &r
	}
	return wm, true
}

// IsPrompt reports whether m is a user message that starts a turn: a user
// message carrying no tool results.
func IsPrompt(m llm.Message) bool {
	if m.Role != llm.RoleUser {
		return false
	}
	for _, b := range m.Content {
		if b.Type == llm.BlockToolResult {
			return false
		}
	}
	return true
}

// ReplayMask returns, per message, whether an assistant message sends its
// reasoning back under policy (nil for ReplayNone).
func ReplayMask(msgs []llm.Message, policy ReasoningReplay) []bool {
	if policy == ReplayNone {
		return nil
	}
	mask := make([]bool, len(msgs))
	lastPrompt := -1
	for i, m := range msgs {
		if IsPrompt(m) {
			lastPrompt = i
		}
	}
	start := 0
	for start < len(msgs) {
		end := start + 1
		for end < len(msgs) && !IsPrompt(msgs[end]) {
			end++
		}
		// msgs[start:end] is one turn (it starts with a prompt, except
		// possibly the first).
		current := end > lastPrompt && start >= lastPrompt
		include := current
		if !include && policy == ReplayToolTurns {
			for _, m := range msgs[start:end] {
				if m.Role == llm.RoleAssistant && hasToolCall(m) {
					include = true
					break
				}
			}
		}
		if include {
			for i := start; i < end; i++ {
				if msgs[i].Role == llm.RoleAssistant {
					mask[i] = true
				}
			}
		}
		start = end
	}
	return mask
}

func hasToolCall(m llm.Message) bool {
	for _, b := range m.Content {
		if b.Type == llm.BlockToolCall {
			return true
		}
	}
	return false
}
