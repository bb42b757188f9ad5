// Package agent is dsh's agent vocabulary: the [Agent] handle front-ends
// drive (Send, Steer, Inject, Cancel, WhenIdle), the decisions interception
// points return, the [Hub] of lifecycle points every agent dispatches
// through, and the [Registry] that creates, resumes and tracks agents. The
// loop that implements agents lives in package loop; nothing but
// compositions imports it.
package agent

import (
	"context"
	"errors"
	"iter"
	"sync"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// ID names an agent.
type ID string

// Status of an agent: idle ⇄ running, then disposed (terminal).
type Status string

// Statuses.
const (
	Idle     Status = "idle"
	Running  Status = "running"
	Disposed Status = "disposed"
)

// ErrDisposed is returned by calls on a disposed agent.
var ErrDisposed = errors.New("agent: disposed")

// Options configure an agent.
type Options struct {
	// Model is a model reference ("provider/model" or an alias).
	Model string
	// SystemPrompt is appended after the assembled sections.
	SystemPrompt string
	// Tools restricts the tools this agent sees and may call (nil: all).
	Tools func(tool.Info) bool
	// Approver answers ask decisions; nil fails them closed.
	Approver tool.Approver
	// MaxTokens and Temperature go into every request when set.
	MaxTokens   int
	Temperature *float64
	// MaxSteps ends a turn after this many model calls (0: no limit).
	MaxSteps int
}

// Agent is a running agent. All methods are safe for concurrent use.
type Agent interface {
	ID() ID
	Session() *session.Session
	Options() Options
	Status() Status
	// Send queues a prompt; it starts a turn when idle, otherwise the next.
	Send(ctx context.Context, content []llm.Block, src llm.Source) error
	// Steer joins the running turn between steps; when idle it is Send.
	Steer(ctx context.Context, content []llm.Block, src llm.Source) error
	// Inject adds context without running the model: into the open turn
	// (after the results of tool calls in flight, never between a call and
	// its result), or in a one-shot injection turn when none is open.
	Inject(ctx context.Context, content []llm.Block, src llm.Source) error
	// Cancel stops the running turn (and drops queued input).
	Cancel(reason string)
	// WhenIdle waits until the agent is idle with nothing queued, or has
	// exited after disposal.
	WhenIdle(ctx context.Context) error
	// Scope closes when the agent is disposed; tie resources to it.
	Scope() *kernel.Scope

	// Prompt sends text as the user's prompt and yields the events of the
	// turn that answers it, from its turn/start to its turn/end; the last
	// event's TurnEnd says how it ended. The prompt is sent when the
	// iteration starts. If ctx ends first, the iteration ends with ctx's
	// error and the prompt is withdrawn (still queued) or its turn
	// cancelled (running). Breaking out of the loop only stops watching:
	// the turn goes on. A prompt dropped by Cancel ends the iteration
	// with ErrWithdrawn; a disposed agent with ErrDisposed.
	Prompt(ctx context.Context, text string) iter.Seq2[Event, error]
	// Run is Prompt for any content and source.
	Run(ctx context.Context, content []llm.Block, src llm.Source) iter.Seq2[Event, error]
	// Events yields the agent's session events as they are appended, from
	// the call on, until the end of the turn in progress (or, when none
	// is, of the next turn), ctx's end (with its error) or the agent's
	// disposal. It only watches: it sends nothing and cancels nothing.
	Events(ctx context.Context) iter.Seq2[Event, error]
}

// ErrNothingToRetry is returned by [Retrier.Retry] when the session holds
// nothing a new turn could answer: no prompt yet, or a history that ends
// with the assistant's own message.
var ErrNothingToRetry = errors.New("agent: nothing to retry")

// Retrier is implemented by agents that can run a turn again without a new
// prompt. A caller that finds its prompt recorded in a turn that ended
// without an answer (its process was killed mid-turn and the resuming
// store closed the turn as interrupted, or its model call failed) uses it
// instead of Send, which would record the prompt a second time and have
// the model answer both copies.
type Retrier interface {
	// Retry queues a turn (turn/start with trigger session.TriggerRetry)
	// that records no prompt and steps the model on the history as it
	// is. Like Send it returns once the turn is queued; the turn's
	// turn/end says how it went. It fails with ErrNothingToRetry when the
	// history does not end with something for the model to answer.
	Retry(ctx context.Context) error
}

// Handle owns an agent: Dispose stops its loop, waits for the loop to exit
// (its closing turn/end and flush included), unregisters it and detaches its
// session, in that order. Dispose is idempotent: every caller waits for the
// same teardown.
type Handle struct {
	Agent   Agent
	dispose func(ctx context.Context) error
	once    sync.Once
	done    chan struct{}
	err     error
}

// NewHandle wraps an agent and its teardown.
func NewHandle(a Agent, dispose func(ctx context.Context) error) *Handle {
	return &Handle{Agent: a, dispose: dispose, done: make(chan struct{})}
}

// Dispose tears the agent down. The teardown runs to completion even if ctx
// ends first; ctx only bounds how long this caller waits.
func (h *Handle) Dispose(ctx context.Context) error {
	h.once.Do(func() {
		go func() {
			h.err = h.dispose(context.WithoutCancel(ctx))
			close(h.done)
		}()
	})
	select {
	case <-h.done:
		return h.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// PromptDecision is a prompt-submit verdict: allow (optionally rewriting
// the content and attaching context) or block with a reason.
type PromptDecision struct {
	Block   bool
	Reason  string
	Content []llm.Block
	Context *tool.Context
}

// ContinuationDecision says whether a turn takes another step. A reason is
// steered into the turn as model-facing text.
type ContinuationDecision struct {
	Continue bool
	Reason   *tool.Context
}

// SessionStartSource says why an agent's session started.
type SessionStartSource string

// Session start sources.
const (
	StartStartup SessionStartSource = "startup"
	StartResume  SessionStartSource = "resume"
	StartClear   SessionStartSource = "clear"
	StartCompact SessionStartSource = "compact"
)

type ctxKey struct{}

// NewContext returns ctx carrying a, the agent on whose behalf work under
// it runs. The loop puts each agent into the context of everything it does
// for that agent (prompt assembly, interception points, tool calls), so a
// plugin reached only through a context, such as a dynamic prompt section,
// can still tell which agent and session it serves.
func NewContext(ctx context.Context, a Agent) context.Context {
	return context.WithValue(ctx, ctxKey{}, a)
}

// FromContext returns the agent NewContext put into ctx.
func FromContext(ctx context.Context) (Agent, bool) {
	a, ok := ctx.Value(ctxKey{}).(Agent)
	return a, ok && a != nil
}
