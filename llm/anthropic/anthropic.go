// Package anthropic is dsh's adapter for the Anthropic Messages API (and
// servers speaking it). It speaks HTTP and server-sent events itself through
// [sse.Client]: text, extended thinking with signatures round-tripped
// (redacted thinking included), tool_use / tool_result, prompt-cache
// breakpoints and usage (cache reads and writes).
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/sse"
)

// Adapter streams messages from one Anthropic-compatible provider. It is
// safe for concurrent use.
type Adapter struct {
	cfg    Config
	client sse.Client
	url    string
	wire   llm.WireCache[encoded]
}

// New returns an adapter for cfg.
func New(cfg Config) (*Adapter, error) {
	if cfg.Provider == "" {
		return nil, fmt.Errorf("anthropic: Config.Provider is required")
	}
	endpoint, err := sse.Endpoint("anthropic", cfg.Provider, cfg.BaseURL, "v1/messages")
	if err != nil {
		return nil, err
	}
	return &Adapter{
		cfg:    cfg,
		client: sse.Client{HTTP: cfg.HTTPClient, Provider: cfg.Provider, Options: cfg.Transport},
		url:    endpoint,
	}, nil
}

// Config returns the adapter's configuration.
func (a *Adapter) Config() Config { return a.cfg }

func (a *Adapter) wireModel(ref string) string {
	if p := a.cfg.Provider; p != "" && strings.HasPrefix(ref, p+"/") {
		return ref[len(p)+1:]
	}
	return ref
}

// Stream implements [llm.Adapter].
func (a *Adapter) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	body, err := a.client.Prepare(a.cfg.APIKey, a.cfg.APIKeyEnv, func() ([]byte, error) { return a.RequestBody(req) })
	if err != nil {
		return nil, err
	}
	version := a.cfg.Version
	if version == "" {
		version = DefaultVersion
	}
	// The version is a default: a configured header of the same name wins.
	headers := map[string]string{"Anthropic-Version": version}
	for k, v := range a.cfg.Headers {
		headers[http.CanonicalHeaderKey(k)] = v
	}
	p := sse.Post{URL: a.url, Body: body, Headers: headers, UserAgent: a.cfg.UserAgent}
	if a.cfg.APIKey != "" {
		p.AuthHeader, p.AuthValue = "X-Api-Key", a.cfg.APIKey
	}
	return a.client.Stream(ctx, p, func(e sse.Emitter) sse.Decoder {
		return &decoder{Emitter: e, client: &a.client}
	}), nil
}

// ---- response decoding ----

// eventWire is the part of a stream event the adapter reads.
type eventWire struct {
	Type     string
	Index    int
	Message  usageWire // message_start's message.usage
	HasMsg   bool
	Block    contentBlockWire
	HasBlock bool
	Delta    deltaWire
	HasDelta bool
	Usage    usageWire
	HasUsage bool
	Error    sse.ErrorEvent
	HasError bool
}

type contentBlockWire struct {
	Type, Text, Thinking, Signature, Data, ID, Name string
	Input                                           []byte
}

type deltaWire struct {
	Type, Text, Thinking, Signature, PartialJSON, StopReason string
}

type usageWire struct {
	Input, Output, CacheRead, CacheWrite             int
	HasInput, HasOutput, HasCacheRead, HasCacheWrite bool
}

type block struct {
	wire   int // the provider's content index
	typ    llm.BlockType
	id     string
	name   string
	sig    string
	red    string
	input  []byte // tool_use input from content_block_start
	buf    []byte
	deltas bool
	closed bool
}

type decoder struct {
	sse.Emitter
	client *sse.Client

	blocks  []block // position == harness index (ignored ones excluded)
	skipped []int   // wire indices of ignored blocks
	started bool
	stop    string
	usage   llm.Usage
	hasUse  bool

	sc sse.JSONScanner
	w  eventWire
}

func (d *decoder) Reset() {
	d.ResetEmitted()
	d.blocks = d.blocks[:0]
	d.skipped = d.skipped[:0]
	d.started = false
	d.stop = ""
	d.usage, d.hasUse = llm.Usage{}, false
}

