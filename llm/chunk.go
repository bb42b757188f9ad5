package llm

import (
	"encoding/json"
	"fmt"
)

// ChunkType discriminates stream chunks. The set is closed.
type ChunkType string

// Chunk types.
const (
	ChunkBlockStart     ChunkType = "block-start"
	ChunkTextDelta      ChunkType = "text-delta"
	ChunkReasoningDelta ChunkType = "reasoning-delta"
	ChunkToolCallDelta  ChunkType = "tool-call-delta"
	ChunkBlockEnd       ChunkType = "block-end"
	ChunkUsage          ChunkType = "usage"
	ChunkFinish         ChunkType = "finish"
)

// Chunk is one element of a model stream. Adapters must emit usage (if any)
// before finish and nothing after finish; tool arguments stay raw JSON text.
type Chunk struct {
	Type      ChunkType     `json:"type"`
	Index     int           `json:"index"`
	BlockType BlockType     `json:"blockType,omitempty"`
	Text      string        `json:"text,omitempty"`
	ID        CallID        `json:"id,omitempty"`
	Name      string        `json:"name,omitempty"`
	ArgsDelta string        `json:"argumentsDelta,omitempty"`
	Signature string        `json:"signature,omitempty"`
	Block     *Block        `json:"block,omitempty"`
	Usage     *Usage        `json:"usage,omitempty"`
	Finish    *FinishReason `json:"reason,omitempty"`
}

// Constructors keep adapters and scripts short.

func StartChunk(i int, t BlockType) Chunk {
	return Chunk{Type: ChunkBlockStart, Index: i, BlockType: t}
}
func TextChunk(i int, s string) Chunk { return Chunk{Type: ChunkTextDelta, Index: i, Text: s} }
func ReasoningChunk(i int, s string) Chunk {
	return Chunk{Type: ChunkReasoningDelta, Index: i, Text: s}
}
func ToolDeltaChunk(i int, id CallID, name, delta string) Chunk {
	return Chunk{Type: ChunkToolCallDelta, Index: i, ID: id, Name: name, ArgsDelta: delta}
}
func EndChunk(i int, b Block) Chunk { return Chunk{Type: ChunkBlockEnd, Index: i, Block: &b} }
func UsageChunk(u Usage) Chunk      { return Chunk{Type: ChunkUsage, Usage: &u} }
func FinishChunk(kind string) Chunk {
	return Chunk{Type: ChunkFinish, Finish: &FinishReason{Kind: kind}}
}
func ErrorFinish(msg, code string) Chunk {
	return Chunk{Type: ChunkFinish, Finish: &FinishReason{Kind: FinishError, Message: msg, Code: code}}
}

// MarshalJSON writes the chunk in its variant's wire shape.
func (c Chunk) MarshalJSON() ([]byte, error) {
	type index struct {
		Type  ChunkType `json:"type"`
		Index int       `json:"index"`
	}
	switch c.Type {
	case ChunkBlockStart:
		return json.Marshal(struct {
			index
			BlockType BlockType `json:"blockType"`
		}{index{c.Type, c.Index}, c.BlockType})
	case ChunkTextDelta, ChunkReasoningDelta:
		return json.Marshal(struct {
			index
			Text      string `json:"text"`
			Signature string `json:"signature,omitempty"`
		}{index{c.Type, c.Index}, c.Text, c.Signature})
	case ChunkToolCallDelta:
		return json.Marshal(struct {
			index
			ID        CallID `json:"id"`
			Name      string `json:"name,omitempty"`
			ArgsDelta string `json:"argumentsDelta"`
		}{index{c.Type, c.Index}, c.ID, c.Name, c.ArgsDelta})
	case ChunkBlockEnd:
		if c.Block == nil {
			return nil, fmt.Errorf("llm: block-end chunk without a block")
		}
		return json.Marshal(struct {
			index
			Block *Block `json:"block"`
		}{index{c.Type, c.Index}, c.Block})
	case ChunkUsage:
		u := Usage{}
		if c.Usage != nil {
			u = *c.Usage
		}
		return json.Marshal(struct {
			Type  ChunkType `json:"type"`
			Usage Usage     `json:"usage"`
		}{c.Type, u})
	case ChunkFinish:
		f := FinishReason{Kind: FinishStop}
		if c.Finish != nil {
			f = *c.Finish
		}
		return json.Marshal(struct {
			Type   ChunkType    `json:"type"`
			Reason FinishReason `json:"reason"`
		}{c.Type, f})
	}
	return nil, fmt.Errorf("llm: unreachable variant in chunk encoder: %q", c.Type)
}

// UnmarshalJSON reads any chunk variant; an unknown type is an error (the
// protocol is closed).
func (c *Chunk) UnmarshalJSON(data []byte) error {
	type plain Chunk
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("llm: decoding stream chunk: %w", err)
	}
	switch p.Type {
	case ChunkBlockStart, ChunkTextDelta, ChunkReasoningDelta, ChunkToolCallDelta, ChunkBlockEnd, ChunkUsage, ChunkFinish:
	default:
		return fmt.Errorf("llm: unreachable variant in stream chunk: %s", data)
	}
	*c = Chunk(p)
	return nil
}
