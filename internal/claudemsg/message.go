// Package claudemsg turns dsh's session events into the message shapes
// Claude Code writes: Anthropic Messages API content blocks (text,
// thinking, tool_use, tool_result, image) inside assistant and user
// messages, with Claude Code's tool names and snake_case usage. The
// headless stream-json output and the Claude-format transcript both speak
// this shape, so both are built here and cannot drift apart.
package claudemsg

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/dshq/dsh/llm"
)

// Block is one Anthropic content block. Which fields are written depends
// on Type (see MarshalJSON).
type Block struct {
	Type string
	// text: Text. thinking: Thinking, Signature. redacted_thinking: Data.
	Text      string
	Thinking  string
	Signature string
	Data      string
	// tool_use: ID, Name, Input.
	ID    string
	Name  string
	Input json.RawMessage
	// tool_result: ToolUseID, Content (a string when it is one text), IsError.
	ToolUseID string
	Content   []Block
	IsError   bool
	// image: Source.
	Source *ImageSource
}

// ImageSource is an image block's source: base64 data or a URL.
type ImageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// MarshalJSON writes exactly the fields of the block's type (see
// [Block.AppendJSON]).
func (b Block) MarshalJSON() ([]byte, error) { return b.AppendJSON(nil), nil }

// UnmarshalJSON reads any block this package writes, and the string form
// of tool_result content.
func (b *Block) UnmarshalJSON(data []byte) error {
	var w struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Thinking  string          `json:"thinking"`
		Signature string          `json:"signature"`
		Data      string          `json:"data"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
		Source    *ImageSource    `json:"source"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*b = Block{Type: w.Type, Text: w.Text, Thinking: w.Thinking, Signature: w.Signature, Data: w.Data,
		ID: w.ID, Name: w.Name, Input: w.Input, ToolUseID: w.ToolUseID, IsError: w.IsError, Source: w.Source}
	c := bytes.TrimSpace(w.Content)
	switch {
	case len(c) == 0 || string(c) == "null":
	case c[0] == '"':
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return err
		}
		b.Content = []Block{{Type: "text", Text: s}}
	default:
		if err := json.Unmarshal(c, &b.Content); err != nil {
			return err
		}
	}
	return nil
}

