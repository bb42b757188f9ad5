package acp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/compact"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/pricing"
	"github.com/dshq/dsh/session"
)

// session/load replays a session as whole messages, streamed from the
// store: an assistant message's text and reasoning as one chunk per block,
// each tool call as one tool_call carrying its final status and content,
// the user's prompts, and one usage update at the end — not the deltas,
// status changes and per-step usage the live stream sent. The frames then
// grow with the messages, not with how finely the model streamed them, and
// nothing but the open step is held while the log goes by.
//
// By default the replay starts at the last compaction, with a note of what
// it summarized: what came before is what the model no longer sees, and a
// million-event session would otherwise take seconds to show. A client
// asks for everything with _meta {"dsh": {"replay": "full"}} on
// session/load.

// replayMode reads the replay choice from session/load's _meta.
func replayFull(meta map[string]any) bool {
	d, _ := meta["dsh"].(map[string]any)
	return d["replay"] == "full"
}

// maxHeldChunks is how many streamed chunk events a replay holds for the
// open step before it folds them into text: the message that ends the step
// makes them redundant, so they are only decoded when it never came (a
// crash mid-stream) or the stream is very long.
const maxHeldChunks = 1024

// maxQueued bounds what waits behind an unfinished tool call card: past it
// the cards go out as they are and their later changes as updates.
const maxQueued = 256

// replayer turns a log read in order into whole-message updates.
type replayer struct {
	t    *translator
	send func(sdk.SessionUpdate)

	// chunks are the open step's streamed chunk events, not yet decoded;
	// stream is what older ones of them said, folded (kind, text) runs.
	chunks []session.Event
	stream []streamRun

	queue []*queued
	cards map[sdk.ToolCallId]*queued
	usage *sdk.SessionUpdate // the newest usage update, sent at the end
}

type streamRun struct {
	thought bool
	text    strings.Builder
}

type queued struct {
	u    sdk.SessionUpdate
	open bool // a tool call card still waiting for its final state
}

func newReplayer(t *translator, send func(sdk.SessionUpdate)) *replayer {
	return &replayer{t: t, send: send, cards: map[sdk.ToolCallId]*queued{}}
}

// event replays one stored event.
func (p *replayer) event(e session.Event) {
	switch e.Type {
	case session.TypeAssistantChunk:
		p.chunks = append(p.chunks, e)
		if len(p.chunks) >= maxHeldChunks {
			p.foldChunks()
		}
		return
	case session.TypeAssistantMessage:
		// The message holds the whole text the chunks streamed.
		p.chunks, p.stream = p.chunks[:0], p.stream[:0]
	case session.TypeStepStart, session.TypeStepEnd, session.TypeTurnEnd:
		p.flushStream() // a step cut off before its message: what streamed
	}
	for _, u := range p.t.translate(e) {
		p.add(u)
	}
}

// foldChunks decodes the held chunks into text runs.
func (p *replayer) foldChunks() {
	for _, e := range p.chunks {
		c, err := session.Decode[session.AssistantChunk](e)
		if err != nil || c.Chunk.Text == "" {
			continue
		}
		var thought bool
		switch c.Chunk.Type {
		case llm.ChunkTextDelta:
		case llm.ChunkReasoningDelta:
			thought = true
		default:
			continue
		}
		if n := len(p.stream); n == 0 || p.stream[n-1].thought != thought {
			p.stream = append(p.stream, streamRun{thought: thought})
		}
		p.stream[len(p.stream)-1].text.WriteString(c.Chunk.Text)
	}
	p.chunks = p.chunks[:0]
}

// flushStream sends what an unfinished step streamed, one chunk per run.
func (p *replayer) flushStream() {
	p.foldChunks()
	for i := range p.stream {
		r := &p.stream[i]
		if r.thought {
			p.add(sdk.UpdateAgentThoughtText(r.text.String()))
		} else {
			p.add(sdk.UpdateAgentMessageText(r.text.String()))
		}
	}
	p.stream = p.stream[:0]
}

