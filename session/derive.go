package session

import (
	"encoding/json"
	"fmt"

	"github.com/dshq/dsh/llm"
)

type node struct {
	seq int64
	msg llm.Message
	has bool // produces a message (empty assistant messages do not)
}

// deriver folds the log into the surface and the message history, one event
// at a time. out is append-only while the surface only grows; a replace or
// a tool-argument rewrite marks it dirty and the next read rebuilds it.
type deriver struct {
	processed int // events folded so far
	nodes     []node
	out       []llm.Message
	dirty     bool
	err       error
}

func (d *deriver) messages(events []Event) ([]llm.Message, error) {
	if d.err != nil {
		return nil, d.err
	}
	for ; d.processed < len(events); d.processed++ {
		if err := d.fold(events, events[d.processed]); err != nil {
			d.err = err
			return nil, err
		}
	}
	if d.dirty {
		d.out = d.out[:0:0]
		for _, n := range d.nodes {
			if n.has {
				d.out = append(d.out, n.msg)
			}
		}
		d.dirty = false
	}
	return d.out[:len(d.out):len(d.out)], nil
}

func (d *deriver) fold(events []Event, e Event) error {
	if e.Type == TypeToolCall {
		return d.noteRewrite(e)
	}
	if !IsSurface(e) {
		return nil
	}
	msg, has, err := d.derive(e)
	if err != nil {
		return err
	}
	n := node{seq: e.Seq, msg: msg, has: has}
	if !e.SurfaceOp.Replace {
		d.nodes = append(d.nodes, n)
		if has && !d.dirty {
			d.out = append(d.out, msg)
		}
		return nil
	}
	i, j := d.pos(e.SurfaceOp.Start), d.pos(e.SurfaceOp.End)
	if i < 0 {
		return fmt.Errorf("session: surface replace: start seq %d not found in surface", e.SurfaceOp.Start)
	}
	if j < 0 {
		return fmt.Errorf("session: surface replace: end seq %d not found in surface", e.SurfaceOp.End)
	}
	if i > j {
		return fmt.Errorf("session: surface replace: start seq %d (index %d) is after end seq %d (index %d)", e.SurfaceOp.Start, i, e.SurfaceOp.End, j)
	}
	nodes := make([]node, 0, len(d.nodes)-(j-i))
	nodes = append(nodes, d.nodes[:i]...)
	nodes = append(nodes, n)
	nodes = append(nodes, d.nodes[j+1:]...)
	d.nodes = nodes
	d.dirty = true
	return nil
}

func (d *deriver) pos(seq int64) int {
	for i := len(d.nodes) - 1; i >= 0; i-- {
		if d.nodes[i].seq == seq {
			return i
		}
	}
	return -1
}

// noteRewrite patches the tool-call block of the assistant message that
// issued a rewritten call, so the next request shows the effective arguments.
func (d *deriver) noteRewrite(e Event) error {
	var tc ToolCall
	if err := json.Unmarshal(e.Data, &tc); err != nil {
		return fmt.Errorf("session: decoding tool/call (seq %d): %w", e.Seq, err)
	}
	if tc.OriginalArguments == nil {
		return nil
	}
	// A tool/call always follows the assistant message that issued it, so
	// the newest assistant node with this id is the one to patch. Nothing
	// is remembered for later messages: models may reuse a call id in a
	// later step, and that call was not rewritten.
	for i := len(d.nodes) - 1; i >= 0; i-- {
		n := &d.nodes[i]
		if !n.has || n.msg.Role != llm.RoleAssistant {
			continue
		}
		for k, b := range n.msg.Content {
			if b.Type == llm.BlockToolCall && b.ID == tc.CallID {
				content := append([]llm.Block(nil), n.msg.Content...)
				content[k].Arguments = tc.Arguments
				n.msg = llm.Message{Role: n.msg.Role, Content: content}
				d.dirty = true
				return nil
			}
		}
	}
	return nil
}

