// Package compact keeps long sessions inside the model's context window. It
// runs before each step (the agent's pre-step point) and on demand:
//
//  1. prune: old tool results that are bulky are replaced, in place on the
//     surface, by a short head and tail with a note — free, and often
//     enough on its own;
//  2. summarize: the oldest span of the history (the first user prompt
//     stays verbatim at the head, the most recent turns stay verbatim at the
//     tail, and no cut separates a tool call from its result) is replaced by
//     one structured summary the model writes through the normal request
//     point. The checkpoint carries the user's latest prompt and the
//     steering since verbatim when they were in the span, so a long turn
//     compacted while it runs keeps its task word for word. A summary that
//     was truncated or is not smaller than what it replaces is discarded
//     and the history left as it was.
//
// Compaction only ever changes the derived surface: every original event
// stays in the log, bracketed by compact/* events, so a session can be
// audited and replayed in full and a replay derives the same history.
package compact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// Event types.
const (
	TypeStart   = "compact/start"
	TypeSummary = "compact/summary"
	TypePrune   = "compact/prune"
	TypeEnd     = "compact/end"
)

// Start payload.
type Start struct {
	Turn   int    `json:"turn"`
	Reason string `json:"reason"` // "auto" or "manual"
	Focus  string `json:"focus,omitempty"`
	// Estimate is the estimated prompt size that triggered compaction.
	Estimate int `json:"estimate"`
}

// Summary payload: the raw summary and what it shadows.
type Summary struct {
	Summary            []llm.Block `json:"summary"`
	ShadowedRange      Range       `json:"shadowedRange"`
	ShadowedSeqs       []int64     `json:"shadowedSeqs"`
	ShadowedTokenCount int         `json:"shadowedTokenCount"`
	SummaryTokenCount  int         `json:"summaryTokenCount"`
}

// Range is a positional surface range named by seqs (inclusive).
type Range struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// Prune payload: which results were shortened and what it saved.
type Prune struct {
	Seqs        []int64 `json:"seqs"`
	SavedTokens int     `json:"savedTokens"`
}

// End payload.
type End struct {
	Turn        int    `json:"turn"`
	Error       string `json:"error,omitempty"`
	Before      int    `json:"before,omitempty"` // estimated tokens before
	After       int    `json:"after,omitempty"`  // and after
	SavedTokens int    `json:"savedTokens,omitempty"`
}

// Config tunes the compactor. Zero values take the defaults.
type Config struct {
	// ContextWindow overrides the model's window (tokens); 0 asks the model
	// registry, then uses 128,000.
	ContextWindow int `json:"contextWindow,omitempty"`
	// Threshold is the fraction of the window that triggers compaction
	// (default 0.8).
	Threshold float64 `json:"threshold,omitempty"`
	// RetainTokens is how much recent history stays verbatim (default a
	// quarter of the window).
	RetainTokens int `json:"retainTokens,omitempty"`
	// Model summarizes (default: the agent's model).
	Model string `json:"model,omitempty"`
	// MaxTokens caps the summary (default 8192).
	MaxTokens int `json:"maxTokens,omitempty"`
	// PruneAbove is the size (tokens) above which an old tool result is
	// pruned (default 1000); PruneKeep is how many characters of its head
	// and tail stay (default 600 each).
	PruneAbove int `json:"pruneAbove,omitempty"`
	PruneKeep  int `json:"pruneKeep,omitempty"`
	// Manual disables automatic compaction (on-demand only).
	Manual bool `json:"manual,omitempty"`
}

func (c Config) withDefaults(window int) Config {
	if c.ContextWindow > 0 {
		window = c.ContextWindow
	}
	if window <= 0 {
		window = 128000
	}
	c.ContextWindow = window
	if c.Threshold <= 0 || c.Threshold > 1 {
		c.Threshold = 0.8
	}
	if c.RetainTokens <= 0 {
		c.RetainTokens = window / 4
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = 8192
	}
	if c.PruneAbove <= 0 {
		c.PruneAbove = 1000
	}
	if c.PruneKeep <= 0 {
		c.PruneKeep = 600
	}
	return c
}

// Before is the point hooks (PreCompact) listen on; an error vetoes.
type Before struct {
	Agent  agent.Agent
	Reason string // auto or manual
	Focus  string
}

