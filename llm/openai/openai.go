// Package openai is dsh's adapter for OpenAI-compatible Chat Completions
// APIs (OpenAI, DeepSeek and any server speaking the same wire format). It
// speaks HTTP and server-sent events itself through [sse.Client]: streaming
// text, reasoning_content (DeepSeek thinking mode, with its passback rule),
// tool-call deltas assembled by index and id, tool_choice, output limits,
// temperature, stop sequences and usage including cached-prompt tokens.
package openai

import (
	"bytes"
	"context"
	"fmt"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/sse"
)

// Adapter streams chat completions from one provider. It is safe for
// concurrent use.
type Adapter struct {
	cfg    Config
	client sse.Client
	url    string
	wire   llm.WireCache[encoded]
	tails  tailCache
}

// New returns an adapter for cfg.
func New(cfg Config) (*Adapter, error) {
	if cfg.Provider == "" {
		return nil, fmt.Errorf("openai: Config.Provider is required")
	}
	endpoint, err := sse.Endpoint("openai", cfg.Provider, cfg.BaseURL, "chat/completions")
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

// Stream implements [llm.Adapter]. Errors found before any I/O (a missing
// key, prefill, unusable tool schemas) are returned directly; everything
// else ends the stream with an [*llm.Error].
func (a *Adapter) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	if len(req.Prefill) > 0 {
		return nil, a.badRequest("prefill is not supported by the Chat Completions adapter")
	}
	body, err := a.client.Prepare(a.cfg.APIKey, a.cfg.APIKeyEnv, func() ([]byte, error) { return a.RequestBody(req) })
	if err != nil {
		return nil, err
	}
	p := sse.Post{URL: a.url, Body: body, Headers: a.cfg.Headers, UserAgent: a.cfg.UserAgent}
	if a.cfg.APIKey != "" {
		p.AuthHeader, p.AuthValue = "Authorization", "Bearer "+a.cfg.APIKey
	}
	return a.client.Stream(ctx, p, func(e sse.Emitter) sse.Decoder {
		return &decoder{Emitter: e, client: &a.client}
	}), nil
}

// ---- response decoding ----

// chunkWire is the part of a chat.completion.chunk the adapter reads.
type chunkWire struct {
	Choices  []choiceWire
	Usage    usageWire
	HasUsage bool
	Error    *sse.ErrorEvent
}

type choiceWire struct {
	Index        int
	Delta        deltaWire
	FinishReason string
}

type deltaWire struct {
	Content          string
	ReasoningContent string
	Reasoning        string
	Refusal          string
	ToolCalls        []toolDeltaWire
}

type toolDeltaWire struct {
	Index     int
	HasIndex  bool
	ID        string
	Name      string
	Arguments string
}

type usageWire struct {
	PromptTokens, CompletionTokens, ReasoningTokens int
	Cached, Hit, Miss                               int
	HasCached, HasHit, HasMiss                      bool
}

type block struct {
	typ  llm.BlockType
	wire int // tool_calls[].index
	id   string
	name string
	buf  []byte // text, reasoning or arguments
}

type decoder struct {
	sse.Emitter
	client *sse.Client

	blocks    []block // position == harness index
	text      int
	reasoning int
	finish    string
	refusal   bool
	usage     llm.Usage
	hasUsage  bool

	sc sse.JSONScanner
	w  chunkWire
}

func (d *decoder) Reset() {
	d.ResetEmitted()
	d.blocks = d.blocks[:0]
	d.text, d.reasoning = -1, -1
	d.finish, d.refusal = "", false
	d.usage, d.hasUsage = llm.Usage{}, false
}

// EndOfStream implements [sse.Ender]: a stream that ended after its
// finish_reason (but before [DONE], or before a usage chunk that was still
// to come) is complete.
func (d *decoder) EndOfStream() (bool, error) {
	if d.finish == "" {
		return false, nil
	}
	return true, d.end()
}

func (d *decoder) open(t llm.BlockType) (int, error) {
	d.blocks = append(d.blocks, block{typ: t})
	i := len(d.blocks) - 1
	return i, d.Emit(llm.StartChunk(i, t))
}

func (d *decoder) Event(ev *sse.Event) (bool, error) {
	if string(bytes.TrimSpace(ev.Data)) == "[DONE]" {
		return true, d.end()
	}
	if skip, err := d.client.EventData(ev, d.parse); skip || err != nil {
		if err != nil && ev.Partial && d.finish != "" {
			// Cut off in an event after the finish reason (a usage
			// chunk): the message itself is complete.
			return true, d.end()
		}
		return false, err
	}
	w := &d.w
	if w.Error != nil {
		return false, d.client.StreamError(*w.Error)
	}
	for i := range w.Choices {
		ch := &w.Choices[i]
		if ch.Index != 0 {
			continue
		}
		if err := d.delta(&ch.Delta); err != nil {
			return false, err
		}
		if ch.FinishReason != "" {
			d.finish = ch.FinishReason
		}
	}
	if w.HasUsage {
		d.usage, d.hasUsage = mapUsage(&w.Usage), true
	}
	return false, nil
}

