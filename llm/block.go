package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// BlockType discriminates content blocks.
type BlockType string

// Known block types. Other values are kept verbatim (see Block.Raw).
const (
	BlockText       BlockType = "text"
	BlockReasoning  BlockType = "reasoning"
	BlockToolCall   BlockType = "tool-call"
	BlockToolResult BlockType = "tool-result"
	BlockImage      BlockType = "image"
)

// CacheEphemeral is the only cache hint: "a good place to end a cached prefix".
const CacheEphemeral = "ephemeral"

// Block is one piece of message content. Which fields are meaningful depends
// on Type:
//
//	text        Text, Cache
//	reasoning   Text, Signature (provider proof, e.g. Anthropic thinking), Redacted
//	tool-call   ID, Name, Arguments (the raw JSON text the model produced)
//	tool-result ToolCallID, Content, IsError, Cache
//	image       URL, MimeType, Cache
//
// Any other Type is a plugin's block: Raw holds its whole JSON object and is
// written back unchanged.
type Block struct {
	Type       BlockType
	Text       string
	Signature  string
	Redacted   string
	ID         CallID
	Name       string
	Arguments  string
	ToolCallID CallID
	Content    []Block
	IsError    bool
	URL        string
	MimeType   string
	Cache      string
	Raw        json.RawMessage
}

// Text returns a text block.
func Text(s string) Block { return Block{Type: BlockText, Text: s} }

// Reasoning returns a reasoning block.
func Reasoning(s string) Block { return Block{Type: BlockReasoning, Text: s} }

// ToolCall returns a tool-call block.
func ToolCall(id CallID, name, args string) Block {
	return Block{Type: BlockToolCall, ID: id, Name: name, Arguments: args}
}

// Clone returns a deep copy.
func (b Block) Clone() Block {
	if b.Content != nil {
		b.Content = CloneBlocks(b.Content)
	}
	if b.Raw != nil {
		b.Raw = append(json.RawMessage(nil), b.Raw...)
	}
	return b
}

// CloneBlocks deep-copies a block slice (nil stays nil).
func CloneBlocks(bs []Block) []Block {
	if bs == nil {
		return nil
	}
	out := make([]Block, len(bs))
	for i, b := range bs {
		out[i] = b.Clone()
	}
	return out
}

// TextOf concatenates the text blocks of content. A tool result is
// usually one text block of the whole output (20 KB and more), and several
// callers (hooks, compaction, the adapters) ask for it every step: with one
// text block its string is returned as it is, shared, not copied, and with
// more the result is built in one allocation.
func TextOf(content []Block) string {
	var n, texts, last int
	for i, b := range content {
		if b.Type == BlockText {
			n += len(b.Text)
			texts++
			last = i
		}
	}
	switch texts {
	case 0:
		return ""
	case 1:
		return content[last].Text
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, b := range content {
		if b.Type == BlockText {
			sb.WriteString(b.Text)
		}
	}
	return sb.String()
}

type wireBlock struct {
	Type       BlockType `json:"type"`
	Text       *string   `json:"text,omitempty"`
	Signature  string    `json:"signature,omitempty"`
	Redacted   string    `json:"redacted,omitempty"`
	ID         *CallID   `json:"id,omitempty"`
	Name       *string   `json:"name,omitempty"`
	Arguments  *string   `json:"arguments,omitempty"`
	ToolCallID *CallID   `json:"toolCallId,omitempty"`
	Content    *[]Block  `json:"content,omitempty"`
	IsError    *bool     `json:"isError,omitempty"`
	URL        *string   `json:"url,omitempty"`
	MimeType   string    `json:"mimeType,omitempty"`
	Cache      string    `json:"cache,omitempty"`
}

// MarshalJSON writes exactly the fields of the block's variant.
func (b Block) MarshalJSON() ([]byte, error) {
	w := wireBlock{Type: b.Type}
	switch b.Type {
	case BlockText:
		w.Text, w.Cache = &b.Text, b.Cache
	case BlockReasoning:
		w.Text, w.Signature, w.Redacted = &b.Text, b.Signature, b.Redacted
	case BlockToolCall:
		w.ID, w.Name, w.Arguments = &b.ID, &b.Name, &b.Arguments
	case BlockToolResult:
		content := b.Content
		if content == nil {
			content = []Block{}
		}
		w.ToolCallID, w.Content, w.IsError, w.Cache = &b.ToolCallID, &content, &b.IsError, b.Cache
	case BlockImage:
		w.URL, w.MimeType, w.Cache = &b.URL, b.MimeType, b.Cache
	default:
		if len(b.Raw) > 0 {
			return b.Raw, nil
		}
		if b.Type == "" {
			return nil, fmt.Errorf("llm: block has no type")
		}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads any variant; unknown types keep their raw JSON.
func (b *Block) UnmarshalJSON(data []byte) error {
	if fb, ok := decodeBlockFast(data); ok {
		*b = fb
		return nil
	}
	var w wireBlock
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("llm: decoding content block: %w", err)
	}
	if w.Type == "" {
		return fmt.Errorf("llm: content block without a type")
	}
	*b = Block{Type: w.Type, Signature: w.Signature, Redacted: w.Redacted, MimeType: w.MimeType, Cache: w.Cache}
	if w.Text != nil {
		b.Text = *w.Text
	}
	if w.ID != nil {
		b.ID = *w.ID
	}
	if w.Name != nil {
		b.Name = *w.Name
	}
	if w.Arguments != nil {
		b.Arguments = *w.Arguments
	}
	if w.ToolCallID != nil {
		b.ToolCallID = *w.ToolCallID
	}
	if w.Content != nil {
		b.Content = *w.Content
	}
	if w.IsError != nil {
		b.IsError = *w.IsError
	}
	if w.URL != nil {
		b.URL = *w.URL
	}
	switch b.Type {
	case BlockText, BlockReasoning, BlockToolCall, BlockToolResult, BlockImage:
	default:
		b.Raw = append(json.RawMessage(nil), bytes.TrimSpace(data)...)
	}
	return nil
}