// Compactor is the compaction service.
type Compactor struct {
	cfg    Config
	llm    *llm.Service
	hub    *agent.Hub
	log    *slog.Logger
	mu     sync.Mutex
	forced map[agent.ID]string // pending on-demand requests (focus) of busy agents
	// backoff holds, per agent, how automatic summarization is waiting
	// after failures (see [backoff]).
	backoff map[agent.ID]*backoff

	// BeforeCompact fires before any summarization.
	BeforeCompact *kernel.Serial[Before]
	// Done notifies a finished compaction (for UIs).
	Done *kernel.Signal[Outcome]
}

// Outcome reports one compaction.
type Outcome struct {
	Agent  agent.Agent
	Before int
	After  int
	Pruned int
	// Summarized reports that a summary replaced part of the history;
	// Shadowed is the span of log seqs it replaced. Plugins whose state
	// the model only knew from that span (a todo list) restate it.
	Summarized bool
	Shadowed   Range
	Err        error
}

// New returns a compactor.
func New(cfg Config, svc *llm.Service, hub *agent.Hub, log *slog.Logger) *Compactor {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Compactor{cfg: cfg, llm: svc, hub: hub, log: log, forced: map[agent.ID]string{}, backoff: map[agent.ID]*backoff{},
		BeforeCompact: kernel.NewSerial[Before]("compact/before"),
		Done:          kernel.NewSignal[Outcome]("compact/done")}
}

// Install runs compaction before every step, and once when the provider
// refuses a step's request as too long for the context window, for the
// life of scope.
func (c *Compactor) Install(scope *kernel.Scope) error {
	if err := scope.Add(c.hub.Overflow.Use(c.overflow, kernel.Named("compact"))); err != nil {
		return err
	}
	return scope.Add(c.hub.PreStep.Use(func(ctx context.Context, ps agent.PreStep) error {
		c.mu.Lock()
		focus, forced := c.forced[ps.Agent.ID()]
		delete(c.forced, ps.Agent.ID())
		c.mu.Unlock()
		if !forced && c.cfg.Manual {
			return nil
		}
		reason := "auto"
		if forced {
			reason = "manual"
		}
		if _, err := c.run(ctx, ps.Agent, ps.Turn, ps.Step, ps.SystemPrompt, reason, focus, forced); err != nil {
			// A failed compaction never blocks the model call.
			c.log.Warn("compaction failed; proceeding with the full history", "agent", ps.Agent.ID(), "err", err)
		}
		return nil
	}, kernel.Named("compact")))
}

// overflow compacts a history the provider refused as too long, whatever
// the estimate said (the estimate is a guess; the refusal is not), keeping
// less of it verbatim as /compact does, and asks for the step to be tried
// again when that made the history shorter. Manual configuration leaves it
// to the user: the refusal stands.
func (c *Compactor) overflow(ctx context.Context, o agent.Overflow, next kernel.Next[agent.Overflow, bool]) (bool, error) {
	if c.cfg.Manual {
		return next(ctx, o)
	}
	out, err := c.run(ctx, o.Agent, o.Turn, o.Step, o.SystemPrompt, "auto", "", true)
	if err != nil {
		c.log.Warn("compaction after a context-too-long refusal failed", "agent", o.Agent.ID(), "err", err)
		return next(ctx, o)
	}
	if out.Summarized || out.After < out.Before {
		return true, nil
	}
	return next(ctx, o)
}

// log is how compaction records its events: its token may write compact/*
// and the parts of the loop's vocabulary compaction replaces (the summary's
// user/message, pruned tool/result) or, for /compact on an idle agent, the
// one-shot turn around them.
func log(s *session.Session) session.Writer { return s.Writer(ownership.Compaction) }

// ErrBusy is returned by Compact when the agent is running a turn; the
// compaction then happens before its next step.
var ErrBusy = errors.New("compact: agent is busy; compaction will run before its next step")