// add queues an update in order; a tool call card waits for its final
// state, and what follows it waits behind it.
func (p *replayer) add(u sdk.SessionUpdate) {
	switch {
	case u.UsageUpdate != nil:
		p.usage = &u
		return
	case u.ToolCall != nil:
		c := *u.ToolCall
		q := &queued{u: sdk.SessionUpdate{ToolCall: &c}, open: !finalStatus(c.Status)}
		p.cards[c.ToolCallId] = q
		p.queue = append(p.queue, q)
	case u.ToolCallUpdate != nil:
		if q := p.cards[u.ToolCallUpdate.ToolCallId]; q != nil {
			fold(q.u.ToolCall, u.ToolCallUpdate)
			q.open = !finalStatus(q.u.ToolCall.Status)
			break
		}
		p.queue = append(p.queue, &queued{u: u})
	default:
		p.queue = append(p.queue, &queued{u: u})
	}
	p.drain(len(p.queue) > maxQueued)
}

// drain sends the queue's head up to the first open card (all of it when
// force).
func (p *replayer) drain(force bool) {
	i := 0
	for ; i < len(p.queue) && (force || !p.queue[i].open); i++ {
		q := p.queue[i]
		if q.u.ToolCall != nil {
			delete(p.cards, q.u.ToolCall.ToolCallId)
		}
		p.send(q.u)
	}
	clear(p.queue[:i])
	p.queue = append(p.queue[:0], p.queue[i:]...)
}

// finish sends what is left: an unfinished step's stream, cards as they
// are, and the newest usage.
func (p *replayer) finish() {
	p.flushStream()
	p.drain(true)
	if p.usage != nil {
		p.send(*p.usage)
	}
}

func finalStatus(s sdk.ToolCallStatus) bool {
	return s == sdk.ToolCallStatusCompleted || s == sdk.ToolCallStatusFailed
}

// fold applies an update to a card the way a client does: each field the
// update sets replaces the card's (content and locations whole), and _meta
// keys are merged.
func fold(c *sdk.SessionUpdateToolCall, u *sdk.SessionToolCallUpdate) {
	if u.Status != nil {
		c.Status = *u.Status
	}
	if u.Title != nil {
		c.Title = *u.Title
	}
	if u.Kind != nil {
		c.Kind = *u.Kind
	}
	if u.Content != nil {
		c.Content = u.Content
	}
	if u.Locations != nil {
		c.Locations = u.Locations
	}
	if u.RawInput != nil {
		c.RawInput = u.RawInput
	}
	if u.RawOutput != nil {
		c.RawOutput = u.RawOutput
	}
	if len(u.Meta) > 0 {
		m := make(map[string]any, len(c.Meta)+len(u.Meta))
		for k, v := range c.Meta {
			m[k] = v
		}
		for k, v := range u.Meta {
			m[k] = v
		}
		c.Meta = m
	}
}

// compaction is where a replay since the last compaction starts, and the
// note that stands for what came before.
type compaction struct {
	from int64 // the first event replayed
	note sdk.SessionUpdate
}

// lastCompaction finds the session's newest compaction checkpoint among the
// events it holds (a resumed session holds its surface, the checkpoint
// included) and reads back what it summarized.
func lastCompaction(ctx context.Context, s *session.Session, before int64) (compaction, bool) {
	var cp session.Event
	found := false
	s.Backward(before, func(e session.Event) bool {
		if e.Type == session.TypeUserMessage && e.SurfaceOp != nil && e.SurfaceOp.Replace && len(e.SourceEventSeqs) >= 2 {
			cp, found = e, true
			return false
		}
		return true
	})
	if !found {
		return compaction{}, false
	}
	cp, err := s.Payload(ctx, cp)
	if err != nil {
		return compaction{}, false
	}
	p, err := session.Decode[session.Prompt](cp)
	if err != nil || p.Source.Kind != llm.SourcePlugin || p.Source.Plugin != "compact" {
		return compaction{}, false
	}
	// The summary event names what was replaced; without it (or unreadable)
	// the checkpoint's own text is the note.
	text := llm.TextOf(p.Content)
	messages, tokens := 0, 0
	_ = s.Range(ctx, cp.SourceEventSeqs[1], cp.SourceEventSeqs[1]+1, func(e session.Event) error {
		if e.Type != compact.TypeSummary {
			return nil
		}
		if sum, err := session.Decode[compact.Summary](e); err == nil {
			if t := llm.TextOf(sum.Summary); t != "" {
				text = t
			}
			messages, tokens = len(sum.ShadowedSeqs), sum.ShadowedTokenCount
		}
		return nil
	})
	head := "Earlier history of this session was compacted; what follows is the summary the model works from."
	if messages > 0 {
		head = fmt.Sprintf("Earlier history of this session was compacted: %d messages (about %d tokens) were replaced by this summary, which the model works from.", messages, tokens)
	}
	note := sdk.UpdateAgentMessageText(head + "\n\n" + text)
	note.AgentMessageChunk.Meta = map[string]any{"dsh": map[string]any{"compaction": map[string]any{
		"summarizedMessages": messages, "summarizedTokens": tokens, "replayFrom": cp.SurfaceOp.End + 1,
	}}}
	return compaction{from: cp.SurfaceOp.End + 1, note: note}, true
}