// EndOfStream implements [sse.Ender]: a stream that ended after the
// message_delta carrying stop_reason (but before message_stop) is complete.
func (d *decoder) EndOfStream() (bool, error) {
	if !d.started || d.stop == "" {
		return false, nil
	}
	return true, d.end()
}

func (d *decoder) find(wire int) int {
	for i := range d.blocks {
		if d.blocks[i].wire == wire {
			return i
		}
	}
	return -1
}

func (d *decoder) isSkipped(wire int) bool {
	for _, w := range d.skipped {
		if w == wire {
			return true
		}
	}
	return false
}

func (d *decoder) Event(ev *sse.Event) (bool, error) {
	if skip, err := d.client.EventData(ev, d.parse); skip || err != nil {
		if err != nil && ev.Partial && d.started && d.stop != "" {
			// Cut off in an event after the finish reason (a usage
			// chunk): the message itself is complete.
			return true, d.end()
		}
		return false, err
	}
	w := &d.w
	typ := w.Type
	if typ == "" {
		typ = ev.Type
	}
	switch typ {
	case "message_start":
		d.started = true
		if w.HasMsg {
			d.addUsage(&w.Message)
		}
	case "content_block_start":
		if !w.HasBlock {
			return false, d.client.Errorf(llm.CodeProtocol, "content_block_start %d without a content_block", w.Index)
		}
		return false, d.blockStart(w.Index, &w.Block)
	case "content_block_delta":
		if !w.HasDelta {
			return false, d.client.Errorf(llm.CodeProtocol, "content_block_delta %d without a delta", w.Index)
		}
		return false, d.blockDelta(w.Index, &w.Delta)
	case "content_block_stop":
		i := d.find(w.Index)
		if i < 0 {
			if d.isSkipped(w.Index) {
				return false, nil
			}
			return false, d.client.Errorf(llm.CodeProtocol, "content_block_stop for unknown block %d", w.Index)
		}
		return false, d.close(i)
	case "message_delta":
		if w.Delta.StopReason != "" {
			d.stop = w.Delta.StopReason
		}
		if w.HasUsage {
			d.addUsage(&w.Usage)
		}
	case "message_stop":
		return true, d.end()
	case "error":
		if !w.HasError {
			w.Error = sse.ErrorEvent{Type: "api_error", Message: "error event without details"}
		}
		return false, d.client.StreamError(w.Error)
	case "ping":
	default:
		// Unknown events are ignored, as the API's versioning policy asks.
	}
	return false, nil
}

// addUsage folds a usage object: later non-null figures replace earlier
// ones (message_delta carries cumulative counts).
func (d *decoder) addUsage(u *usageWire) {
	d.hasUse = true
	if u.HasInput {
		d.usage.InputTokens = u.Input
	}
	if u.HasOutput {
		d.usage.OutputTokens = u.Output
	}
	if u.HasCacheRead {
		d.usage.CacheReadTokens = u.CacheRead
	}
	if u.HasCacheWrite {
		d.usage.CacheWriteTokens = u.CacheWrite
	}
}

func (d *decoder) blockStart(wire int, cb *contentBlockWire) error {
	if d.find(wire) >= 0 || d.isSkipped(wire) {
		return d.client.Errorf(llm.CodeProtocol, "content block %d started twice", wire)
	}
	var b block
	switch cb.Type {
	case "text":
		b = block{typ: llm.BlockText, buf: []byte(cb.Text)}
	case "thinking":
		b = block{typ: llm.BlockReasoning, buf: []byte(cb.Thinking), sig: cb.Signature}
	case "redacted_thinking":
		b = block{typ: llm.BlockReasoning, red: cb.Data}
	case "tool_use":
		b = block{typ: llm.BlockToolCall, id: cb.ID, name: cb.Name, input: cb.Input}
	default:
		d.skipped = append(d.skipped, wire)
		return nil
	}
	b.wire = wire
	d.blocks = append(d.blocks, b)
	i := len(d.blocks) - 1
	if err := d.Emit(llm.StartChunk(i, b.typ)); err != nil {
		return err
	}
	switch b.typ {
	case llm.BlockText:
		if cb.Text != "" {
			return d.Emit(llm.TextChunk(i, cb.Text))
		}
	case llm.BlockReasoning:
		if cb.Thinking != "" || cb.Signature != "" {
			return d.Emit(llm.Chunk{Type: llm.ChunkReasoningDelta, Index: i, Text: cb.Thinking, Signature: cb.Signature})
		}
	case llm.BlockToolCall:
		return d.Emit(llm.ToolDeltaChunk(i, llm.CallID(b.id), b.name, ""))
	}
	return nil
}