// Compact compacts an agent's history now (the /compact command). An idle
// agent gets a one-shot turn holding the compaction events; a busy one is
// compacted before its next step.
func (c *Compactor) Compact(ctx context.Context, a agent.Agent, focus string) (Outcome, error) {
	s := a.Session()
	if a.Status() == agent.Running || s.TurnOpen() {
		c.mu.Lock()
		c.forced[a.ID()] = focus
		c.mu.Unlock()
		return Outcome{}, ErrBusy
	}
	st := s.Turns()
	turn := st.Last + 1
	src := llm.PluginSource("compact")
	if _, err := log(s).AppendIf(ctx, func(ts session.TurnState) bool { return !ts.Open && ts.Last == st.Last },
		session.TypeTurnStart, session.TurnStart{Turn: turn, Trigger: session.Trigger{Kind: "compact", Source: &src}}, nil); err != nil {
		if errors.Is(err, session.ErrCondition) {
			return Outcome{}, ErrBusy
		}
		return Outcome{}, err
	}
	out, err := c.run(ctx, a, turn, 0, "", "manual", focus, true)
	reason := session.EndReason{Kind: session.EndCompleted}
	if err != nil {
		reason = session.EndReason{Kind: session.EndError, Message: err.Error()}
	}
	if _, cerr := log(s).Append(context.WithoutCancel(ctx), session.TypeTurnEnd, session.TurnEnd{Turn: turn, Reason: reason}); cerr != nil && err == nil {
		err = cerr
	}
	return out, err
}

// Window is the context window compaction keeps a model's sessions in
// (tokens): the configured override, else the model's, else 128,000.
// Front-ends show the context used against it.
func (c *Compactor) Window(model string) int { return c.config(model).ContextWindow }

// config returns the effective config for a model.
func (c *Compactor) config(model string) Config {
	w := 0
	if info, ok := c.llm.Info(model); ok {
		w = info.ContextWindow
	}
	return c.cfg.withDefaults(w)
}

// run is one compaction attempt: prune, then summarize if still needed.
func (c *Compactor) run(ctx context.Context, a agent.Agent, turn, step int, system, reason, focus string, forced bool) (Outcome, error) {
	s := a.Session()
	cfg := c.config(a.Options().Model)
	threshold := int(float64(cfg.ContextWindow) * cfg.Threshold)
	before, err := Estimate(s, system)
	if err != nil {
		return Outcome{}, err
	}
	if !forced && before < threshold {
		return Outcome{}, nil
	}
	if inProgress(s) {
		return Outcome{}, errors.New("compact: compaction already in progress")
	}
	if err := c.BeforeCompact.Run(ctx, Before{Agent: a, Reason: reason, Focus: focus}); err != nil {
		return Outcome{}, fmt.Errorf("compact: vetoed: %w", err)
	}
	bg := context.WithoutCancel(ctx)
	if _, err := log(s).Append(bg, TypeStart, Start{Turn: turn, Reason: reason, Focus: focus, Estimate: before}); err != nil {
		return Outcome{}, err
	}
	out := Outcome{Agent: a, Before: before}
	finish := func(err error) (Outcome, error) {
		after, _ := Estimate(s, system)
		out.After, out.Err = after, err
		end := End{Turn: turn, Before: before, After: after, SavedTokens: max(0, before-after)}
		if err != nil {
			end.Error = err.Error()
		}
		if _, aerr := log(s).Append(bg, TypeEnd, end); aerr != nil && err == nil {
			err = aerr
		}
		_ = c.Done.EmitAll(bg, out)
		return out, err
	}
	pruned, err := c.prune(bg, s, turn, cfg)
	if err != nil {
		return finish(err)
	}
	out.Pruned = pruned
	now, err := Estimate(s, system)
	if err != nil {
		return finish(err)
	}
	if !forced && now < threshold {
		return finish(nil)
	}
	if !forced && now < cfg.ContextWindow && c.deferSummary(a.ID()) {
		c.log.Info("compact: summarization deferred after failed attempts", "agent", a.ID(), "estimate", now, "window", cfg.ContextWindow)
		return finish(nil)
	}
	shadowed, err := c.summarize(ctx, a, turn, step, cfg, focus, forced)
	if err == nil {
		out.Summarized, out.Shadowed = true, shadowed
	}
	if err == nil || !forced {
		c.noteSummary(a.ID(), err)
	}
	return finish(err)
}

// backoff is an agent's wait after failed automatic summaries. A model
// that cannot summarize (it answers with a tool call or nothing, truncates,
// or its provider is failing) used to be asked again before every step,
// each time with the whole history to summarize: a paid request per step
// that keeps failing. After the n-th failure in a row, the next 2^n - 1
// steps over the threshold only prune (at most 31); a history that
// reaches the window itself is summarized regardless, and an on-demand
// /compact never waits.
type backoff struct {
	failures int // in a row
	skip     int // steps still to pass over
}

// deferSummary reports whether this step's automatic summary waits.
func (c *Compactor) deferSummary(id agent.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.backoff[id]
	if b == nil || b.skip == 0 {
		return false
	}
	b.skip--
	return true
}

