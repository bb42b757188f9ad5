package conformance

import (
	"fmt"
	"strings"

	"github.com/dshq/dsh/llm"
)

type blockState struct {
	typ    llm.BlockType
	ended  bool
	text   strings.Builder
	args   strings.Builder
	id     llm.CallID
	name   string
	sig    string
	deltas int
}

// Validate checks a chunk sequence (and the error that ended it, if any)
// against the adapter contract:
//
//   - every block opens with block-start, gets deltas of its own type only,
//     and closes with exactly one block-end whose block matches the deltas
//     (text, tool id, name and raw arguments, reasoning signature);
//   - block indices are distinct and first seen in increasing order;
//   - usage (at most one) comes before finish, and nothing follows finish;
//   - a successful stream ends with finish and closes every block;
//   - a failed stream ends with an *llm.Error and no finish.
func Validate(chunks []llm.Chunk, streamErr error) error {
	blocks := map[int]*blockState{}
	last := -1
	finished, usage := false, false
	for i, c := range chunks {
		if finished {
			return fmt.Errorf("chunk %d (%s) after finish", i, c.Type)
		}
		switch c.Type {
		case llm.ChunkBlockStart:
			if _, dup := blocks[c.Index]; dup {
				return fmt.Errorf("chunk %d: second block-start for index %d", i, c.Index)
			}
			if c.Index <= last {
				return fmt.Errorf("chunk %d: index %d not in first-seen order (after %d)", i, c.Index, last)
			}
			switch c.BlockType {
			case llm.BlockText, llm.BlockReasoning, llm.BlockToolCall:
			default:
				return fmt.Errorf("chunk %d: block-start of unexpected type %q", i, c.BlockType)
			}
			last = c.Index
			blocks[c.Index] = &blockState{typ: c.BlockType}
		case llm.ChunkTextDelta, llm.ChunkReasoningDelta, llm.ChunkToolCallDelta:
			b, ok := blocks[c.Index]
			if !ok {
				return fmt.Errorf("chunk %d: %s for index %d before its block-start", i, c.Type, c.Index)
			}
			if b.ended {
				return fmt.Errorf("chunk %d: %s for index %d after its block-end", i, c.Type, c.Index)
			}
			want := map[llm.ChunkType]llm.BlockType{
				llm.ChunkTextDelta: llm.BlockText, llm.ChunkReasoningDelta: llm.BlockReasoning, llm.ChunkToolCallDelta: llm.BlockToolCall,
			}[c.Type]
			if b.typ != want {
				return fmt.Errorf("chunk %d: %s for a %s block", i, c.Type, b.typ)
			}
			b.deltas++
			b.text.WriteString(c.Text)
			if c.Signature != "" {
				b.sig = c.Signature
			}
			if c.Type == llm.ChunkToolCallDelta {
				b.id = c.ID
				if c.Name != "" {
					b.name = c.Name
				}
				b.args.WriteString(c.ArgsDelta)
			}
		case llm.ChunkBlockEnd:
			b, ok := blocks[c.Index]
			if !ok {
				return fmt.Errorf("chunk %d: block-end for index %d before its block-start", i, c.Index)
			}
			if b.ended {
				return fmt.Errorf("chunk %d: second block-end for index %d", i, c.Index)
			}
			b.ended = true
			if c.Block == nil {
				return fmt.Errorf("chunk %d: block-end without a block", i)
			}
			if err := matches(b, *c.Block); err != nil {
				return fmt.Errorf("chunk %d: block-end for index %d: %w", i, c.Index, err)
			}
		case llm.ChunkUsage:
			if usage {
				return fmt.Errorf("chunk %d: second usage chunk", i)
			}
			usage = true
			if c.Usage == nil {
				return fmt.Errorf("chunk %d: usage chunk without usage", i)
			}
			u := *c.Usage
			if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 || u.ReasoningTokens < 0 {
				return fmt.Errorf("chunk %d: negative usage %+v", i, u)
			}
		case llm.ChunkFinish:
			finished = true
			if c.Finish == nil {
				return fmt.Errorf("chunk %d: finish without a reason", i)
			}
		default:
			return fmt.Errorf("chunk %d: unknown chunk type %q", i, c.Type)
		}
	}
	if streamErr != nil {
		if finished {
			return fmt.Errorf("the stream failed (%v) after a finish chunk", streamErr)
		}
		if _, ok := llm.AsError(streamErr); !ok {
			return fmt.Errorf("stream error %T (%v) is not an *llm.Error", streamErr, streamErr)
		}
		return nil
	}
	if !finished {
		return fmt.Errorf("the stream ended without a finish chunk or an error")
	}
	for idx, b := range blocks {
		if !b.ended {
			return fmt.Errorf("block %d was never closed", idx)
		}
	}
	return nil
}

func matches(b *blockState, blk llm.Block) error {
	if blk.Type != b.typ {
		return fmt.Errorf("block type %q, started as %q", blk.Type, b.typ)
	}
	switch b.typ {
	case llm.BlockText:
		if blk.Text != b.text.String() {
			return fmt.Errorf("text %q differs from the deltas %q", blk.Text, b.text.String())
		}
	case llm.BlockReasoning:
		if blk.Text != b.text.String() {
			return fmt.Errorf("reasoning %q differs from the deltas %q", blk.Text, b.text.String())
		}
		if blk.Signature != b.sig {
			return fmt.Errorf("signature %q differs from the deltas' %q", blk.Signature, b.sig)
		}
	case llm.BlockToolCall:
		if blk.ID == "" || blk.Name == "" {
			return fmt.Errorf("tool call without id or name: %+v", blk)
		}
		if b.deltas > 0 && (blk.ID != b.id || blk.Name != b.name) {
			return fmt.Errorf("tool call %s/%s differs from the deltas' %s/%s", blk.ID, blk.Name, b.id, b.name)
		}
		if d := b.args.String(); d != "" && blk.Arguments != d {
			return fmt.Errorf("arguments %q differ from the deltas %q", blk.Arguments, d)
		}
	}
	return nil
}
