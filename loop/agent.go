package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/prompt"
	"github.com/dshq/dsh/session"
)

type queued struct {
	content []llm.Block
	src     llm.Source
	ticket  *ticket // set for prompts sent by Run
	// retry marks a turn that records no prompt (Retry): content is
	// empty and the turn answers the history as it stands.
	retry bool
}

// loopAgent is one agent and its driver.
type loopAgent struct {
	l    *Loop
	id   agent.ID
	opts agent.Options
	sess *session.Session
	// log appends the events the loop owns (turn/*, step/*, assistant/*,
	// tool/*, …); nothing outside the loop holds its token.
	log   session.Writer
	scope *kernel.Scope
	// prompt is this agent's view of the system prompt: the shared sections
	// plus its own (the AGENTS.md of its working directory).
	prompt *prompt.Builder

	ctx    context.Context // cancelled (cause: disposed) by stop
	cancel context.CancelCauseFunc

	mu           sync.Mutex
	status       agent.Status
	queue        []queued
	steering     []queued
	wake         chan struct{}
	disposedCh   chan struct{}
	disposed     bool
	cancelMarked bool
	cancelReason string
	stepCancel   context.CancelCauseFunc
	idleWaiters  []chan struct{}
	done         chan struct{}
	// current are the tickets of the batch the running turn took.
	current []*ticket

	// holding is set (under mu) while a step's tool calls await their
	// results: from just before the assistant/message carrying them until
	// every call is answered. Inject then queues its context in held
	// instead of appending it, so nothing lands between a call and its
	// result; the driver appends held context, in arrival order, right
	// after the step's results (see turnState.settle). holdFlag mirrors
	// holding for Inject's append condition, which runs under the
	// session's lock.
	holding  bool
	held     []heldContext
	holdFlag atomic.Bool
}

// heldContext is context that arrived while a step's tools were in flight.
// step marks context the step itself attached (post-execute): failing to
// record it fails the step, as an inline append would have.
type heldContext struct {
	queued
	step bool
}

var errDisposedCause = errors.New("disposed")

func newAgent(l *Loop, id agent.ID, opts agent.Options, s *session.Session) *loopAgent {
	pb := l.d.Prompt.Child()
	a := &loopAgent{
		prompt: pb,
		l:      l, id: id, opts: opts, sess: s, log: s.Writer(ownership.Loop),
		scope:      kernel.NewScope("agent " + string(id)),
		status:     agent.Idle,
		wake:       make(chan struct{}, 1),
		disposedCh: make(chan struct{}),
		done:       make(chan struct{}),
	}
	a.ctx, a.cancel = context.WithCancelCause(agent.NewContext(context.Background(), a))
	return a
}

func (a *loopAgent) ID() agent.ID              { return a.id }
func (a *loopAgent) Session() *session.Session { return a.sess }
func (a *loopAgent) Options() agent.Options    { return a.opts }
func (a *loopAgent) Scope() *kernel.Scope      { return a.scope }

// Status returns the current status.
func (a *loopAgent) Status() agent.Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}

// tool.Host

func (a *loopAgent) AgentID() string   { return string(a.id) }
func (a *loopAgent) SessionID() string { return string(a.sess.ID()) }
func (a *loopAgent) Cwd() string       { return a.sess.Cwd() }

// Append is a tool's append: it records only event types no capability
// owns. A tool that tries to write the loop's own events (turn/end,
// tool/result, …) gets session.ErrOwned and nothing is written; the
// loop's own appends go through a.log.
func (a *loopAgent) Append(ctx context.Context, typ string, data any) error {
	_, err := a.sess.Append(ctx, typ, data)
	return err
}

func (a *loopAgent) disposedErr() error {
	return fmt.Errorf("agent %q is disposed: %w", a.id, agent.ErrDisposed)
}

// Send queues a prompt.
func (a *loopAgent) Send(ctx context.Context, content []llm.Block, src llm.Source) error {
	return a.send(ctx, content, src, nil)
}