// noteSummary records an automatic summary's outcome.
func (c *Compactor) noteSummary(id agent.ID, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		delete(c.backoff, id)
		return
	}
	b := c.backoff[id]
	if b == nil {
		b = &backoff{}
		c.backoff[id] = b
	}
	b.failures++
	b.skip = 1<<min(b.failures, 5) - 1
}

func inProgress(s *session.Session) bool {
	found := false
	s.Backward(int64(s.Len()), func(e session.Event) bool {
		switch e.Type {
		case TypeStart:
			found = true
			return false
		case TypeEnd, session.TypeTurnEnd:
			return false
		}
		return true
	})
	return found
}

// node is a surface entry with its derived message and estimated size.
// Both come from the session's derived history: weighing the surface
// decodes nothing, so a prune pass costs a few comparisons per message
// (it used to decode every event of the history each time).
type node struct {
	session.SurfaceNode
	tokens int
}

func surface(s *session.Session) ([]node, error) {
	sn, err := s.SurfaceNodes(-1)
	if err != nil {
		return nil, err
	}
	out := make([]node, len(sn))
	for i, n := range sn {
		out[i] = node{SurfaceNode: n, tokens: nodeTokens(n)}
	}
	return out, nil
}

// nodeTokens is EventTokens of the node's event, read from its derived
// message: a tool result's message is one tool-result block (four tokens
// of its own), a context or steering message is wrapped in an envelope of
// two text blocks that EventTokens does not count.
func nodeTokens(n session.SurfaceNode) int {
	c := n.Message.Content
	switch n.Type {
	case session.TypeUserMessage, session.TypeAssistantMessage:
		return ContentTokens(c) + 4
	case session.TypeToolResult:
		return ContentTokens(c) + 4
	case session.TypeContextMessage, session.TypeSteeringMessage:
		if len(c) >= 2 {
			c = c[1 : len(c)-1]
		}
		return ContentTokens(c) + 4
	}
	return 0
}

// calls is how many results a node's message awaits (an assistant
// message's tool calls) or gives (-1 for a tool result).
func calls(n node) int {
	switch n.Type {
	case session.TypeAssistantMessage:
		k := 0
		for _, b := range n.Message.Content {
			if b.Type == llm.BlockToolCall {
				k++
			}
		}
		return k
	case session.TypeToolResult:
		return -1
	}
	return 0
}

// retainFrom returns the index of the first node kept verbatim: walking from
// the tail until the retain budget is spent, then moving the cut earlier
// until it does not split a call from its result.
func retainFrom(nodes []node, budget int) (int, error) {
	keep, acc := len(nodes), 0
	for i := len(nodes) - 1; i >= 0; i-- {
		acc += nodes[i].tokens
		keep = i
		if acc >= budget {
			break
		}
	}
	// depth is how many calls before the cut are still unanswered there.
	depth := 0
	for _, n := range nodes[:keep] {
		if depth += calls(n); depth < 0 {
			return 0, fmt.Errorf("compact: tool-pairing balance: tool/result at surface seq %d has no matching tool-call (corrupt surface)", n.Seq)
		}
	}
	for keep > 0 && depth != 0 {
		keep--
		depth -= calls(nodes[keep])
	}
	return keep, nil
}

// retainBudget is how many tokens of recent history a summary keeps
// verbatim. Automatic compaction keeps RetainTokens (a quarter of the
// window by default), so a history it summarizes is always at least that
// long. An explicit request (/compact, or the provider refusing the
// request as too long) keeps less when the whole history is smaller than
// four times that: a quarter of it. Otherwise /compact on a 10-turn,
// 18k-token session retained all of it and refused with "nothing old
// enough to summarize" (the latest prompt still stays verbatim: the
// checkpoint carries it).
func retainBudget(nodes []node, cfg Config, forced bool) int {
	if !forced {
		return cfg.RetainTokens
	}
	total := 0
	for _, n := range nodes {
		total += n.tokens
	}
	return max(1, min(cfg.RetainTokens, total/4))
}

