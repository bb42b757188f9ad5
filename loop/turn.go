package loop

import (
	"context"
	"errors"
	"strings"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/prompt"
	"github.com/dshq/dsh/session"
)

// A turn is a short pipeline of step functions (runTurn → submit → takeStep
// → openStep, runStep, finishStep → continues → end). None of them decides
// how the turn ends: each records what happened in the turn's stopFacts and
// says whether to go on; stopFacts.endReason alone turns the facts into the
// reason turn/end records.

// turnState is one turn's bookkeeping.
type turnState struct {
	a           *loopAgent
	turn        int
	step        int
	stepOpen    bool
	bg          context.Context // never cancelled: bookkeeping appends and flushes
	lastDrained bool
	opened      bool  // this turn's turn/start is in the log
	startSeq    int64 // the seq of that turn/start
	stop        stopFacts
	tools       toolRun // set up by the turn's first tool call
	callSeqs    []callRef
	// owed are the tool calls of the open step's assistant/message that
	// have no tool/result yet. settle answers each before step/end.
	owed []owedCall
	// notRun explains, in the synthetic results settle records, why the
	// open step's remaining calls did not run ("" until the step fails).
	notRun string
}

// stopFacts is what happened during a turn that bears on how it ends.
type stopFacts struct {
	disposed     bool
	aborted      bool
	abortReason  string
	failure      *session.EndReason // the first failure; already reported on agent/error
	rejected     bool               // every prompt was blocked
	rejectReason string
	maxSteps     bool // the step limit was reached
	maxTokens    bool // a step's model call stopped at its token limit
}

// endReason is the one place that decides how a turn ends. A log that
// could not be saved comes first: front doors must not claim an outcome the
// store does not hold. Disposal and cancellation are why a turn stopped even
// when something else failed on the way out (the failure was still reported
// on agent/error); a failure beats the quiet endings; a turn that ran to its
// end is completed, or max-tokens when a model call was cut short.
func (f *stopFacts) endReason() session.EndReason {
	switch {
	case f.failure != nil && f.failure.Code == session.CodeNotSaved:
		return *f.failure
	case f.disposed:
		return session.EndReason{Kind: session.EndDisposed}
	case f.aborted:
		return session.EndReason{Kind: session.EndAborted, Reason: f.abortReason}
	case f.failure != nil:
		return *f.failure
	case f.rejected:
		return session.EndReason{Kind: session.EndRejected, Reason: f.rejectReason}
	case f.maxSteps:
		return session.EndReason{Kind: session.EndMaxSteps}
	case f.maxTokens:
		return session.EndReason{Kind: session.EndMaxTokens}
	}
	return session.EndReason{Kind: session.EndCompleted}
}

// runTurn runs one turn. It returns an error only when the turn could not
// even be opened (nothing was recorded).
func (a *loopAgent) runTurn(batch []queued) (int, error) {
	t := &turnState{a: a, bg: context.WithoutCancel(a.ctx)}
	trigger := session.Trigger{Kind: session.TriggerMessage, Source: &batch[0].src}
	if batch[0].retry {
		trigger = session.Trigger{Kind: session.TriggerRetry}
	}
	err := a.openTurn(t, trigger)
	if t.opened {
		a.resolveTickets(batch, t.startSeq, nil)
	} else {
		a.resolveTickets(batch, -1, err)
	}
	switch {
	case err != nil && !t.opened:
		return a.sess.LastTurn() + 1, err
	case err != nil:
		t.fail(err) // turn/start is in the log, but a listener failed
	case t.submit(batch):
		// The prompt is durable before anything can go wrong with the
		// model, and nothing is sent that the log could not record.
		if t.flush() {
			for t.takeStep() {
			}
		}
	}
	t.end()
	return t.turn, nil
}

// openTurn appends this turn's turn/start. Only one turn may be open: when
// another turn is open (an injection turn from another goroutine, or
// /compact on an idle agent), wait until the session's turn state changes,
// then take the next number.
func (a *loopAgent) openTurn(t *turnState, trigger session.Trigger) error {
	for {
		st, changed := a.sess.WatchTurns()
		if st.Open {
			select {
			case <-changed:
			case <-a.disposedCh:
				return a.disposedErr()
			}
			continue
		}
		turn := st.Last + 1
		ev, err := a.log.AppendIf(t.bg, func(ts session.TurnState) bool { return !ts.Open && ts.Last == st.Last },
			session.TypeTurnStart, session.TurnStart{Turn: turn, Trigger: trigger}, nil)
		if errors.Is(err, session.ErrCondition) {
			continue
		}
		if ev.Type != "" {
			// Pushed (a listener may still have failed): the turn is ours.
			t.turn, t.opened, t.startSeq = turn, true, ev.Seq
		}
		return err
	}
}