func (d *decoder) delta(dw *deltaWire) error {
	reasoning := dw.ReasoningContent
	if reasoning == "" {
		reasoning = dw.Reasoning
	}
	if reasoning != "" {
		if d.reasoning < 0 {
			i, err := d.open(llm.BlockReasoning)
			d.reasoning = i
			if err != nil {
				return err
			}
		}
		b := &d.blocks[d.reasoning]
		b.buf = append(b.buf, reasoning...)
		if err := d.Emit(llm.ReasoningChunk(d.reasoning, reasoning)); err != nil {
			return err
		}
	}
	content := dw.Content
	if dw.Refusal != "" {
		d.refusal = true
		content += dw.Refusal
	}
	if content != "" {
		if d.text < 0 {
			i, err := d.open(llm.BlockText)
			d.text = i
			if err != nil {
				return err
			}
		}
		b := &d.blocks[d.text]
		b.buf = append(b.buf, content...)
		if err := d.Emit(llm.TextChunk(d.text, content)); err != nil {
			return err
		}
	}
	for pos := range dw.ToolCalls {
		tc := &dw.ToolCalls[pos]
		idx := d.toolCall(tc)
		if idx < 0 {
			i, err := d.open(llm.BlockToolCall)
			d.blocks[i].wire = pos
			if tc.HasIndex {
				d.blocks[i].wire = tc.Index
			}
			idx = i
			if err != nil {
				return err
			}
		}
		b := &d.blocks[idx]
		if tc.ID != "" {
			b.id = tc.ID
		}
		if tc.Name != "" {
			b.name = tc.Name
		}
		b.buf = append(b.buf, tc.Arguments...)
		if err := d.Emit(llm.ToolDeltaChunk(idx, llm.CallID(b.id), b.name, tc.Arguments)); err != nil {
			return err
		}
	}
	return nil
}

// toolCall returns the harness index of the tool call a tool_calls delta
// continues, or -1 when the delta starts a new call. A delta with an index
// belongs to the call most recently opened at that index, one without (some
// gateways omit it) to the last call opened. But a delta carrying an id
// other than that call's own starts a new call: servers that put every
// parallel call at index 0, or send no index at all, tell calls apart only
// by their ids. So does a delta naming another function than the call's:
// a call is never renamed. Deltas without an id or name (argument
// fragments), and an id or name arriving after the call opened without
// one, continue the call.
func (d *decoder) toolCall(tc *toolDeltaWire) int {
	for i := len(d.blocks) - 1; i >= 0; i-- {
		b := &d.blocks[i]
		if b.typ != llm.BlockToolCall || (tc.HasIndex && b.wire != tc.Index) {
			continue
		}
		if (tc.ID != "" && b.id != "" && tc.ID != b.id) || (tc.Name != "" && b.name != "" && tc.Name != b.name) {
			return -1
		}
		return i
	}
	return -1
}

// end runs at [DONE]: close every block, then usage, then finish.
func (d *decoder) end() error {
	for i := range d.blocks {
		b := &d.blocks[i]
		if b.typ != llm.BlockToolCall {
			continue
		}
		if b.id == "" {
			return d.client.Errorf(llm.CodeProtocol, "tool call %d (%q) arrived without an id", b.wire, b.name)
		}
		if b.name == "" {
			return d.client.Errorf(llm.CodeProtocol, "tool call %q arrived without a function name", b.id)
		}
	}
	var kind string
	switch d.finish {
	case "", "stop", "end_turn", "eos":
		kind = llm.FinishStop
		if d.refusal {
			kind = llm.FinishRefusal
		}
	case "tool_calls", "function_call":
		kind = llm.FinishToolCalls
	case "length":
		kind = llm.FinishMaxTokens
	case "content_filter":
		kind = llm.FinishRefusal
	case "insufficient_system_resource", "error":
		return d.client.Errorf(llm.CodeServer, "model stopped: %s", d.finish)
	default:
		kind = llm.FinishStop
	}
	for i := range d.blocks {
		b := &d.blocks[i]
		var blk llm.Block
		switch b.typ {
		case llm.BlockToolCall:
			blk = llm.ToolCall(llm.CallID(b.id), b.name, string(b.buf))
		default:
			blk = llm.Block{Type: b.typ, Text: string(b.buf)}
		}
		// The block now owns its text: keeping the buffer too would hold a
		// second copy of a long answer until the request ends.
		b.buf = nil
		if err := d.Emit(llm.EndChunk(i, blk)); err != nil {
			return err
		}
	}
	if d.hasUsage {
		if err := d.Emit(llm.UsageChunk(d.usage)); err != nil {
			return err
		}
	}
	return d.Emit(llm.FinishChunk(kind))
}

func mapUsage(u *usageWire) llm.Usage {
	out := llm.Usage{OutputTokens: u.CompletionTokens, ReasoningTokens: u.ReasoningTokens}
	cached := 0
	if u.HasCached {
		cached = u.Cached
	}
	if u.HasHit && u.Hit > cached {
		cached = u.Hit
	}
	prompt := u.PromptTokens
	if prompt == 0 && u.HasMiss {
		prompt = u.Miss + cached
	}
	out.InputTokens = max(prompt-cached, 0)
	out.CacheReadTokens = max(cached, 0)
	return out
}