// prune shortens bulky tool results outside the retained tail.
func (c *Compactor) prune(ctx context.Context, s *session.Session, turn int, cfg Config) (int, error) {
	nodes, err := surface(s)
	if err != nil {
		return 0, err
	}
	keep, err := retainFrom(nodes, cfg.RetainTokens)
	if err != nil {
		return 0, err
	}
	var seqs []int64
	saved := 0
	for _, n := range nodes[:keep] {
		// A node that replaced a result is the pruned copy: a result is
		// pruned once.
		if n.Type != session.TypeToolResult || n.Replaces || n.tokens <= cfg.PruneAbove {
			continue
		}
		// The derived message is the result as the model saw it; only
		// what it does not carry (the step, a harness error) is read from
		// the event, without decoding its content.
		if len(n.Message.Content) != 1 || n.Message.Content[0].Type != llm.BlockToolResult {
			continue
		}
		res := n.Message.Content[0]
		text := llm.TextOf(res.Content)
		if len(text) <= 2*cfg.PruneKeep+200 {
			continue
		}
		ev, ok := s.Event(n.Seq)
		if !ok {
			return len(seqs), fmt.Errorf("compact: surface seq %d is not in the log", n.Seq)
		}
		tr, err := resultHeader(ev, res.IsError)
		if err != nil {
			return len(seqs), err
		}
		head, tail := cutUTF8(text, cfg.PruneKeep, true), cutUTF8(text, cfg.PruneKeep, false)
		note := fmt.Sprintf("\n\n[… %d characters of this old tool result were pruned to save context; re-run the tool if you need them …]\n\n", len(text)-len(head)-len(tail))
		pr := session.ToolResult{Turn: turn, Step: tr.Step, CallID: res.ToolCallID, IsError: res.IsError, Error: tr.Error,
			Content: []llm.Block{llm.Text(head + note + tail)}}
		if _, err := log(s).AppendSurface(ctx, session.TypeToolResult, pr, session.ReplaceOp(n.Seq, n.Seq), []int64{n.Seq}); err != nil {
			return len(seqs), err
		}
		seqs = append(seqs, n.Seq)
		saved += n.tokens - (ContentTokens(pr.Content) + 8)
	}
	if len(seqs) > 0 {
		if _, err := log(s).Append(ctx, TypePrune, Prune{Seqs: seqs, SavedTokens: saved}); err != nil {
			return len(seqs), err
		}
	}
	return len(seqs), nil
}

// resultHeader reads the fields of a tool/result payload that its derived
// message lacks: its step, and its harness error when it is an error. The
// step comes before the content in what dsh writes, so a token reader
// stops there instead of scanning a large output; the error comes after
// it, so an error result is decoded whole (those are rare and small).
func resultHeader(e session.Event, isError bool) (session.ToolResult, error) {
	if isError {
		var tr struct {
			Step  int                `json:"step"`
			Error *session.ErrorInfo `json:"error"`
		}
		if err := json.Unmarshal(e.Data, &tr); err != nil {
			return session.ToolResult{}, fmt.Errorf("compact: decoding tool/result (seq %d): %w", e.Seq, err)
		}
		return session.ToolResult{Step: tr.Step, Error: tr.Error}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(e.Data))
	bad := func(err error) (session.ToolResult, error) {
		return session.ToolResult{}, fmt.Errorf("compact: decoding tool/result (seq %d): %w", e.Seq, err)
	}
	if _, err := dec.Token(); err != nil {
		return bad(err)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return bad(err)
		}
		if key == "step" {
			var step int
			if err := dec.Decode(&step); err != nil {
				return bad(err)
			}
			return session.ToolResult{Step: step}, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return bad(err)
		}
	}
	return session.ToolResult{}, nil
}