// submit offers each prompt of the batch to prompt-submit listeners and
// records it, or its blocking. It reports whether any prompt reached the
// turn (a retry counts as one: it answers the prompt already recorded);
// when none did, the turn is rejected.
func (t *turnState) submit(batch []queued) bool {
	allowed, lastBlock := false, "prompt blocked by hook"
	for _, m := range batch {
		if m.retry {
			allowed = true // the history's own prompt is answered
			continue
		}
		blocked, reason, err := t.submitPrompt(m)
		if err != nil {
			t.fail(err)
			return false
		}
		if blocked {
			lastBlock = reason
		} else {
			allowed = true
		}
	}
	if !allowed {
		t.stop.rejected, t.stop.rejectReason = true, lastBlock
	}
	return allowed
}

// submitPrompt records one prompt as prompt-submit listeners decide:
// prompt/blocked, or user/message (maybe rewritten) and the context they
// attached.
func (t *turnState) submitPrompt(m queued) (blocked bool, reason string, err error) {
	a := t.a
	d, err := a.l.d.Agents.Hub.PromptSubmit.Run(a.ctx, agent.PromptInput{Agent: a, Turn: t.turn, Content: m.content, Source: m.src},
		func(context.Context, agent.PromptInput) (agent.PromptDecision, error) {
			return agent.PromptDecision{}, nil
		})
	if err != nil {
		return false, "", err
	}
	if d.Block {
		_, err := a.log.Append(t.bg, session.TypePromptBlocked, session.PromptBlocked{Content: m.content, Source: m.src, Reason: d.Reason})
		return true, d.Reason, err
	}
	content := m.content
	if d.Content != nil {
		content = d.Content
	}
	if _, err := a.log.AppendSurface(t.bg, session.TypeUserMessage, session.Prompt{Content: content, Source: m.src}, session.AppendOp, nil); err != nil {
		return false, "", err
	}
	if d.Context != nil {
		return false, "", a.Inject(t.bg, d.Context.Content, d.Context.Source)
	}
	return false, "", nil
}

// takeStep runs one step: steering and the system prompt, pre-step and
// step/start, the model call and its tools, step/end. It reports whether the
// turn takes another step.
func (t *turnState) takeStep() bool {
	a := t.a
	if a.opts.MaxSteps > 0 && t.step >= a.opts.MaxSteps {
		t.stop.maxSteps = true
		return false
	}
	t.step++
	asm, system, err := t.systemPrompt()
	if err != nil {
		t.fail(err)
		return false
	}
	if t.stopped() {
		return false
	}
	ctx, cancel := a.beginStep()
	if !t.openStep(ctx, system) {
		a.endStep(cancel)
		return false
	}
	out, err := a.runStep(ctx, t, asm, system)
	var cancelled error
	if ctx.Err() != nil {
		cancelled = context.Cause(ctx)
	}
	a.endStep(cancel)
	if err != nil {
		t.stepFailed(err, cancelled)
		return false
	}
	return t.finishStep(out)
}

// systemPrompt records queued steering, then assembles the step's system
// prompt.
func (t *turnState) systemPrompt() (*prompt.Assembly, string, error) {
	a := t.a
	if err := a.drainSteering(t); err != nil {
		return nil, "", err
	}
	// Steering recorded before the step does not by itself ask for another.
	t.lastDrained = false
	asm, err := a.prompt.Build(a.ctx)
	if err != nil {
		return nil, "", err
	}
	return asm, joinNonEmpty(asm.Render(a.ctx), a.opts.SystemPrompt), nil
}

// beginStep gives the step a context that Cancel and disposal cancel;
// endStep releases it.
func (a *loopAgent) beginStep() (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(a.ctx)
	a.mu.Lock()
	a.stepCancel = cancel
	a.mu.Unlock()
	return ctx, cancel
}

func (a *loopAgent) endStep(cancel context.CancelCauseFunc) {
	a.mu.Lock()
	a.stepCancel = nil
	a.mu.Unlock()
	cancel(nil)
}

