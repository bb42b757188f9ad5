package session

import (
	"encoding/json"
	"fmt"

	"github.com/dshq/dsh/llm"
)

type node struct {
	seq      int64
	typ      string
	msg      llm.Message
	has      bool // produces a message (empty assistant messages do not)
	replaces bool // the event replaced earlier nodes (a pruned result, a summary)
	// patched: msg is not what the event derives (a rewritten call's
	// arguments were patched in), so a snapshot records msg itself.
	patched bool
}

// deriver folds the log into the surface and the message history, one event
// at a time. out is append-only while the surface only grows; a replace or
// a tool-argument rewrite marks it dirty and the next read rebuilds it.
// pair turns out into the history the model sees (see pairing).
type deriver struct {
	processed int // events folded so far
	nodes     []node
	out       []llm.Message
	dirty     bool
	// dropped collects the seqs that replaces took off the surface since
	// the last Session.Release, which drops their payloads.
	dropped []int64
	err     error
	pair    pairing
}

// messages folds what is new in s (whose lock is held) and returns the
// history.
func (d *deriver) messages(s *Session) ([]llm.Message, error) {
	if d.err != nil {
		return nil, d.err
	}
	for ; d.processed < s.n; d.processed++ {
		if err := d.fold(s.at(d.processed)); err != nil {
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
		d.pair.reset()
	}
	return d.pair.view(d.out), nil
}

// UnansweredText is the model-facing content of the result the derived
// history gives a tool call that has none in the log. The loop answers
// every call before its step ends; logs written by older builds may hold a
// cancelled step's calls without results.
const UnansweredText = "No result was recorded for this tool call: it did not run (the turn was cancelled or the step failed)."

// pairing keeps the derived history in the shape every provider accepts:
// an assistant message's tool calls are followed by their results and by
// nothing else until the last of them. The log itself can break that shape
// in two ways, both from older builds (or foreign writers):
//
//   - a message recorded while the calls were in flight (context injected
//     mid-tool) sits between a call and its result: it is moved after the
//     results;
//   - a call has no result at all (a cancelled step): once the history has
//     moved on (a later message that is not a result), the call gets a
//     synthetic error result (UnansweredText) right after the real ones.
//
// A call whose result may still come (the newest assistant message, with
// only results after it) is left alone. The log is never changed; only the
// view is.
//
// Normal histories are returned as the deriver's own slice, unchanged and
// without copying. Work is incremental: out[:in] is settled (it ends where
// no call awaits a result) and never looked at again until a rebuild.
type pairing struct {
	in    int           // out[:in] is settled
	fixed []llm.Message // the view of out[:in]; nil while that is out[:in] itself
	// scratch of the last scan
	open []llm.CallID // calls without a result
	res  []int        // indexes of result messages
	def  []int        // indexes of other messages, to move after the results
}

func (p *pairing) reset() {
	p.in, p.fixed = 0, nil
}

// view returns the model's history for out (clipped: appending is safe).
func (p *pairing) view(out []llm.Message) []llm.Message {
	tailChanged := false
	for p.in < len(out) {
		i := p.in
		if !hasToolCall(out[i]) {
			if p.fixed != nil {
				p.fixed = append(p.fixed, out[i])
			}
			p.in++
			continue
		}
		end, settled, changed := p.scan(out, i)
		if !settled {
			tailChanged = changed
			break
		}
		switch {
		case changed:
			if p.fixed == nil {
				p.fixed = append(make([]llm.Message, 0, len(out)+len(p.open)), out[:i]...)
			}
			p.fixed = p.emit(p.fixed, out, i)
		case p.fixed != nil:
			p.fixed = append(p.fixed, out[i:end]...)
		}
		p.in = end
	}
	if p.fixed == nil && !tailChanged {
		return out[:len(out):len(out)]
	}
	if p.in == len(out) {
		return p.fixed[:len(p.fixed):len(p.fixed)]
	}
	prefix := p.fixed
	if prefix == nil {
		prefix = out[:p.in]
	}
	v := make([]llm.Message, 0, len(prefix)+len(out)-p.in+len(p.open))
	v = append(v, prefix...)
	if tailChanged {
		return p.emit(v, out, p.in)
	}
	return append(v, out[p.in:]...)
}

// scan reads the tool phase that starts at out[s], an assistant message
// with tool calls, into the scratch. It returns where the phase ends,
// whether it is over (every call answered, or a later assistant message),
// and whether its view differs from out[s:end].
func (p *pairing) scan(out []llm.Message, s int) (end int, settled, changed bool) {
	p.open, p.res, p.def = p.open[:0], p.res[:0], p.def[:0]
	for _, b := range out[s].Content {
		if b.Type == llm.BlockToolCall {
			p.open = append(p.open, b.ID)
		}
	}
	for j := s + 1; j < len(out); j++ {
		m := out[j]
		switch {
		case isResult(m):
			p.res = append(p.res, j)
			for _, b := range m.Content {
				if b.Type != llm.BlockToolResult {
					continue
				}
				for k, id := range p.open {
					if id == b.ToolCallID {
						p.open = append(p.open[:k], p.open[k+1:]...)
						break
					}
				}
			}
			if len(p.open) == 0 {
				return j + 1, true, len(p.def) > 0
			}
		case m.Role == llm.RoleAssistant:
			// The model was asked again: the open calls never got a result.
			return j, true, true
		default:
			p.def = append(p.def, j)
		}
	}
	// The newest phase. With only results after the calls, the rest may
	// still come (tools in flight); a later message means they will not.
	return len(out), false, len(p.def) > 0
}

// emit appends the view of the phase just scanned (starting at out[s]): the
// calls, their results, synthetic results for calls without one, then the
// messages recorded in between.
func (p *pairing) emit(v, out []llm.Message, s int) []llm.Message {
	v = append(v, out[s])
	for _, j := range p.res {
		v = append(v, out[j])
	}
	for _, id := range p.open {
		v = append(v, llm.Message{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockToolResult, ToolCallID: id,
			Content: []llm.Block{llm.Text(UnansweredText)}, IsError: true}}})
	}
	for _, j := range p.def {
		v = append(v, out[j])
	}
	return v
}

func hasToolCall(m llm.Message) bool {
	if m.Role != llm.RoleAssistant {
		return false
	}
	for _, b := range m.Content {
		if b.Type == llm.BlockToolCall {
			return true
		}
	}
	return false
}

// isResult reports whether m carries tool results (derived results are a
// user message with one tool_result block).
func isResult(m llm.Message) bool {
	if m.Role != llm.RoleUser {
		return false
	}
	for _, b := range m.Content {
		if b.Type == llm.BlockToolResult {
			return true
		}
	}
	return false
}

func (d *deriver) fold(e Event) error {
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
	n := node{seq: e.Seq, typ: e.Type, msg: msg, has: has, replaces: e.SurfaceOp.Replace}
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
	for _, gone := range d.nodes[i : j+1] {
		d.dropped = append(d.dropped, gone.seq)
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
				n.patched = true
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