func cutUTF8(s string, n int, head bool) string {
	if len(s) <= n {
		return s
	}
	if head {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return s[:n]
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// summarize replaces the head-anchored older span with one summary.
func (c *Compactor) summarize(ctx context.Context, a agent.Agent, turn, step int, cfg Config, focus string, forced bool) (Range, error) {
	s := a.Session()
	nodes, err := surface(s)
	if err != nil {
		return Range{}, err
	}
	keep, err := retainFrom(nodes, retainBudget(nodes, cfg, forced))
	if err != nil {
		return Range{}, err
	}
	// Head anchoring: the first user prompt stays verbatim.
	first := 0
	if len(nodes) > 0 && nodes[0].Type == session.TypeUserMessage {
		if ev, ok := s.Event(nodes[0].Seq); ok && !isCheckpoint(s, ev) {
			first = 1
		}
	}
	if forced {
		// A smaller tail than usual starts at a prompt where one is near,
		// so no answer is kept without the question it answers.
		for i := min(keep, len(nodes)-1); i > first; i-- {
			if nodes[i].Type == session.TypeUserMessage {
				keep = i
				break
			}
		}
	}
	if keep-first < 1 {
		return Range{}, errors.New("compact: nothing old enough to summarize (the retained recent history is all there is)")
	}
	span := nodes[first:keep]
	shadowed := 0
	seqs := make([]int64, len(span))
	for i, n := range span {
		shadowed += n.tokens
		seqs[i] = n.Seq
	}
	summary, err := c.ask(ctx, a, turn, step, cfg, transcript(s, span), focus)
	if err != nil {
		return Range{}, err
	}
	// What the user asked last stays verbatim: the checkpoint carries the
	// latest prompt and the steering after it when the span (or an earlier
	// checkpoint in it) is where they are.
	kept := map[int64]bool{}
	for _, n := range nodes[:first] {
		kept[n.Seq] = true
	}
	for _, n := range nodes[keep:] {
		kept[n.Seq] = true
	}
	var carried []instruction
	for _, in := range latestInstructions(s) {
		if !kept[in.seq] {
			carried = append(carried, in)
		}
	}
	framed := frame(summary, carried)
	fTokens := ContentTokens(framed)
	if fTokens >= shadowed {
		return Range{}, fmt.Errorf("compact: summary is not smaller than what it replaces (%d estimated tokens >= %d); history left as it was", fTokens, shadowed)
	}
	bg := context.WithoutCancel(ctx)
	sumEv, err := log(s).Append(bg, TypeSummary, Summary{Summary: summary, ShadowedRange: Range{seqs[0], seqs[len(seqs)-1]},
		ShadowedSeqs: seqs, ShadowedTokenCount: shadowed, SummaryTokenCount: fTokens})
	if err != nil {
		return Range{}, err
	}
	start, _ := s.Last(TypeStart)
	sources := append([]int64{start.Seq, sumEv.Seq}, seqs...)
	_, err = log(s).AppendSurface(bg, session.TypeUserMessage, session.Prompt{Content: framed, Source: llm.PluginSource("compact")},
		session.ReplaceOp(seqs[0], seqs[len(seqs)-1]), sources)
	return Range{seqs[0], seqs[len(seqs)-1]}, err
}

// summarizes reports whether e is a checkpoint message compaction wrote,
// known without its payload: a replace whose second source is this
// package's summary event (see summarize). A checkpoint's payload (the
// summary, kilobytes) leaves memory once stored, and latestInstructions
// passes every earlier checkpoint of the turn at each compaction: decoding
// them read each back from the store, O(compactions²) reads over a long
// turn (540 MB of read buffers in a 5,000-step run with 119 summaries).
// Anything else is decided from its payload, as before.
func summarizes(s *session.Session, e session.Event) bool {
	if e.SurfaceOp == nil || !e.SurfaceOp.Replace || len(e.SourceEventSeqs) < 2 {
		return false
	}
	src, ok := s.Event(e.SourceEventSeqs[1])
	return ok && src.Type == TypeSummary
}

// isCheckpoint reports whether e is a checkpoint message compaction
// wrote: known from its op and sources when it can be, else from its
// payload.
func isCheckpoint(s *session.Session, e session.Event) bool {
	if summarizes(s, e) {
		return true
	}
	p, err := session.Decode[session.Prompt](e)
	return err == nil && fromCompaction(p)
}

// fromCompaction is the mark a checkpoint's prompt carries.
func fromCompaction(p session.Prompt) bool {
	return p.Source.Kind == llm.SourcePlugin && p.Source.Plugin == "compact"
}

const summarizeSystem = `You condense an agent's working history into a checkpoint that replaces it. Write Markdown with exactly these sections, in order:
## Goal
## Decisions
## Files touched
## Errors and fixes
## Open tasks
## Next step
Use terse bullets; write (none) for an empty section. Keep exact file paths, commands, error messages and identifiers. Record what the user asked and any feedback faithfully. If the history contains an earlier <compacted-summary>, merge it in rather than copying it. Do not mention that this is a summary.`

const preamble = "This is a checkpoint: an automatically written summary of the earlier part of this session, which was condensed to free context. Treat it as established background and continue from the messages that follow without acknowledging it."

// carriedPreamble introduces the instructions a checkpoint carries.
const carriedPreamble = "The user's latest instructions, verbatim (the task in progress; they take precedence over the summary):"

func frame(summary []llm.Block, carried []instruction) []llm.Block {
	out := []llm.Block{llm.Text(preamble + "\n\n<compacted-summary>")}
	out = append(out, summary...)
	out = append(out, llm.Text("</compacted-summary>"))
	if len(carried) == 0 {
		return out
	}
	out = append(out, llm.Text(carriedPreamble))
	for _, in := range carried {
		out = append(out, llm.Text("<"+in.tag+">"))
		out = append(out, in.content...)
		out = append(out, llm.Text("</"+in.tag+">"))
	}
	return out
}

// instruction is a user prompt or steering message a checkpoint carries.
type instruction struct {
	seq     int64
	tag     string // user-request or steering
	content []llm.Block
}

// latestInstructions returns what the user asked last: the newest prompt
// (a user/message that is not a checkpoint) and the steering messages
// recorded after it, oldest first. A long turn is compacted while it runs;
// without these the model would keep only a summary's paraphrase of its
// current task.
func latestInstructions(s *session.Session) []instruction {
	var out []instruction
	found := false
	// Backwards without copying the log: it runs at every compaction.
	s.Backward(int64(s.Len()), func(e session.Event) bool {
		switch e.Type {
		case session.TypeSteeringMessage:
			if st, err := session.Decode[session.Steering](e); err == nil {
				out = append(out, instruction{seq: e.Seq, tag: "steering", content: st.Content})
			}
		case session.TypeUserMessage:
			if summarizes(s, e) {
				return true
			}
			p, err := session.Decode[session.Prompt](e)
			if err != nil || fromCompaction(p) {
				return true
			}
			out = append(out, instruction{seq: e.Seq, tag: "user-request", content: p.Content})
			found = true
			return false
		}
		return true
	})
	if !found {
		return nil // no prompt: nothing to carry (steering alone has no task)
	}
	slices.Reverse(out)
	return out
}

// ask runs the summarization request through the agent's request point.
func (c *Compactor) ask(ctx context.Context, a agent.Agent, turn, step int, cfg Config, text, focus string) ([]llm.Block, error) {
	prompt := "Summarize this history:\n\n" + text
	if focus != "" {
		prompt += "\n\nPay particular attention to: " + focus
	}
	model := cfg.Model
	if model == "" {
		model = a.Options().Model
	}
	req := &llm.Request{Model: model, System: summarizeSystem, MaxTokens: cfg.MaxTokens, SessionID: string(a.Session().ID()),
		Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.Text(prompt)}}}}
	req, err := c.hub.Request.Run(ctx, agent.RequestInput{StepInfo: agent.StepInfo{Agent: a, Turn: turn, Step: step}, Request: req},
		func(_ context.Context, in agent.RequestInput) (*llm.Request, error) { return in.Request, nil })
	if err != nil {
		return nil, err
	}
	if req == nil || req.Model == "" {
		return nil, errors.New("compact: no model available for summarization")
	}
	stream, err := c.llm.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	var as llm.Assembler
	for ch, err := range stream {
		if err != nil {
			return nil, err
		}
		if _, _, err := as.Push(ch); err != nil {
			return nil, err
		}
	}
	switch f := as.Finish(); f.Kind {
	case llm.FinishError:
		return nil, fmt.Errorf("compact: summarization failed: %s", f.Message)
	case llm.FinishAborted:
		return nil, errors.New("compact: summarization stream aborted")
	case llm.FinishMaxTokens:
		return nil, errors.New("compact: summarization was truncated at the token cap (an incomplete checkpoint is discarded)")
	}
	blocks, err := as.Blocks()
	if err != nil {
		return nil, err
	}
	var out []llm.Block
	for _, b := range blocks {
		if b.Type == llm.BlockText && strings.TrimSpace(b.Text) != "" {
			out = append(out, llm.Text(b.Text))
		}
	}
	if len(out) == 0 {
		return nil, errors.New("compact: summarization produced no text")
	}
	return out, nil
}