// Usage is Anthropic's snake_case token accounting. Input excludes cached
// input, as dsh's does.
type Usage struct {
	InputTokens              int    `json:"input_tokens"`
	CacheCreationInputTokens int    `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int    `json:"cache_read_input_tokens"`
	OutputTokens             int    `json:"output_tokens"`
	ServerToolUse            *STU   `json:"server_tool_use,omitempty"`
	ServiceTier              string `json:"service_tier,omitempty"`
	// CacheCreation splits cache writes by lifetime (dsh asks for the
	// 5-minute cache only).
	CacheCreation *CacheCreation `json:"cache_creation,omitempty"`
}

// CacheCreation is Anthropic's cache-write breakdown.
type CacheCreation struct {
	Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
	Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
}

// STU counts server-side tool requests (always zero for dsh: its web tools
// run locally).
type STU struct {
	WebSearchRequests int `json:"web_search_requests"`
	WebFetchRequests  int `json:"web_fetch_requests"`
}

// FromUsage converts dsh's usage.
func FromUsage(u llm.Usage) Usage {
	return Usage{InputTokens: u.InputTokens, CacheCreationInputTokens: u.CacheWriteTokens,
		CacheReadInputTokens: u.CacheReadTokens, OutputTokens: u.OutputTokens}
}

// ResultUsage is the usage of a result message: Claude Code's
// NonNullableUsage, where every field is present.
func ResultUsage(u llm.Usage) Usage {
	r := FromUsage(u)
	r.ServerToolUse = &STU{}
	r.ServiceTier = "standard"
	r.CacheCreation = &CacheCreation{Ephemeral5m: u.CacheWriteTokens}
	return r
}

// AssistantMessage is an Anthropic Message object (role assistant).
type AssistantMessage struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"` // "message"
	Role         string  `json:"role"` // "assistant"
	Model        string  `json:"model"`
	Content      []Block `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        Usage   `json:"usage"`
}

// UserMessage is an Anthropic MessageParam with role user.
type UserMessage struct {
	Role    string  `json:"role"` // "user"
	Content []Block `json:"content"`
}

// Blocks converts dsh content blocks. Tool calls take Claude Code's tool
// names and argument names; reasoning becomes thinking (or
// redacted_thinking); blocks Claude Code has no shape for (a plugin's
// own) are left out — they never reach a model either.
func Blocks(content []llm.Block) []Block {
	out := make([]Block, 0, len(content))
	for _, b := range content {
		if cb, ok := FromBlock(b); ok {
			out = append(out, cb)
		}
	}
	return out
}

// FromBlock converts one dsh block; ok is false for blocks without a
// Claude Code shape.
func FromBlock(b llm.Block) (Block, bool) {
	switch b.Type {
	case llm.BlockText:
		return Block{Type: "text", Text: b.Text}, true
	case llm.BlockReasoning:
		if b.Redacted != "" {
			return Block{Type: "redacted_thinking", Data: b.Redacted}, true
		}
		return Block{Type: "thinking", Thinking: b.Text, Signature: b.Signature}, true
	case llm.BlockToolCall:
		return Block{Type: "tool_use", ID: string(b.ID), Name: ToolName(b.Name), Input: ToolInput(b.Name, Input(b.Arguments))}, true
	case llm.BlockToolResult:
		return Block{Type: "tool_result", ToolUseID: string(b.ToolCallID), Content: Blocks(b.Content), IsError: b.IsError}, true
	case llm.BlockImage:
		return Block{Type: "image", Source: imageSource(b)}, true
	}
	return Block{}, false
}

// Input is the JSON object of a call's raw arguments. Arguments that are
// not a JSON object (a model's malformed call) are kept, as text, under
// "_raw", so what the model sent stays visible.
func Input(args string) json.RawMessage {
	raw := bytes.TrimSpace([]byte(args))
	if len(raw) == 0 {
		return json.RawMessage(`{}`)
	}
	if raw[0] == '{' && json.Valid(raw) {
		return raw
	}
	b, _ := json.Marshal(map[string]string{"_raw": args})
	return b
}

func imageSource(b llm.Block) *ImageSource {
	if rest, ok := strings.CutPrefix(b.URL, "data:"); ok {
		if meta, data, ok := strings.Cut(rest, ","); ok {
			mt, enc, _ := strings.Cut(meta, ";")
			if mt == "" {
				mt = b.MimeType
			}
			if enc == "base64" {
				return &ImageSource{Type: "base64", MediaType: mt, Data: data}
			}
		}
	}
	return &ImageSource{Type: "url", URL: b.URL}
}

// ToLLM converts Claude Code content blocks (an SDK user message, a
// transcript) back to dsh blocks: tool names and argument names are
// dsh's again.
func ToLLM(content []Block) []llm.Block {
	out := make([]llm.Block, 0, len(content))
	for _, b := range content {
		switch b.Type {
		case "text":
			out = append(out, llm.Text(b.Text))
		case "thinking":
			out = append(out, llm.Block{Type: llm.BlockReasoning, Text: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			out = append(out, llm.Block{Type: llm.BlockReasoning, Redacted: b.Data})
		case "tool_use":
			name := DshToolName(b.Name)
			out = append(out, llm.ToolCall(llm.CallID(b.ID), name, string(FromToolInput(name, b.Input))))
		case "tool_result":
			out = append(out, llm.Block{Type: llm.BlockToolResult, ToolCallID: llm.CallID(b.ToolUseID), Content: ToLLM(b.Content), IsError: b.IsError})
		case "image":
			if b.Source == nil {
				continue
			}
			if b.Source.Type == "base64" {
				out = append(out, llm.Block{Type: llm.BlockImage, URL: "data:" + b.Source.MediaType + ";base64," + b.Source.Data, MimeType: b.Source.MediaType})
			} else {
				out = append(out, llm.Block{Type: llm.BlockImage, URL: b.Source.URL})
			}
		}
	}
	return out
}

// UUID derives a stable RFC 4122 (version 5 layout) UUID from parts, so
// the same session event always gets the same message uuid: a resumed
// session, a replay and a transcript name it alike.
func UUID(parts ...string) string {
	h := sha1.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	s := h.Sum(nil)[:16]
	s[6] = (s[6] & 0x0f) | 0x50
	s[8] = (s[8] & 0x3f) | 0x80
	x := hex.EncodeToString(s)
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}

// MessageID derives an Anthropic-style message id ("msg_…") from parts.
func MessageID(parts ...string) string {
	return "msg_" + strings.ReplaceAll(UUID(parts...), "-", "")[:24]
}
