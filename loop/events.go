package loop

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// ticket follows one prompt sent by Run to the turn that takes it. The
// driver resolves it when that turn's turn/start is in the log (start is
// its seq); Cancel, disposal or a turn that could not open resolve it with
// an error.
type ticket struct {
	done  chan struct{}
	start int64
	err   error
}

// resolve records where the prompt's turn starts, or why it has none.
// Callers hold a.mu, so a ticket is resolved once.
func (tk *ticket) resolve(start int64, err error) {
	if tk == nil {
		return
	}
	select {
	case <-tk.done:
		return
	default:
	}
	tk.start, tk.err = start, err
	close(tk.done)
}

// Prompt implements agent.Agent.
func (a *loopAgent) Prompt(ctx context.Context, text string) iter.Seq2[agent.Event, error] {
	return a.Run(ctx, []llm.Block{llm.Text(text)}, llm.UserSource)
}

// Run implements agent.Agent: it queues the prompt with a ticket, waits for
// the turn that takes it and follows the log from that turn's turn/start to
// its turn/end.
func (a *loopAgent) Run(ctx context.Context, content []llm.Block, src llm.Source) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		tk := &ticket{done: make(chan struct{})}
		if err := a.send(ctx, content, src, tk); err != nil {
			yield(agent.Event{}, err)
			return
		}
		select {
		case <-tk.done:
		case <-ctx.Done():
			// A turn that took the prompt already is the caller's: its
			// events so far are yielded before ctx's error (follow
			// does), whichever of the two this select saw first.
			select {
			case <-tk.done:
			default:
				a.abandon(tk, context.Cause(ctx))
				yield(agent.Event{}, ctx.Err())
				return
			}
		}
		if tk.err != nil {
			yield(agent.Event{}, tk.err)
			return
		}
		if err := a.follow(ctx, int(tk.start), yield); err != nil {
			if ctx.Err() != nil {
				a.abandon(tk, context.Cause(ctx))
			}
			yield(agent.Event{}, err)
		}
	}
}

// Events implements agent.Agent.
func (a *loopAgent) Events(ctx context.Context) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) {
		if err := a.follow(ctx, a.sess.Len(), yield); err != nil {
			yield(agent.Event{}, err)
		}
	}
}

// errStopFollow ends a Range early when the consumer stopped.
var errStopFollow = errors.New("loop: follower stopped")

// follow yields the session's events from seq from on, through the first
// turn/end it meets. It returns ctx's error when ctx ends first, the
// disposal error when the agent's driver exited before that turn/end, and
// nil when the turn ended or the consumer stopped.
func (a *loopAgent) follow(ctx context.Context, from int, yield func(agent.Event, error) bool) error {
	n := from
	for {
		// A follower that fell behind reads what was released back from
		// the store; one near the head reads memory only.
		stop := false
		// What is logged is yielded even when ctx has ended (as before
		// the wait below reports it).
		err := a.sess.Range(context.WithoutCancel(ctx), int64(n), int64(a.sess.Len()), func(e session.Event) error {
			n++
			if !yield(agent.EventOf(a.sess, e), nil) || e.Type == session.TypeTurnEnd {
				stop = true
				return errStopFollow
			}
			return nil
		})
		if stop {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-a.sess.WhenLonger(n):
		case <-ctx.Done():
			return ctx.Err()
		case <-a.done:
			if a.sess.Len() > n {
				continue // the driver's last events: read them first
			}
			return a.disposedErr()
		}
	}
}

// send queues a prompt; tk (may be nil) follows it to its turn.
func (a *loopAgent) send(ctx context.Context, content []llm.Block, src llm.Source, tk *ticket) error {
	src = src.OrUser()
	a.mu.Lock()
	if a.disposed {
		a.mu.Unlock()
		return a.disposedErr()
	}
	a.queue = append(a.queue, queued{content: llm.CloneBlocks(content), src: src, ticket: tk})
	a.mu.Unlock()
	a.wakeDriver()
	return a.l.d.Agents.Hub.Queued.Emit(ctx, agent.Queued{Agent: a, Content: content, Source: src})
}

func (a *loopAgent) wakeDriver() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Retry queues a turn that records no prompt and answers the history as it
// stands (agent.Retrier). The history must end with something the model
// can answer: a prompt, context or tool results, not the assistant's own
// message. No agent/queued is announced: there is no content to show.
func (a *loopAgent) Retry(ctx context.Context) error {
	msgs, err := a.sess.Messages()
	if err != nil {
		return fmt.Errorf("loop: agent %q: retry: %w", a.id, err)
	}
	if len(msgs) == 0 || msgs[len(msgs)-1].Role == llm.RoleAssistant {
		return fmt.Errorf("loop: agent %q: the history ends with no prompt to answer: %w", a.id, agent.ErrNothingToRetry)
	}
	a.mu.Lock()
	if a.disposed {
		a.mu.Unlock()
		return a.disposedErr()
	}
	a.queue = append(a.queue, queued{src: llm.UserSource, retry: true})
	a.mu.Unlock()
	a.wakeDriver()
	return nil
}

var _ agent.Retrier = (*loopAgent)(nil)

// abandon gives up on a prompt whose Run context ended: still queued, it
// is withdrawn; taken by the turn that is opening or running, that turn is
// cancelled. Other queued prompts are kept.
func (a *loopAgent) abandon(tk *ticket, cause error) {
	reason := "the prompt's context ended"
	if cause != nil {
		reason = cause.Error()
	}
	a.mu.Lock()
	if i := slices.IndexFunc(a.queue, func(q queued) bool { return q.ticket == tk }); i >= 0 {
		a.queue = slices.Delete(a.queue, i, i+1)
		tk.resolve(-1, cause)
		if a.status != agent.Running && len(a.queue) == 0 {
			a.settleIdleLocked()
		}
		a.mu.Unlock()
		return
	}
	if !slices.Contains(a.current, tk) {
		a.mu.Unlock()
		return // its turn is over
	}
	a.cancelMarked, a.cancelReason = true, reason
	sc := a.stepCancel
	a.mu.Unlock()
	if sc != nil {
		sc(errors.New(reason))
	}
}

// resolveTickets tells the prompts of a batch where their turn starts.
func (a *loopAgent) resolveTickets(batch []queued, start int64, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, q := range batch {
		q.ticket.resolve(start, err)
	}
}