// Steer joins the running turn, or sends when idle.
func (a *loopAgent) Steer(ctx context.Context, content []llm.Block, src llm.Source) error {
	src = src.OrUser()
	a.mu.Lock()
	if a.disposed {
		a.mu.Unlock()
		return a.disposedErr()
	}
	if a.status != agent.Running {
		a.mu.Unlock()
		return a.Send(ctx, content, src)
	}
	a.steering = append(a.steering, queued{content: llm.CloneBlocks(content), src: src})
	a.mu.Unlock()
	return a.l.d.Agents.Hub.Queued.Emit(ctx, agent.Queued{Agent: a, Content: content, Source: src, Steering: true})
}

// Inject records context: inside the open turn, or in a one-shot injection
// turn (flushed in the background) when none is open.
//
// While a step's tool calls await their results (from the assistant/message
// carrying them to the last tool/result of the step) the context is held
// and Inject returns nil at once: the driver records it, in arrival order,
// right after the step's results and before step/end. Providers reject a
// history with a message between an assistant's tool calls and their
// results, and completion notices (background bash tasks) or a tool's own
// Inject can arrive at any time.
func (a *loopAgent) Inject(ctx context.Context, content []llm.Block, src llm.Source) error {
	src = src.OrUser()
	a.mu.Lock()
	disposed := a.disposed
	a.mu.Unlock()
	if disposed {
		return a.disposedErr()
	}
	prompt := session.Prompt{Content: content, Source: src}
	op := session.AppendOp
	for {
		if held, err := a.holdContext(queued{content: content, src: src}, false); held || err != nil {
			return err
		}
		st := a.sess.Turns()
		if st.Open {
			// Land inside the open turn, unless it closes under us or a
			// step's tools started meanwhile (then hold it).
			_, err := a.log.AppendIf(ctx, func(ts session.TurnState) bool { return ts.Open && !a.holdFlag.Load() }, session.TypeContextMessage, prompt, &op)
			if errors.Is(err, session.ErrCondition) {
				continue
			}
			return err
		}
		turn := st.Last + 1
		s := src
		_, err := a.log.AppendIf(ctx, func(ts session.TurnState) bool { return !ts.Open && ts.Last == st.Last },
			session.TypeTurnStart, session.TurnStart{Turn: turn, Trigger: session.Trigger{Kind: session.TriggerInjection, Source: &s}}, nil)
		if errors.Is(err, session.ErrCondition) {
			continue // the driver or another injector opened a turn first
		}
		opened := a.sess.HasTurnStart(turn)
		if err == nil {
			_, err = a.log.AppendSurface(ctx, session.TypeContextMessage, prompt, session.AppendOp, nil)
		}
		if ts := a.sess.Turns(); ts.Open && ts.Last == turn {
			if _, cerr := a.log.Append(ctx, session.TypeTurnEnd, session.TurnEnd{Turn: turn, Reason: session.EndReason{Kind: session.EndCompleted}}); cerr != nil {
				a.l.d.Logger.Warn("turn/end listener failed after an injection", "agent", a.id, "err", cerr)
			}
		}
		if opened {
			go func() {
				if ferr := a.l.d.Sessions.FlushSession(context.WithoutCancel(ctx), a.sess); ferr != nil {
					a.l.d.Logger.Warn("session flush failed after an injection", "agent", a.id, "err", ferr)
					a.reportError(turn, 0, ferr)
				}
			}()
		}
		return err
	}
}