// typedMessage derives the message of a live surface append from its typed
// payload (deep-copied); nil when the payload is not a known type.
func typedMessage(typ string, data any) *llm.Message {
	var m llm.Message
	switch v := data.(type) {
	case Prompt:
		content, ok := wireBlocks(v.Content)
		if !ok {
			return nil
		}
		switch typ {
		case TypeUserMessage:
			m = llm.Message{Role: llm.RoleUser, Content: content}
		case TypeContextMessage:
			m = envelope("context", v.Source, content)
		default:
			return nil
		}
	case AssistantMessage:
		if typ != TypeAssistantMessage {
			return nil
		}
		content, ok := wireBlocks(v.Content)
		if !ok {
			return nil
		}
		m = llm.Message{Role: llm.RoleAssistant, Content: content}
	case ToolResult:
		if typ != TypeToolResult {
			return nil
		}
		content, ok := wireBlocks(v.Content)
		if !ok {
			return nil
		}
		if content == nil {
			content = []llm.Block{}
		}
		m = llm.Message{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockToolResult, ToolCallID: v.CallID, Content: content, IsError: v.IsError}}}
	case Steering:
		if typ != TypeSteeringMessage {
			return nil
		}
		content, ok := wireBlocks(v.Content)
		if !ok {
			return nil
		}
		m = envelope("steering", v.Source, content)
	default:
		return nil
	}
	return &m
}

// wireBlocks deep-copies content as the log will hold it: each block keeps
// only the fields its variant writes to JSON (see llm.Block.MarshalJSON),
// so the history derived from a live append is the one a resumed session
// derives from disk. ok is false for plugin blocks, whose decoded form
// depends on their raw JSON; the caller then derives from the log.
func wireBlocks(bs []llm.Block) (out []llm.Block, ok bool) {
	if bs == nil {
		return nil, true
	}
	out = make([]llm.Block, len(bs))
	for i, b := range bs {
		switch b.Type {
		case llm.BlockText:
			out[i] = llm.Block{Type: b.Type, Text: b.Text, Cache: b.Cache}
		case llm.BlockReasoning:
			out[i] = llm.Block{Type: b.Type, Text: b.Text, Signature: b.Signature, Redacted: b.Redacted}
		case llm.BlockToolCall:
			out[i] = llm.Block{Type: b.Type, ID: b.ID, Name: b.Name, Arguments: b.Arguments}
		case llm.BlockToolResult:
			inner, ok := wireBlocks(b.Content)
			if !ok {
				return nil, false
			}
			if inner == nil {
				inner = []llm.Block{}
			}
			out[i] = llm.Block{Type: b.Type, ToolCallID: b.ToolCallID, Content: inner, IsError: b.IsError, Cache: b.Cache}
		case llm.BlockImage:
			out[i] = llm.Block{Type: b.Type, URL: b.URL, MimeType: b.MimeType, Cache: b.Cache}
		default:
			return nil, false
		}
	}
	return out, true
}

func (d *deriver) derive(e Event) (llm.Message, bool, error) {
	if e.msg != nil {
		m := *e.msg
		return m, m.Role != llm.RoleAssistant || len(m.Content) > 0, nil
	}
	switch e.Type {
	case TypeUserMessage:
		p, err := Decode[Prompt](e)
		return llm.Message{Role: llm.RoleUser, Content: p.Content}, err == nil, err
	case TypeAssistantMessage:
		a, err := Decode[AssistantMessage](e)
		if err != nil {
			return llm.Message{}, false, err
		}
		return llm.Message{Role: llm.RoleAssistant, Content: a.Content}, len(a.Content) > 0, nil
	case TypeToolResult:
		r, err := Decode[ToolResult](e)
		if err != nil {
			return llm.Message{}, false, err
		}
		content := r.Content
		if content == nil {
			content = []llm.Block{}
		}
		return llm.Message{Role: llm.RoleUser, Content: []llm.Block{{
			Type: llm.BlockToolResult, ToolCallID: r.CallID, Content: content, IsError: r.IsError,
		}}}, true, nil
	case TypeContextMessage:
		p, err := Decode[Prompt](e)
		return envelope("context", p.Source, p.Content), err == nil, err
	case TypeSteeringMessage:
		p, err := Decode[Steering](e)
		return envelope("steering", p.Source, p.Content), err == nil, err
	}
	return llm.Message{}, false, nil
}

// envelope wraps content in <tag source="kind"> … </tag> text blocks. Only
// the source kind is rendered: plugin names and agent ids stay out of the
// model's view.
func envelope(tag string, src llm.Source, content []llm.Block) llm.Message {
	kind, _ := json.Marshal(src.OrUser().Kind)
	out := make([]llm.Block, 0, len(content)+2)
	out = append(out, llm.Text("<"+tag+" source="+string(kind)+">"))
	out = append(out, content...)
	out = append(out, llm.Text("</"+tag+">"))
	return llm.Message{Role: llm.RoleUser, Content: out}
}
