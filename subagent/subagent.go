// Package subagent delegates focused tasks to child agents. A registry of
// named providers (spawn: a fresh in-process child; fork: a child seeded
// with the parent's completed turns; acp: an out-of-process ACP agent;
// scripted: for tests) sits behind one Start call that enforces the depth
// and breadth caps, links the child's session to the parent's by lineage,
// and records subagent/start and subagent/end in the parent's log.
package subagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// Event types recorded in the parent's log.
const (
	TypeStart = "subagent/start"
	TypeEnd   = "subagent/end"
)

// StartEvent payload.
type StartEvent struct {
	Provider     string     `json:"provider"`
	ID           string     `json:"id"`
	CallID       llm.CallID `json:"callId,omitempty"`
	ChildSession session.ID `json:"childSession,omitempty"`
	Depth        int        `json:"depth"`
	Description  string     `json:"description,omitempty"`
	Agent        string     `json:"agent,omitempty"` // custom agent definition
}

// EndEvent payload.
type EndEvent struct {
	Provider     string     `json:"provider"`
	ID           string     `json:"id"`
	ChildSession session.ID `json:"childSession,omitempty"`
	StopReason   string     `json:"stopReason"`
	Result       string     `json:"result,omitempty"` // truncated final answer
}

// Stop reasons of a run.
const (
	Completed = "completed"
	Aborted   = "aborted"
	Failed    = "error"
	MaxTokens = "max-tokens"
	Refusal   = "refusal"
)

// Request starts a child.
type Request struct {
	// Parent is the calling agent (required for in-process providers).
	Parent agent.Agent
	// CallID of the parent's tool call, recorded for front-ends that nest
	// the child's activity under it.
	CallID      llm.CallID
	Description string
	Prompt      []llm.Block
	// Options overlay the child's agent options (model, system prompt, tool
	// filter).
	Options agent.Options
	// AgentName names the custom agent definition used, if any.
	AgentName string

	// slot is the child's share of the breadth cap, set by Delegate; an
	// in-process provider registers it with the child's agent id so the
	// child's own delegations can hand it back while they wait.
	slot *slot
}

// Result is a finished run.
type Result struct {
	Output       []llm.Block
	StopReason   string
	ChildSession session.ID
}

// Run is one running child.
type Run interface {
	ID() string
	ChildSession() session.ID
	// Wait returns the result; it fails only on infrastructure faults.
	Wait(ctx context.Context) (Result, error)
	Cancel(reason string)
	// Dispose tears the child down; idempotent.
	Dispose(ctx context.Context) error
}

// Provider starts runs.
type Provider interface {
	Name() string
	Start(ctx context.Context, req Request, depth int) (Run, error)
}

// Errors.
var (
	ErrNoProvider = errors.New("subagent: no such provider")
	ErrDepth      = errors.New("subagent: depth limit reached")
)

// Note is a lifecycle notification (hooks, UIs).
type Note struct {
	Start *StartEvent
	End   *EndEvent
	Child session.ID
	// Parent is the calling agent.
	Parent agent.Agent
}

// Service is the provider registry and the caps.
type Service struct {
	mu        sync.Mutex
	providers map[string]Provider
	order     []string
	children  map[agent.ID]child // in-process children by agent id
	sem       chan struct{}
	maxDepth  int
	log       *slog.Logger

	// Started and Ended notify lifecycle events (SubagentStart/Stop hooks).
	Started *kernel.Signal[Note]
	Ended   *kernel.Signal[Note]
}

// Options configure the caps.
type Options struct {
	// MaxDepth is how deep children may nest (default 2: a child may not
	// start grandchildren beyond depth 2).
	MaxDepth int
	// MaxConcurrent bounds children working at once across the service
	// (default 8). A child that is waiting for children of its own hands its
	// slot back meanwhile and takes one again before it goes on, so nested
	// delegation can never deadlock on the pool.
	MaxConcurrent int
	Logger        *slog.Logger
}

// NewService returns an empty service.
func NewService(o Options) *Service {
	if o.MaxDepth <= 0 {
		o.MaxDepth = 2
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 8
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{providers: map[string]Provider{}, children: map[agent.ID]child{}, sem: make(chan struct{}, o.MaxConcurrent),
		maxDepth: o.MaxDepth, log: o.Logger,
		Started: kernel.NewSignal[Note]("subagent/start"), Ended: kernel.NewSignal[Note]("subagent/end")}
}

// Register adds a provider.
func (s *Service) Register(p Provider) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.providers[p.Name()]; dup {
		return nil, fmt.Errorf("subagent: a provider named %q is already registered", p.Name())
	}
	s.providers[p.Name()] = p
	s.order = append(s.order, p.Name())
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.providers[p.Name()] == p {
			delete(s.providers, p.Name())
			for i, n := range s.order {
				if n == p.Name() {
					s.order = append(s.order[:i], s.order[i+1:]...)
					break
				}
			}
		}
	}, nil
}

// Providers lists provider names.
func (s *Service) Providers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.order...)
}

// Depth returns an agent's depth (0 for a top-level agent).
func (s *Service) Depth(id agent.ID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.children[id].depth
}

// MaxDepth is the configured depth cap.
func (s *Service) MaxDepth() int { return s.maxDepth }