func (d *decoder) blockDelta(wire int, dw *deltaWire) error {
	i := d.find(wire)
	if i < 0 {
		if d.isSkipped(wire) {
			return nil
		}
		return d.client.Errorf(llm.CodeProtocol, "content_block_delta for unknown block %d", wire)
	}
	b := &d.blocks[i]
	if b.closed {
		return d.client.Errorf(llm.CodeProtocol, "content_block_delta after content_block_stop for block %d", wire)
	}
	switch dw.Type {
	case "text_delta":
		if b.typ != llm.BlockText {
			return d.mismatch(wire, dw.Type)
		}
		b.buf = append(b.buf, dw.Text...)
		return d.Emit(llm.TextChunk(i, dw.Text))
	case "thinking_delta":
		if b.typ != llm.BlockReasoning {
			return d.mismatch(wire, dw.Type)
		}
		b.buf = append(b.buf, dw.Thinking...)
		return d.Emit(llm.ReasoningChunk(i, dw.Thinking))
	case "signature_delta":
		if b.typ != llm.BlockReasoning {
			return d.mismatch(wire, dw.Type)
		}
		b.sig += dw.Signature
		return d.Emit(llm.Chunk{Type: llm.ChunkReasoningDelta, Index: i, Signature: b.sig})
	case "input_json_delta":
		if b.typ != llm.BlockToolCall {
			return d.mismatch(wire, dw.Type)
		}
		b.deltas = true
		b.buf = append(b.buf, dw.PartialJSON...)
		return d.Emit(llm.ToolDeltaChunk(i, llm.CallID(b.id), b.name, dw.PartialJSON))
	}
	return nil // citations_delta and future delta types
}

func (d *decoder) mismatch(wire int, delta string) error {
	return d.client.Errorf(llm.CodeProtocol, "%s for content block %d of another type", delta, wire)
}

func (d *decoder) close(i int) error {
	b := &d.blocks[i]
	if b.closed {
		return nil
	}
	var blk llm.Block
	switch b.typ {
	case llm.BlockText:
		blk = llm.Text(string(b.buf))
	case llm.BlockReasoning:
		blk = llm.Block{Type: llm.BlockReasoning, Text: string(b.buf), Signature: b.sig, Redacted: b.red}
	case llm.BlockToolCall:
		if b.id == "" {
			return d.client.Errorf(llm.CodeProtocol, "tool_use block %d (%q) arrived without an id", b.wire, b.name)
		}
		if b.name == "" {
			return d.client.Errorf(llm.CodeProtocol, "tool_use block %q arrived without a name", b.id)
		}
		args := string(b.buf)
		if !b.deltas {
			args = compactInput(b.input)
		}
		blk = llm.ToolCall(llm.CallID(b.id), b.name, args)
	}
	b.closed = true
	// The block now owns its text: keeping the buffer too would hold a
	// second copy of a long answer until the request ends.
	b.buf, b.input = nil, nil
	return d.Emit(llm.EndChunk(i, blk))
}

func compactInput(raw []byte) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return "{}"
	}
	return buf.String()
}

func (d *decoder) end() error {
	if !d.started {
		return d.client.Errorf(llm.CodeProtocol, "message_stop without message_start")
	}
	for i := range d.blocks {
		if err := d.close(i); err != nil {
			return err
		}
	}
	var kind string
	switch d.stop {
	case "tool_use":
		kind = llm.FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		kind = llm.FinishMaxTokens
	case "refusal":
		kind = llm.FinishRefusal
	default: // end_turn, stop_sequence, pause_turn, unknown
		kind = llm.FinishStop
	}
	if d.hasUse {
		if err := d.Emit(llm.UsageChunk(d.usage)); err != nil {
			return err
		}
	}
	return d.Emit(llm.FinishChunk(kind))
}
