// Package loop is dsh's agent loop: the one concrete [agent.Factory]. Each
// agent runs one driver goroutine that drains its inbox into turns; a turn
// runs steps (one model call plus that call's tools) until the model stops
// asking for tools, a continuation listener says stop, or the turn is
// cancelled, disposed, rejected or fails. Every fact is appended to the
// session first and announced after, so the log is always the truth.
//
// Nothing but compositions imports this package; everything else programs
// against package agent.
package loop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/internal/uuid"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/prompt"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// Deps are the services the loop composes.
type Deps struct {
	Agents   *agent.Registry
	Sessions *session.Live
	LLM      *llm.Service
	Tools    *tool.Registry
	Prompt   *prompt.Builder
	Logger   *slog.Logger
	// NewID returns fresh session ids; tests inject a deterministic one.
	NewID func() string
	Now   func() time.Time
}

// Loop creates agents.
type Loop struct {
	d Deps

	mu   sync.Mutex
	live map[*agent.Handle]struct{} // agents to dispose when the loop is unloaded
}

// New returns a loop; Install registers it as the agent factory.
func New(d Deps) *Loop {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.NewID == nil {
		d.NewID = uuid.New
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Loop{d: d}
}

// Install makes l the registry's factory for the life of scope.
func (l *Loop) Install(scope *kernel.Scope) error {
	dispose, err := l.d.Agents.SetFactory(l)
	if err != nil {
		return err
	}
	if err := scope.Add(dispose); err != nil {
		return err
	}
	// Agents still alive when the host closes are disposed with it, after
	// the factory slot is released (reverse order).
	return scope.Defer(l.DisposeAll)
}

// DisposeAll disposes every agent still running. The host calls it before
// unloading plugins, so agents end (their turns closed, sessions flushed,
// SessionEnd hooks run) while every plugin is still there.
func (l *Loop) DisposeAll() error {
	l.mu.Lock()
	hs := make([]*agent.Handle, 0, len(l.live))
	for h := range l.live {
		hs = append(hs, h)
	}
	l.mu.Unlock()
	var errs []error
	for _, h := range hs {
		if err := h.Dispose(context.Background()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Create starts an agent on a new session.
func (l *Loop) Create(ctx context.Context, opts agent.CreateOptions) (*agent.Handle, error) {
	if err := l.d.Agents.CheckFree(opts.AgentID); err != nil {
		return nil, err
	}
	id := opts.SessionID
	if id == "" {
		id = session.ID(l.d.NewID())
	}
	h := opts.Header
	if len(opts.Seed) > 0 {
		if h.SeedLength == 0 {
			h.SeedLength = len(opts.Seed)
		}
		if err := checkSeed(opts.Seed); err != nil {
			return nil, err
		}
	}
	s, err := l.d.Sessions.Prepare(id, session.Options{Header: h, Seed: opts.Seed, Clock: l.d.Now})
	if err != nil {
		return nil, err
	}
	return l.start(ctx, opts.AgentID, opts.Options, s, agent.StartStartup)
}

func checkSeed(seed []session.Event) error {
	if len(session.CompletedPrefix(seed)) != len(seed) {
		return fmt.Errorf("loop: a seed must end with a completed turn (turn/end)")
	}
	return nil
}

// Resume starts an agent on a stored session, continuing its turn numbering.
func (l *Loop) Resume(ctx context.Context, opts agent.ResumeOptions) (*agent.Handle, error) {
	ld := l.d.Agents.Loader()
	if ld == nil {
		return nil, fmt.Errorf("loop: cannot resume: session persistence is not configured")
	}
	if err := l.d.Agents.CheckFree(opts.AgentID); err != nil {
		return nil, err
	}
	build := func(o session.Options) (*session.Session, error) {
		if err := l.d.Agents.CheckFree(opts.AgentID); err != nil {
			return nil, err
		}
		o.Clock = l.d.Now
		return l.d.Sessions.Prepare(opts.SessionID, o)
	}
	var (
		s   *session.Session
		err error
	)
	if rs, ok := ld.(agent.Resumer); ok {
		s, err = rs.Resume(ctx, opts.SessionID, build)
	} else {
		var h session.Header
		var events []session.Event
		if h, events, err = ld.Load(ctx, opts.SessionID); err == nil {
			// The store parsed every event it read: no second pass.
			s, err = build(session.Options{Header: h, Seed: events, Validated: true})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("loop: resuming %s: %w", opts.SessionID, err)
	}
	return l.start(ctx, opts.AgentID, opts.Options, s, agent.StartResume)
}

// start enters the session, registers the agent, announces session start
// and launches the driver. Teardown runs in the reverse order.
func (l *Loop) start(ctx context.Context, id agent.ID, opts agent.Options, s *session.Session, src agent.SessionStartSource) (*agent.Handle, error) {
	a := newAgent(l, id, opts, s)
	detach, err := l.d.Sessions.Enter(s)
	if err != nil {
		return nil, err
	}
	if err := l.d.Sessions.Announce(ctx, s); err != nil {
		detach()
		return nil, fmt.Errorf("loop: announcing session %s: %w", s.ID(), err)
	}
	unregister, err := l.d.Agents.Register(ctx, a)
	if err != nil {
		detach()
		return nil, err
	}
	if err := l.d.Agents.Hub.SessionStart.Emit(ctx, agent.SessionStart{Agent: a, Source: src}); err != nil {
		l.d.Logger.Warn("agent/session-start listener failed", "agent", id, "err", err)
	}
	a.run()
	var h *agent.Handle
	h = agent.NewHandle(a, func(ctx context.Context) error {
		a.stop()
		<-a.done
		unregister()
		detach()
		l.mu.Lock()
		delete(l.live, h)
		l.mu.Unlock()
		return a.scope.Close()
	})
	l.mu.Lock()
	if l.live == nil {
		l.live = map[*agent.Handle]struct{}{}
	}
	l.live[h] = struct{}{}
	l.mu.Unlock()
	return h, nil
}