// replayStart is where a replay of the log's first n events starts: at
// the last compaction (with its note) unless full.
func replayStart(ctx context.Context, s *session.Session, n int64, full bool) (int64, *sdk.SessionUpdate) {
	if !full {
		if cp, ok := lastCompaction(ctx, s, n); ok && cp.from < n {
			return cp.from, &cp.note
		}
	}
	return 0, nil
}

// replayLocked sends the log's events from seq from up to n as whole
// messages (after note, when there is one), reading them from the store a
// run at a time. cost is what the events before from cost (pending: not
// known yet). It returns the translator that saw them (its cost and newest
// usage).
func (r *sess) replayLocked(ctx context.Context, s *session.Session, from, n int64, note *sdk.SessionUpdate, cost pricing.Tally, pending bool) *translator {
	t := r.newTranslator(true)
	t.zedTerminal = r.tr.zedTerminal
	t.cost, t.costPending = cost, pending
	p := newReplayer(t, r.notify)
	if note != nil {
		p.add(*note)
	}
	err := s.Range(ctx, from, n, func(e session.Event) error {
		p.event(e)
		return nil
	})
	if err != nil {
		// What was read is shown; the client hears that the rest is missing.
		r.srv.log.Warn("acp: reading the log for replay", "session", r.id, "err", err)
		p.add(sdk.UpdateAgentMessageText("[dsh: the rest of this session's history could not be read: " + err.Error() + "]"))
	}
	p.finish()
	return t
}

// accountHistory sums the cost of the log's first to events, which no
// translator sees (a replay from the last compaction, or a resume): a
// short history at once (pending false), a long one in the background,
// since reading it back takes a while and the session is usable meanwhile.
// Until then usage updates leave the cost out; when it is known, one
// carries the whole session's. dispose stops it before the agent goes.
func (r *sess) accountHistory(s *session.Session, to int64) (cost pricing.Tally, pending bool) {
	prices := r.ws.app.Prices
	sum := func(ctx context.Context) (pricing.Tally, error) {
		var t pricing.Tally
		err := s.Range(ctx, 0, to, func(e session.Event) error {
			if e.Type != session.TypeAssistantMessage {
				return nil
			}
			if m, err := session.Decode[session.AssistantMessage](e); err == nil && m.Usage != nil {
				t.Add(prices, m.Model, *m.Usage)
			}
			return nil
		})
		return t, err
	}
	if to <= syncAccountBelow {
		// A short history is summed at once: no update leaves the cost out.
		t, err := sum(context.Background())
		if err != nil {
			r.srv.log.Warn("acp: reading the log for the session's cost", "session", r.id, "err", err)
		}
		return t, err != nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r.stopAccount, r.accountDone = cancel, done
	go func() {
		defer close(done)
		defer cancel()
		t, err := sum(ctx)
		if ctx.Err() != nil {
			return // disposed meanwhile
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.addHistoryCost(t, err)
	}()
	return pricing.Tally{}, true
}

// syncAccountBelow is the history length up to which accountHistory sums
// the cost before the load answers (a variable for tests).
var syncAccountBelow int64 = 20_000

// addHistoryCost adds the history's cost, summed in the background, to the
// live translator's, and a usage update says the whole session's cost.
func (r *sess) addHistoryCost(t pricing.Tally, err error) {
	if err != nil {
		// The cost stays unknown (left out of usage updates).
		r.srv.log.Warn("acp: reading the log for the session's cost", "session", r.id, "err", err)
		return
	}
	r.tr.cost.USD += t.USD
	r.tr.cost.Unpriced = r.tr.cost.Unpriced || t.Unpriced
	r.tr.costPending = false
	if r.ready && !r.disposed && !r.srv.isClosed() && r.tr.size > 0 {
		r.notify(r.tr.usageUpdate())
	}
}