// holdContext queues m for the driver when a step's tools are in flight and
// reports whether it did. Context the step itself attached (step) is always
// queued: the driver releases it when it settles the step.
//
// Context from elsewhere is checked before it is held, so content the log
// would refuse (not JSON) is still refused to the caller.
func (a *loopAgent) holdContext(m queued, step bool) (bool, error) {
	if !step {
		if !a.holdFlag.Load() {
			return false, nil
		}
		if _, err := json.Marshal(session.Prompt{Content: m.content, Source: m.src}); err != nil {
			return false, fmt.Errorf("session: event %q carries non-JSON data: %w", session.TypeContextMessage, err)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.holding && !step {
		return false, nil // released meanwhile: append it directly
	}
	m.content = llm.CloneBlocks(m.content)
	a.held = append(a.held, heldContext{queued: m, step: step})
	return true, nil
}

// beginHold starts holding injected context; the driver calls it before it
// appends an assistant/message with tool calls.
func (a *loopAgent) beginHold() {
	a.mu.Lock()
	a.holding = true
	a.holdFlag.Store(true)
	a.mu.Unlock()
}

// takeHeld returns the held context, or, when there is none, stops holding
// (so the check and the release are one step and nothing is stranded).
func (a *loopAgent) takeHeld() []heldContext {
	a.mu.Lock()
	defer a.mu.Unlock()
	items := a.held
	a.held = nil
	if len(items) == 0 {
		a.holding = false
		a.holdFlag.Store(false)
	}
	return items
}

// Cancel stops the running turn and drops queued input.
func (a *loopAgent) Cancel(reason string) {
	if reason == "" {
		reason = "cancelled"
	}
	a.mu.Lock()
	if a.status == agent.Running || a.stepCancel != nil || len(a.queue) > 0 || len(a.steering) > 0 {
		a.cancelMarked = true
		a.cancelReason = reason
	}
	for _, q := range a.queue {
		q.ticket.resolve(-1, agent.ErrWithdrawn)
	}
	a.queue, a.steering = nil, nil
	sc := a.stepCancel
	if a.status != agent.Running && sc == nil {
		// Nothing runs, and the input the driver was about to pick up is
		// gone: it may never wake for it, so release WhenIdle waiters here.
		// The mark stays for the driver if it is already on its way.
		a.settleIdleLocked()
	}
	a.mu.Unlock()
	if sc != nil {
		sc(errors.New(reason))
	}
}

// WhenIdle waits for quiescence.
func (a *loopAgent) WhenIdle(ctx context.Context) error {
	a.mu.Lock()
	if a.disposed {
		a.mu.Unlock()
		select {
		case <-a.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if a.status != agent.Running && len(a.queue) == 0 {
		a.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	a.idleWaiters = append(a.idleWaiters, ch)
	a.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return ctx.Err()
	}
	a.mu.Lock()
	disposed := a.disposed
	a.mu.Unlock()
	if disposed {
		select {
		case <-a.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// settleIdle wakes WhenIdle waiters; callers hold a.mu.
func (a *loopAgent) settleIdleLocked() {
	for _, ch := range a.idleWaiters {
		close(ch)
	}
	a.idleWaiters = nil
}

// setStatus records a real transition and announces it. A failing listener
// is logged: it can neither break the loop nor starve WhenIdle.
// setStatus records a real transition and announces it. Only the driver
// goroutine calls it (and only the driver announces disposal, as it exits),
// so announcements can never arrive out of order.
func (a *loopAgent) setStatus(s agent.Status) {
	a.mu.Lock()
	if a.status == s || a.status == agent.Disposed {
		a.mu.Unlock()
		return
	}
	a.status = s
	a.mu.Unlock()
	a.announce(s)
	if s != agent.Running {
		// Waiters wake after the announcement, so whoever waited sees the
		// status listeners' effects.
		a.mu.Lock()
		// Only a real quiescence wakes waiters: a prompt queued meanwhile
		// means the agent is about to run again.
		if a.status == s && len(a.queue) == 0 {
			a.settleIdleLocked()
		}
		a.mu.Unlock()
	}
}

func (a *loopAgent) announce(s agent.Status) {
	if err := a.l.d.Agents.Hub.Status.EmitAll(context.WithoutCancel(a.ctx), agent.StatusChange{Agent: a, Status: s}); err != nil {
		a.l.d.Logger.Warn("agent/status listener failed", "agent", a.id, "err", err)
	}
}

func (a *loopAgent) reportError(turn, step int, err error) {
	if e := a.l.d.Agents.Hub.Error.EmitAll(context.WithoutCancel(a.ctx), agent.ErrorNote{Agent: a, Turn: turn, Step: step, Err: err}); e != nil {
		a.l.d.Logger.Warn("agent/error listener failed", "agent", a.id, "err", e)
	}
}

// stop begins disposal; it never blocks on the driver.
// stop begins disposal; it never blocks on the driver. The driver
// announces "disposed" when it exits, after the turn in flight closed.
func (a *loopAgent) stop() {
	a.mu.Lock()
	if a.disposed {
		a.mu.Unlock()
		return
	}
	a.disposed = true
	a.status = agent.Disposed
	close(a.disposedCh)
	a.settleIdleLocked()
	sc := a.stepCancel
	a.mu.Unlock()
	a.cancel(errDisposedCause)
	if sc != nil {
		sc(errDisposedCause)
	}
}

// cancelRequested reports whether a cancel of the running turn is pending.
func (a *loopAgent) cancelRequested() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cancelMarked
}

func (a *loopAgent) isDisposed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.disposed
}

func (a *loopAgent) run() { go a.drive() }

// drive is the driver goroutine: one turn per drain of the queue.
func (a *loopAgent) drive() {
	defer func() {
		a.mu.Lock()
		for _, q := range a.queue {
			q.ticket.resolve(-1, a.disposedErr())
		}
		a.mu.Unlock()
		a.announce(agent.Disposed)
		close(a.done)
	}()
	for {
		a.mu.Lock()
		for len(a.queue) == 0 && !a.disposed {
			a.mu.Unlock()
			select {
			case <-a.wake:
			case <-a.disposedCh:
			}
			a.mu.Lock()
		}
		if a.disposed {
			a.mu.Unlock()
			return
		}
		// Window 1: a cancel landed after Send woke us, before running.
		if a.cancelMarked {
			a.cancelMarked = false
			if len(a.queue) == 0 {
				a.settleIdleLocked()
				a.mu.Unlock()
				continue
			}
		}
		a.mu.Unlock()
		a.setStatus(agent.Running)
		// Window 2: a cancel from a status listener.
		a.mu.Lock()
		if a.cancelMarked {
			a.cancelMarked = false
			if len(a.queue) == 0 {
				a.mu.Unlock()
				a.setStatus(agent.Idle)
				continue
			}
		}
		// Drain under the same lock as the check: a later cancel finds the
		// batch already taken and ends the turn instead.
		batch := a.queue
		a.queue = nil
		a.current = a.current[:0]
		for _, q := range batch {
			if q.ticket != nil {
				a.current = append(a.current, q.ticket)
			}
		}
		a.mu.Unlock()
		if turn, err := a.runTurn(batch); err != nil {
			a.l.d.Logger.Warn("turn failed before it started", "agent", a.id, "turn", turn, "err", err)
			a.reportError(turn, 0, toError(err))
		}
		a.mu.Lock()
		a.current = a.current[:0]
		a.cancelMarked = false
		a.queue = append(a.queue, a.steering...)
		a.steering = nil
		empty := len(a.queue) == 0
		a.mu.Unlock()
		if empty {
			a.setStatus(agent.Idle)
		}
	}
}

// toError turns a listener's failure into an error value.
func toError(err error) error {
	if err == nil {
		return nil
	}
	var pe *kernel.PanicError
	if errors.As(err, &pe) {
		if _, ok := pe.Value.(error); !ok {
			return &llm.Error{Name: "HarnessError", Code: llm.CodeUnknown, Message: fmt.Sprint(pe.Value), Cause: err}
		}
	}
	return err
}
