package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/dshq/dsh/llm"
)

type wireRequest struct {
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

type thinkingConfig struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

type toolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

type cacheControl struct {
	Type string `json:"type"`
}

type wireTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

type wireBlock struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text,omitempty"`
	Thinking     *string         `json:"thinking,omitempty"`
	Signature    string          `json:"signature,omitempty"`
	Data         string          `json:"data,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      []wireBlock     `json:"content,omitempty"`
	IsError      bool            `json:"is_error,omitempty"`
	Source       *imageSource    `json:"source,omitempty"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// noOutput stands in for a tool result whose text is all blank (the
// OpenAI adapter sends the same).
const noOutput = "(no output)"

// blank reports whether s is empty or only whitespace. The Messages API
// rejects such text blocks ("text content blocks must contain non-whitespace
// text"), and one stored in the history (an assistant answer of "\n\n")
// would fail every later request, so they are dropped.
func blank(s string) bool { return strings.TrimSpace(s) == "" }

func textBlock(s string, cache string) wireBlock {
	return wireBlock{Type: "text", Text: &s, CacheControl: cacheOf(cache)}
}

func cacheOf(hint string) *cacheControl {
	if hint == llm.CacheEphemeral {
		return &cacheControl{Type: "ephemeral"}
	}
	return nil
}

// maxBreakpoints is Anthropic's limit on cache_control markers.
const maxBreakpoints = 4

// RequestBody returns the JSON body the adapter sends for req.
func (a *Adapter) RequestBody(req *llm.Request) ([]byte, error) {
	model := a.wireModel(req.Model)
	w := wireRequest{
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
	a.placeCacheBreakpoints(&w)
	return json.Marshal(w)
}

func (a *Adapter) maxTokens(model string, requested int) int {
	if requested > 0 {
		return requested
	}
	limit := a.cfg.MaxTokens
	if limit <= 0 {
		limit = 32_000
	}
	for _, m := range a.cfg.Models {
		if m.ID == model && m.MaxOutput > 0 {
			return min(m.MaxOutput, limit)
		}
	}
	return min(DefaultMaxTokens, limit)
}

func userBlocks(content []llm.Block) []wireBlock {
	var out []wireBlock
	for _, b := range content {
		switch b.Type {
		case llm.BlockText:
			if !blank(b.Text) {
				out = append(out, textBlock(b.Text, b.Cache))
			}
		case llm.BlockImage:
			out = append(out, imageBlock(b))
		case llm.BlockToolResult:
			wb := wireBlock{Type: "tool_result", ToolUseID: string(b.ToolCallID), IsError: b.IsError, CacheControl: cacheOf(b.Cache)}
			for _, c := range b.Content {
				switch c.Type {
				case llm.BlockText:
					if !blank(c.Text) {
						wb.Content = append(wb.Content, textBlock(c.Text, ""))
					}
				case llm.BlockImage:
					wb.Content = append(wb.Content, imageBlock(c))
				}
			}
			if len(wb.Content) == 0 && len(b.Content) > 0 {
				// Only blank text: say so rather than send what the
				// API rejects.
				wb.Content = append(wb.Content, textBlock(noOutput, ""))
			}
			out = append(out, wb)
		}
	}
	return out
}

func imageBlock(b llm.Block) wireBlock {
	src := &imageSource{Type: "url", URL: b.URL}
	if rest, ok := strings.CutPrefix(b.URL, "data:"); ok {
		if meta, data, ok := strings.Cut(rest, ","); ok {
			mt, enc, _ := strings.Cut(meta, ";")
			if mt == "" {
				mt = b.MimeType
			}
			if enc == "base64" {
				src = &imageSource{Type: "base64", MediaType: mt, Data: data}
			}
		}
	}
	return wireBlock{Type: "image", Source: src, CacheControl: cacheOf(b.Cache)}
}

func assistantBlocks(content []llm.Block) []wireBlock {
	var out []wireBlock
	for _, b := range content {
		switch b.Type {
		case llm.BlockText:
			if !blank(b.Text) {
				out = append(out, textBlock(b.Text, b.Cache))
			}
		case llm.BlockReasoning:
			// Only signed thinking can go back; unsigned reasoning (from
			// another provider) is dropped.
			switch {
			case b.Redacted != "":
				out = append(out, wireBlock{Type: "redacted_thinking", Data: b.Redacted})
			case b.Signature != "":
				t := b.Text
				out = append(out, wireBlock{Type: "thinking", Thinking: &t, Signature: b.Signature})
			}
		case llm.BlockToolCall:
			out = append(out, wireBlock{Type: "tool_use", ID: string(b.ID), Name: b.Name, Input: toolInput(b.Arguments)})
		}
	}
	return out
}

// toolInput turns raw arguments into the object Anthropic requires; text
// that is not a JSON object becomes {}.
func toolInput(args string) json.RawMessage {
	raw := bytes.TrimSpace([]byte(args))
	if len(raw) > 0 && raw[0] == '{' && json.Valid(raw) {
		return raw
	}
	return json.RawMessage(`{}`)
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
func (a *Adapter) placeCacheBreakpoints(w *wireRequest) {
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