// openStep runs pre-step listeners (compaction) and appends step/start. It
// reports whether the step goes ahead; a cancel or a disposal may stop it
// on either side of step/start.
func (t *turnState) openStep(ctx context.Context, system string) bool {
	a := t.a
	info := agent.StepInfo{Agent: a, Turn: t.turn, Step: t.step}
	if err := a.l.d.Agents.Hub.PreStep.Run(ctx, agent.PreStep{StepInfo: info, SystemPrompt: system}); err != nil {
		t.fail(err)
		return false
	}
	if t.stopped() {
		return false
	}
	t.stepOpen, t.notRun = true, ""
	if _, err := a.log.Append(t.bg, session.TypeStepStart, session.StepBoundary{Turn: t.turn, Step: t.step}); err != nil {
		t.fail(err)
		return false
	}
	if t.stopped() {
		t.closeStep()
		return false
	}
	// What pre-step listeners recorded (a compaction, session rules) is
	// durable before the model is asked; usually there is nothing to write.
	if !t.flush() {
		t.closeStep()
		return false
	}
	return true
}

// finishStep closes a step whose model call and tools ran, and asks
// whether the turn goes on.
func (t *turnState) finishStep(out stepOutcome) bool {
	if out.finish.Kind == llm.FinishMaxTokens {
		t.stop.maxTokens = true
	}
	if err := t.a.drainSteering(t); err != nil {
		t.fail(err)
		return false
	}
	if t.closeStep() {
		return false
	}
	if !t.flush() {
		return false
	}
	return t.continues(out.hadToolCalls || t.lastDrained)
}

// continues runs turn-continuation listeners; by default the turn goes on
// after tool calls or steering. A reason given with "continue" is steered
// into the next step; steering queued meanwhile always continues the turn,
// unless it was cancelled or the agent disposed.
func (t *turnState) continues(byDefault bool) bool {
	a := t.a
	def := agent.ContinuationDecision{Continue: byDefault}
	d, err := a.l.d.Agents.Hub.Continuation.Run(a.ctx, agent.ContinuationInput{Agent: a, Turn: t.turn, Default: def},
		func(context.Context, agent.ContinuationInput) (agent.ContinuationDecision, error) { return def, nil })
	if err != nil {
		t.report(toError(err))
		return false
	}
	a.mu.Lock()
	if d.Continue && d.Reason != nil {
		a.steering = append(a.steering, queued{content: d.Reason.Content, src: d.Reason.Source.OrUser()})
	}
	cont := d.Continue || len(a.steering) > 0
	a.mu.Unlock()
	return !t.stopped() && cont
}

// end closes the turn: turn/end with the reason endReason decides, then a
// flush.
func (t *turnState) end() {
	if t.stop.failure == nil {
		// Everything before turn/end is durable before the turn claims its
		// outcome: a failure here still makes the end an error.
		t.flush()
	}
	r := t.stop.endReason()
	if t.opened && (r.Kind == session.EndAborted || (r.Kind == session.EndDisposed && t.a.cancelRequested())) {
		// A cancel that a disposal overtook (the terminal's /exit and
		// ctrl-d cancel, then dispose) is still the user stopping the turn.
		t.markInterrupted()
	}
	if _, err := t.a.log.Append(t.bg, session.TypeTurnEnd, session.TurnEnd{Turn: t.turn, Reason: r}); err != nil {
		t.a.l.d.Logger.Warn("turn/end listener failed", "agent", t.a.id, "turn", t.turn, "err", err)
	}
	t.finalFlush()
}

// InterruptedMarker is the context an interrupted turn ends with, so the
// next request tells the model that the user stopped it (what it had said,
// and which calls did not run, precede it).
const InterruptedMarker = "[interrupted by the user]"

// markInterrupted records [InterruptedMarker] as the turn's last context.
func (t *turnState) markInterrupted() {
	if t.settle(t.notRun) != nil {
		return // a call is still unanswered: nothing may follow it
	}
	content := []llm.Block{llm.Text(InterruptedMarker)}
	if _, err := t.a.log.AppendSurface(t.bg, session.TypeContextMessage, session.Prompt{Content: content, Source: llm.UserSource}, session.AppendOp, nil); err != nil {
		t.a.l.d.Logger.Warn("recording the interrupt marker failed", "agent", t.a.id, "turn", t.turn, "err", err)
	}
}

// stopped notes a disposal or a cancel that arrived between steps and
// reports whether one did.
func (t *turnState) stopped() bool {
	a := t.a
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.disposed:
		t.stop.disposed = true
		return true
	case a.cancelMarked:
		t.stop.aborted, t.stop.abortReason = true, a.cancelReason
		return true
	}
	return false
}