// transcript renders nodes for the summarizer, in surface order.
func transcript(s *session.Session, nodes []node) string {
	var parts []string
	for _, n := range nodes {
		var label string
		var content []llm.Block
		ev, _ := s.Event(n.Seq)
		switch ev.Type {
		case session.TypeUserMessage:
			p, _ := session.Decode[session.Prompt](ev)
			label, content = "User", p.Content
		case session.TypeAssistantMessage:
			m, _ := session.Decode[session.AssistantMessage](ev)
			label, content = "Assistant", m.Content
		case session.TypeToolResult:
			r, _ := session.Decode[session.ToolResult](ev)
			label = "Tool result (call " + string(r.CallID) + ")"
			if r.IsError {
				label = "Tool error (call " + string(r.CallID) + ")"
			}
			content = r.Content
		case session.TypeContextMessage:
			p, _ := session.Decode[session.Prompt](ev)
			label, content = "Context", p.Content
		case session.TypeSteeringMessage:
			p, _ := session.Decode[session.Steering](ev)
			label, content = "Steering", p.Content
		}
		if t := renderBlocks(content); t != "" {
			parts = append(parts, label+": "+t)
		}
	}
	return strings.Join(parts, "\n\n")
}

func renderBlocks(bs []llm.Block) string {
	var out []string
	for _, b := range bs {
		switch b.Type {
		case llm.BlockText:
			if b.Text != "" {
				out = append(out, b.Text)
			}
		case llm.BlockReasoning:
			out = append(out, "[reasoning: "+b.Text+"]")
		case llm.BlockToolCall:
			out = append(out, "[tool-call: "+b.Name+"("+b.Arguments+")]")
		case llm.BlockToolResult:
			out = append(out, "[tool-result: "+renderBlocks(b.Content)+"]")
		case llm.BlockImage:
			out = append(out, "[image]")
		default:
			out = append(out, "["+string(b.Type)+"]")
		}
	}
	return strings.Join(out, "\n")
}