type child struct {
	depth int
	slot  *slot
}

// enter registers an in-process child's depth and slot; the returned
// function forgets it.
func (s *Service) enter(id agent.ID, depth int, sl *slot) func() {
	s.mu.Lock()
	s.children[id] = child{depth: depth, slot: sl}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.children, id)
		s.mu.Unlock()
	}
}

// slot is one child's token in the breadth pool. The child holds it while
// it works; while any delegation of its own is in flight it gives the token
// back, and the last of them to finish takes one again. Tokens are
// therefore only held by children that are working (not waiting on the
// pool), which always leaves a way forward.
type slot struct {
	sem    chan struct{}
	mu     sync.Mutex
	held   bool // a token of sem is held for this child
	away   int  // this child's delegations in flight
	closed bool // the child's run is over
}

// take waits for a token; false when ctx ended first.
func (sl *slot) take(ctx context.Context) bool {
	select {
	case sl.sem <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	// A token is only kept by a live child that is not waiting on its own
	// delegations and does not hold one already.
	if sl.closed || sl.held || sl.away > 0 {
		<-sl.sem
		return true
	}
	sl.held = true
	return true
}

// leave marks a delegation of the child as started, giving the child's
// token back to the pool while it waits.
func (sl *slot) leave() {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.away++
	if sl.away == 1 && sl.held {
		sl.held = false
		<-sl.sem
	}
}

// back marks a delegation as finished; the last one takes a token again
// for the child before it goes on (unless ctx ends first: the child is
// being cancelled and winds down without one).
func (sl *slot) back(ctx context.Context) {
	sl.mu.Lock()
	sl.away--
	need := sl.away == 0 && !sl.held && !sl.closed
	sl.mu.Unlock()
	if need {
		sl.take(ctx)
	}
}

// close ends the child's run and returns its token, if held.
func (sl *slot) close() {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.closed = true
	if sl.held {
		sl.held = false
		<-sl.sem
	}
}

// Delegate runs a child to completion: it checks the caps, records the
// lifecycle in the parent's log, waits (cancelling the child when ctx
// ends), and always disposes the child.
func (s *Service) Delegate(ctx context.Context, provider string, req Request) (Result, error) {
	s.mu.Lock()
	p := s.providers[provider]
	s.mu.Unlock()
	if p == nil {
		return Result{}, fmt.Errorf("%w: %q", ErrNoProvider, provider)
	}
	depth := 1
	var caller *slot
	if req.Parent != nil {
		s.mu.Lock()
		c := s.children[req.Parent.ID()]
		s.mu.Unlock()
		depth, caller = c.depth+1, c.slot
	}
	if depth > s.maxDepth {
		return Result{}, fmt.Errorf("%w: this agent is at depth %d and the limit is %d; do the work yourself instead of delegating", ErrDepth, depth-1, s.maxDepth)
	}
	// A calling child gives its token back while it waits for this one, or
	// children waiting on grandchildren could hold every token.
	if caller != nil {
		caller.leave()
		defer caller.back(ctx)
	}
	sl := &slot{sem: s.sem}
	if !sl.take(ctx) {
		return Result{StopReason: Aborted}, nil
	}
	defer sl.close()
	req.slot = sl
	run, err := p.Start(ctx, req, depth)
	if err != nil {
		return Result{}, err
	}
	bg := context.WithoutCancel(ctx)
	defer run.Dispose(bg)
	start := &StartEvent{Provider: provider, ID: run.ID(), CallID: req.CallID, ChildSession: run.ChildSession(), Depth: depth,
		Description: req.Description, Agent: req.AgentName}
	s.record(bg, req.Parent, TypeStart, start)
	_ = s.Started.EmitAll(bg, Note{Start: start, Child: run.ChildSession(), Parent: req.Parent})
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			run.Cancel("parent step aborted")
		case <-done:
		}
	}()
	res, err := run.Wait(bg)
	close(done)
	if err != nil {
		res = Result{StopReason: Failed}
	}
	if res.ChildSession == "" {
		res.ChildSession = run.ChildSession()
	}
	if ctx.Err() != nil && res.StopReason == Completed {
		res.StopReason = Aborted
	}
	end := &EndEvent{Provider: provider, ID: run.ID(), ChildSession: run.ChildSession(), StopReason: res.StopReason, Result: clip(llm.TextOf(res.Output), 2000)}
	s.record(bg, req.Parent, TypeEnd, end)
	_ = s.Ended.EmitAll(bg, Note{End: end, Child: run.ChildSession(), Parent: req.Parent})
	return res, err
}

func (s *Service) record(ctx context.Context, parent agent.Agent, typ string, data any) {
	if parent == nil {
		return
	}
	if _, err := parent.Session().Writer(ownership.Subagents).AppendIf(ctx, func(ts session.TurnState) bool { return ts.Open }, typ, data, nil); err != nil {
		s.log.Warn("subagent: recording a lifecycle event failed", "type", typ, "err", err)
	}
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// Host adapts a tool host to the agent it belongs to.
func Host(agents *agent.Registry, h tool.Host) agent.Agent {
	if h == nil {
		return nil
	}
	a, _ := agents.Get(agent.ID(h.AgentID()))
	return a
}
