package llm

import (
	"fmt"
)

// Assembler folds a chunk stream into content blocks. It is the one fold
// every consumer uses, so the loop, the UIs and the replay adapter agree on
// what a stream meant:
//
//   - blocks come out in the order their index was first seen;
//   - a block-end's block is authoritative and the first close of an index
//     wins (later deltas or closes for it are ignored);
//   - deltas without a block-start open an implicit block;
//   - an open block is synthesized from its deltas when the stream ends;
//   - usage and finish are last-wins; finish defaults to stop.
type Assembler struct {
	parts  []partial // in first-seen order
	byIdx  []int32   // index -> position+1 for small indices
	large  map[int]int
	usage  *Usage
	finish *FinishReason
}

type partial struct {
	index  int
	typ    BlockType
	text   []byte // not strings.Builder: partials move when the slice grows
	sig    string
	id     CallID
	name   string
	args   []byte
	closed bool
	block  Block
}

func (a *Assembler) lookup(index int) int {
	if index >= 0 && index < len(a.byIdx) {
		return int(a.byIdx[index]) - 1
	}
	if a.large != nil {
		if p, ok := a.large[index]; ok {
			return p
		}
	}
	return -1
}

func (a *Assembler) ensure(index int, typ BlockType) *partial {
	if p := a.lookup(index); p >= 0 {
		return &a.parts[p]
	}
	a.parts = append(a.parts, partial{index: index, typ: typ})
	pos := len(a.parts) - 1
	if index >= 0 && index < 64 {
		for len(a.byIdx) <= index {
			a.byIdx = append(a.byIdx, 0)
		}
		a.byIdx[index] = int32(pos + 1)
	} else {
		if a.large == nil {
			a.large = map[int]int{}
		}
		a.large[index] = pos
	}
	return &a.parts[pos]
}

// Push folds one chunk. It returns the completed block the first time a
// block-end closes an index.
func (a *Assembler) Push(c Chunk) (Block, bool, error) {
	switch c.Type {
	case ChunkBlockStart:
		a.ensure(c.Index, c.BlockType)
	case ChunkTextDelta, ChunkReasoningDelta:
		t := BlockText
		if c.Type == ChunkReasoningDelta {
			t = BlockReasoning
		}
		p := a.ensure(c.Index, t)
		if !p.closed {
			p.text = append(p.text, c.Text...)
			if c.Signature != "" {
				p.sig = c.Signature
			}
		}
	case ChunkToolCallDelta:
		p := a.ensure(c.Index, BlockToolCall)
		if !p.closed {
			p.id = c.ID
			if c.Name != "" {
				p.name = c.Name
			}
			p.args = append(p.args, c.ArgsDelta...)
		}
	case ChunkBlockEnd:
		if c.Block == nil {
			return Block{}, false, fmt.Errorf("llm: block-end chunk for index %d has no block", c.Index)
		}
		p := a.ensure(c.Index, c.Block.Type)
		if p.closed {
			return Block{}, false, nil
		}
		p.closed = true
		p.block = *c.Block
		// The adapter's block is the final content; the deltas gathered
		// so far are a second copy of it.
		p.text, p.args = nil, nil
		return p.block, true, nil
	case ChunkUsage:
		if c.Usage != nil {
			u := *c.Usage
			a.usage = &u
		}
	case ChunkFinish:
		f := FinishReason{Kind: FinishStop}
		if c.Finish != nil {
			f = *c.Finish
		}
		a.finish = &f
	default:
		return Block{}, false, fmt.Errorf("llm: unreachable variant in assembler: %q", c.Type)
	}
	return Block{}, false, nil
}

// Blocks returns the assembled content. It may be called repeatedly.
func (a *Assembler) Blocks() ([]Block, error) {
	out := make([]Block, 0, len(a.parts))
	for i := range a.parts {
		p := &a.parts[i]
		if p.closed {
			out = append(out, p.block)
			continue
		}
		switch p.typ {
		case BlockText:
			out = append(out, Block{Type: BlockText, Text: string(p.text)})
		case BlockReasoning:
			out = append(out, Block{Type: BlockReasoning, Text: string(p.text), Signature: p.sig})
		case BlockToolCall:
			id := p.id
			if id == "" {
				id = CallID(fmt.Sprintf("call-%d", p.index))
			}
			out = append(out, Block{Type: BlockToolCall, ID: id, Name: p.name, Arguments: string(p.args)})
		default:
			return nil, fmt.Errorf("llm: cannot assemble incomplete block of type %q", p.typ)
		}
	}
	return out, nil
}

// Message returns the assistant message built so far.
func (a *Assembler) Message() (Message, error) {
	bs, err := a.Blocks()
	return Message{Role: RoleAssistant, Content: bs}, err
}

// Usage returns the last usage chunk, or nil.
func (a *Assembler) Usage() *Usage { return a.usage }

// Finish returns the last finish reason; stop when none arrived.
func (a *Assembler) Finish() FinishReason {
	if a.finish == nil {
		return FinishReason{Kind: FinishStop}
	}
	return *a.finish
}

// Finished reports whether a finish chunk arrived.
func (a *Assembler) Finished() bool { return a.finish != nil }