// fail stops the turn on an error outside the model call and its tools
// (a listener, an append): the open step is closed, its unrun calls
// answered "not run: the step failed", and the failure reported, unless the
// agent is being disposed, which is then why the turn stopped.
func (t *turnState) fail(err error) {
	if len(t.owed) > 0 && t.notRun == "" {
		t.notRun = notRunText(t.a.isDisposed(), nil, err)
	}
	t.closeStep()
	if t.a.isDisposed() {
		t.stop.disposed = true
		return
	}
	t.report(toError(err))
}

// stepFailed stops the turn after the model call or its tools failed:
// because the agent was disposed, because the step was cancelled (cancelled
// is the cause), or for a reason that is reported as a failure.
func (t *turnState) stepFailed(err, cancelled error) {
	disposed := t.a.isDisposed()
	if len(t.owed) > 0 {
		t.notRun = notRunText(disposed, cancelled, err)
	}
	t.closeStep()
	switch {
	case t.a.isDisposed():
		t.stop.disposed = true
	case cancelled != nil:
		t.stop.aborted, t.stop.abortReason = true, cancelled.Error()
	default:
		t.report(toError(err))
	}
}

// report records the turn's first failure and announces it on agent/error.
func (t *turnState) report(err error) {
	if t.stop.failure != nil {
		return
	}
	t.stop.failure = &session.EndReason{Kind: session.EndError, Step: t.step, Message: err.Error(), Code: errCode(err)}
	t.a.reportError(t.turn, t.step, err)
}

func errCode(err error) string {
	if c := llm.CodeOf(err); c != "" {
		return c
	}
	var ns *session.NotSavedError
	if errors.As(err, &ns) {
		return session.CodeNotSaved
	}
	return ""
}

// flush is the durability checkpoint; it reports whether it held. A failure
// stops the turn (the caller returns): nothing may be sent to the model that
// the log could not record, so a turn never runs on while its steps are
// lost. The events stay in memory and in the store's buffer, which the next
// checkpoint writes, so a later turn (once space is freed) loses nothing.
func (t *turnState) flush() bool {
	err := t.a.l.d.Sessions.FlushSession(t.bg, t.a.sess)
	if err == nil {
		return true
	}
	t.a.l.d.Logger.Warn("session flush failed", "agent", t.a.id, "turn", t.turn, "err", err)
	if t.stop.failure != nil {
		// The turn failed already: still say that it is not saved.
		t.a.reportError(t.turn, t.step, err)
	}
	t.report(err)
	return false
}

// finalFlush writes the turn/end. The turn's reason is decided by then, so
// a failure is only reported (front doors check the session is saved before
// they claim success) and the event waits in the store's buffer for the
// next checkpoint.
func (t *turnState) finalFlush() {
	if err := t.a.l.d.Sessions.FlushSession(t.bg, t.a.sess); err != nil {
		t.a.l.d.Logger.Warn("session flush failed at the end of the turn", "agent", t.a.id, "turn", t.turn, "err", err)
		t.a.reportError(t.turn, t.step, err)
	}
}

// closeStep appends step/end once; it reports whether that append failed.
// Before step/end it settles the step: every tool call of the step's
// assistant/message gets a result, then held context is recorded.
func (t *turnState) closeStep() bool {
	failed := false
	if err := t.settle(t.notRun); err != nil {
		t.report(toError(err))
		failed = true
	}
	if !t.stepOpen {
		return failed
	}
	t.stepOpen = false
	if _, err := t.a.log.Append(t.bg, session.TypeStepEnd, session.StepBoundary{Turn: t.turn, Step: t.step}); err != nil {
		t.report(toError(err))
		return true
	}
	return failed
}

func joinNonEmpty(parts ...string) string {
	out := parts[:0:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "\n\n")
}

// drainSteering records queued steering inside the turn; t.lastDrained
// says whether anything was drained.
func (a *loopAgent) drainSteering(t *turnState) error {
	a.mu.Lock()
	items := a.steering
	a.steering = nil
	a.mu.Unlock()
	t.lastDrained = len(items) > 0
	for i, m := range items {
		if _, err := a.log.AppendSurface(t.bg, session.TypeSteeringMessage, session.Steering{Turn: t.turn, Content: m.content, Source: m.src}, session.AppendOp, nil); err != nil {
			a.requeueSteering(items[i+1:])
			return err
		}
		if err := a.l.d.Agents.Hub.Steering.Emit(a.ctx, agent.SteeringNote{Agent: a, Turn: t.turn, Content: m.content, Source: m.src}); err != nil {
			a.requeueSteering(items[i+1:])
			return err
		}
	}
	return nil
}

func (a *loopAgent) requeueSteering(rest []queued) {
	a.mu.Lock()
	a.steering = append(rest, a.steering...)
	a.mu.Unlock()
}