// ContentTokens estimates blocks at about four characters a token.
func ContentTokens(bs []llm.Block) int {
	n := 0
	for _, b := range bs {
		switch b.Type {
		case llm.BlockText, llm.BlockReasoning:
			n += quarter(len(b.Text)) + 4
		case llm.BlockToolCall:
			n += quarter(len(b.Name)) + quarter(len(b.Arguments)) + 4
		case llm.BlockToolResult:
			n += ContentTokens(b.Content) + 4
		case llm.BlockImage:
			n += 85
		default:
			raw, _ := json.Marshal(b)
			n += quarter(len(raw)) + 4
		}
	}
	return n
}

func quarter(n int) int { return int(math.Ceil(float64(n) / 4)) }

// EventTokens estimates a surface event's message.
func EventTokens(e session.Event) int {
	switch e.Type {
	case session.TypeUserMessage, session.TypeContextMessage:
		p, _ := session.Decode[session.Prompt](e)
		return ContentTokens(p.Content) + 4
	case session.TypeAssistantMessage:
		m, _ := session.Decode[session.AssistantMessage](e)
		return ContentTokens(m.Content) + 4
	case session.TypeToolResult:
		r, _ := session.Decode[session.ToolResult](e)
		return ContentTokens(r.Content) + 8
	case session.TypeSteeringMessage:
		p, _ := session.Decode[session.Steering](e)
		return ContentTokens(p.Content) + 4
	}
	return 0
}

// usageOnly decodes an assistant message's usage and nothing else.
type usageOnly struct {
	Usage *llm.Usage `json:"usage"`
}

// Estimate estimates the next request's prompt. When the newest assistant
// message carries the provider's usage, its prompt and output counts anchor
// the estimate and only the surface since is guessed; after a surface
// replace (or with no usage) the whole derived history is estimated. Both
// read the derived messages (string lengths), so only the anchor's usage is
// decoded.
func Estimate(s *session.Session, system string) (int, error) {
	msgs, err := s.Messages()
	if err != nil {
		return 0, err
	}
	// Walk back to the newest assistant message (the anchor), unless a
	// replace comes first: the anchor then predates a compaction. The walk
	// reads memory only, however long the log.
	var since []session.Event // newest first, the anchor last
	s.Backward(int64(s.Len()), func(e session.Event) bool {
		if e.SurfaceOp != nil && e.SurfaceOp.Replace {
			since = nil
			return false
		}
		since = append(since, e)
		return e.Type != session.TypeAssistantMessage
	})
	if n := len(since); n > 0 && since[n-1].Type == session.TypeAssistantMessage {
		anchor := since[n-1]
		m, err := session.Decode[usageOnly](anchor)
		if err == nil && m.Usage != nil && m.Usage.PromptTokens() > 0 {
			total := m.Usage.PromptTokens() + m.Usage.OutputTokens
			// No replace since the anchor: the nodes after it are the ones
			// appended since.
			later, err := s.SurfaceNodes(anchor.Seq)
			if err != nil {
				return 0, err
			}
			for _, n := range later {
				total += nodeTokens(n)
			}
			return total, nil
		}
	}
	total := quarter(len(system))
	for _, m := range msgs {
		total += ContentTokens(m.Content) + 4
	}
	return total, nil
}
