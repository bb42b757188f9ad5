package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/prompt"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// turnState is one turn's bookkeeping.
type turnState struct {
	a             *loopAgent
	turn          int
	step          int
	stepOpen      bool
	reason        session.EndReason
	errorReported bool
	bg            context.Context // never cancelled: bookkeeping appends and flushes
	lastDrained   bool
	opened        bool // this turn's turn/start is in the log
	callSeqs      []callRef
	// owed are the tool calls of the open step's assistant/message that
	// have no tool/result yet. settle answers each before step/end.
	owed []owedCall
	// notRun explains, in the synthetic results settle records, why the
	// open step's remaining calls did not run ("" until the step fails).
	notRun string
}

// owedCall is a tool call awaiting its result; seq is its tool/call event,
// or -1 while the call was never prepared.
type owedCall struct {
	id  llm.CallID
	seq int64
}

func (t *turnState) failTurn(err error) {
	if t.errorReported {
		return
	}
	t.errorReported = true
	t.reason = session.EndReason{Kind: session.EndError, Step: t.step, Message: err.Error(), Code: errCode(err)}
	t.a.reportError(t.turn, t.step, err)
}

// closeStep appends step/end once; it reports whether that append failed.
// Before step/end it settles the step: every tool call of the step's
// assistant/message gets a result, then held context is recorded.
func (t *turnState) closeStep() bool {
	failed := false
	if err := t.settle(t.notRun); err != nil {
		t.failTurn(toError(err))
		failed = true
	}
	if !t.stepOpen {
		return failed
	}
	t.stepOpen = false
	if _, err := t.a.log.Append(t.bg, session.TypeStepEnd, session.StepBoundary{Turn: t.turn, Step: t.step}); err != nil {
		t.failTurn(toError(err))
		return true
	}
	return failed
}

// owe records the tool calls of the step's assistant/message as owed a
// result.
func (t *turnState) owe(calls []llm.Block) {
	t.owed = t.owed[:0]
	for _, b := range calls {
		t.owed = append(t.owed, owedCall{id: b.ID, seq: -1})
	}
}

// called notes the tool/call event of an owed call.
func (t *turnState) called(id llm.CallID, seq int64) {
	for i := range t.owed {
		if t.owed[i].id == id {
			t.owed[i].seq = seq
			return
		}
	}
}

// answered notes that an owed call has its tool/result.
func (t *turnState) answered(id llm.CallID) {
	for i := range t.owed {
		if t.owed[i].id == id {
			t.owed = append(t.owed[:i], t.owed[i+1:]...)
			return
		}
	}
}

// settle keeps the step's history well-formed whatever ended it: once an
// assistant/message with tool calls is in the log, every one of those calls
// gets a tool/result before step/end. Calls that never ran (a cancel, a
// disposal or a failure stopped the step first; a parallel batch cancelled
// while it was prepared) get a synthetic error result, code
// [session.CodeNotRun], whose text is why ("not run: the turn was cancelled
// (<reason>)"); its provenance is the call's tool/call when one was
// recorded. Context injected while the tools were in flight is recorded
// next, in arrival order (see loopAgent.Inject). settle is idempotent.
func (t *turnState) settle(why string) error {
	var first error
	if len(t.owed) > 0 {
		if why == "" {
			why = "not run: the step ended before this call ran"
		}
		owed := t.owed
		t.owed = nil
		for _, c := range owed {
			var src []int64
			if c.seq >= 0 {
				src = []int64{c.seq}
			}
			tr := session.ToolResult{Turn: t.turn, Step: t.step, CallID: c.id, Content: []llm.Block{llm.Text(why)}, IsError: true,
				Error: &session.ErrorInfo{Name: "NotRunError", Code: session.CodeNotRun}}
			if _, err := t.a.log.AppendSurface(t.bg, session.TypeToolResult, tr, session.AppendOp, src); err != nil && first == nil {
				first = err
			}
		}
	}
	if err := t.releaseHeld(); err != nil && first == nil {
		first = err
	}
	return first
}

// releaseHeld records the context held while the step's tools ran and stops
// holding. Context that arrives while it appends is held too and recorded
// after, so arrival order is kept. A failure to record context the step
// attached (post-execute) fails the step, as before; a failing listener on
// context from elsewhere is only logged (the event is in the log).
func (t *turnState) releaseHeld() error {
	a := t.a
	var first error
	for {
		items := a.takeHeld()
		if len(items) == 0 {
			return first
		}
		for _, m := range items {
			_, err := a.log.AppendSurface(t.bg, session.TypeContextMessage, session.Prompt{Content: m.content, Source: m.src}, session.AppendOp, nil)
			switch {
			case err == nil:
			case m.step:
				if first == nil {
					first = err
				}
			default:
				a.l.d.Logger.Warn("context/message listener failed for context held during tool calls", "agent", a.id, "turn", t.turn, "err", err)
			}
		}
	}
}

// notRunText is the content of the synthetic results of calls a step did
// not run: disposal, then cancellation (cause), then the step's error.
func notRunText(disposed bool, cancelled, err error) string {
	switch {
	case disposed:
		return "not run: the agent was disposed"
	case cancelled != nil:
		return "not run: the turn was cancelled (" + cancelled.Error() + ")"
	case err != nil:
		return "not run: the step failed (" + err.Error() + ")"
	}
	return ""
}

func (t *turnState) closeTurn() {
	if _, err := t.a.log.Append(t.bg, session.TypeTurnEnd, session.TurnEnd{Turn: t.turn, Reason: t.reason}); err != nil {
		t.a.l.d.Logger.Warn("turn/end listener failed", "agent", t.a.id, "turn", t.turn, "err", err)
	}
}

// flush is the durability checkpoint; it reports whether it held. A failure
// ends the turn (the caller returns): nothing may be sent to the model that
// the log could not record, so a turn never runs on while its steps are
// lost. The events stay in memory and in the store's buffer, which the next
// checkpoint writes, so a later turn (once space is freed) loses nothing.
func (t *turnState) flush() bool {
	err := t.a.l.d.Sessions.FlushSession(t.bg, t.a.sess)
	if err == nil {
		return true
	}
	t.a.l.d.Logger.Warn("session flush failed", "agent", t.a.id, "turn", t.turn, "err", err)
	if t.errorReported {
		// The turn failed already: still say that it is not saved.
		t.a.reportError(t.turn, t.step, err)
	}
	t.failTurn(err)
	return false
}

// finalFlush writes the turn/end. The turn's reason is decided by then, so a
// failure is reported (front doors check the session is saved before they
// claim success) and the event waits in the store's buffer for the next
// checkpoint.
func (t *turnState) finalFlush() {
	if err := t.a.l.d.Sessions.FlushSession(t.bg, t.a.sess); err != nil {
		t.a.l.d.Logger.Warn("session flush failed at the end of the turn", "agent", t.a.id, "turn", t.turn, "err", err)
		t.a.reportError(t.turn, t.step, err)
	}
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

// stopReason says whether the turn must stop now (cancel or dispose) and
// records why.
func (t *turnState) stopReason() bool {
	a := t.a
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.disposed:
		t.reason = session.EndReason{Kind: session.EndDisposed}
		return true
	case a.cancelMarked:
		t.reason = session.EndReason{Kind: session.EndAborted, Reason: a.cancelReason}
		return true
	}
	return false
}

// runTurn runs one turn. It returns an error only when the turn could not
// even be opened (nothing was recorded).
func (a *loopAgent) runTurn(batch []queued) (turn int, ret error) {
	t := &turnState{a: a, reason: session.EndReason{Kind: session.EndCompleted}, bg: context.WithoutCancel(a.ctx)}
	hub := a.l.d.Agents.Hub
	maxTokens := false

	body := func() error {
		if err := a.openTurn(t, batch[0].src); err != nil {
			return err
		}
		turn = t.turn
		anyAllowed := false
		lastBlock := "prompt blocked by hook"
		for _, m := range batch {
			d, err := hub.PromptSubmit.Run(a.ctx, agent.PromptInput{Agent: a, Turn: turn, Content: m.content, Source: m.src},
				func(context.Context, agent.PromptInput) (agent.PromptDecision, error) {
					return agent.PromptDecision{}, nil
				})
			if err != nil {
				return err
			}
			if d.Block {
				lastBlock = d.Reason
				if _, err := a.log.Append(t.bg, session.TypePromptBlocked, session.PromptBlocked{Content: m.content, Source: m.src, Reason: d.Reason}); err != nil {
					return err
				}
				continue
			}
			anyAllowed = true
			content := m.content
			if d.Content != nil {
				content = d.Content
			}
			if _, err := a.log.AppendSurface(t.bg, session.TypeUserMessage, session.Prompt{Content: content, Source: m.src}, session.AppendOp, nil); err != nil {
				return err
			}
			if d.Context != nil {
				if err := a.Inject(t.bg, d.Context.Content, d.Context.Source); err != nil {
					return err
				}
			}
		}
		if !anyAllowed {
			t.reason = session.EndReason{Kind: session.EndRejected, Reason: lastBlock}
			return nil
		}
		// The prompt is durable before anything can go wrong with the model,
		// and nothing is sent that the log could not record.
		if !t.flush() {
			return nil
		}
		for {
			if a.opts.MaxSteps > 0 && t.step >= a.opts.MaxSteps {
				t.reason = session.EndReason{Kind: session.EndMaxTurns}
				return nil
			}
			t.step++
			if err := a.drainSteering(t); err != nil {
				return err
			}
			t.lastDrained = false
			asm, err := a.prompt.Build(a.ctx)
			if err != nil {
				return err
			}
			system := joinNonEmpty(asm.Render(a.ctx), a.opts.SystemPrompt)
			if t.stopReason() {
				return nil
			}
			stepCtx, stepCancel := context.WithCancelCause(a.ctx)
			a.mu.Lock()
			a.stepCancel = stepCancel
			a.mu.Unlock()
			clearStep := func() {
				a.mu.Lock()
				a.stepCancel = nil
				a.mu.Unlock()
				stepCancel(nil)
			}
			if err := hub.PreStep.Run(stepCtx, agent.PreStep{StepInfo: agent.StepInfo{Agent: a, Turn: turn, Step: t.step}, SystemPrompt: system}); err != nil {
				clearStep()
				return err
			}
			if t.stopReason() {
				clearStep()
				return nil
			}
			t.stepOpen = true
			t.notRun = ""
			if _, err := a.log.Append(t.bg, session.TypeStepStart, session.StepBoundary{Turn: turn, Step: t.step}); err != nil {
				clearStep()
				return err
			}
			if t.stopReason() {
				clearStep()
				t.closeStep()
				return nil
			}
			out, err := a.runStep(stepCtx, t, asm, system)
			aborted := stepCtx.Err() != nil
			cause := context.Cause(stepCtx)
			clearStep()
			if err != nil {
				if len(t.owed) > 0 {
					var cancelled error
					if aborted {
						cancelled = cause
					}
					t.notRun = notRunText(a.isDisposed(), cancelled, err)
				}
				t.closeStep()
				switch {
				case a.isDisposed():
					t.reason = session.EndReason{Kind: session.EndDisposed}
				case aborted:
					r := "aborted"
					if cause != nil {
						r = cause.Error()
					}
					t.reason = session.EndReason{Kind: session.EndAborted, Reason: r}
				default:
					t.failTurn(toError(err))
				}
				return nil
			}
			if out.finish.Kind == llm.FinishMaxTokens {
				maxTokens = true
			}
			if err := a.drainSteering(t); err != nil {
				return err
			}
			if t.closeStep() {
				return nil
			}
			if !t.flush() {
				return nil
			}
			def := agent.ContinuationDecision{Continue: out.hadToolCalls || t.lastDrained}
			d, err := hub.Continuation.Run(a.ctx, agent.ContinuationInput{Agent: a, Turn: turn, Default: def},
				func(context.Context, agent.ContinuationInput) (agent.ContinuationDecision, error) { return def, nil })
			if err != nil {
				t.failTurn(toError(err))
				return nil
			}
			if d.Continue && d.Reason != nil {
				a.mu.Lock()
				a.steering = append(a.steering, queued{content: d.Reason.Content, src: d.Reason.Source.OrUser()})
				a.mu.Unlock()
			}
			cont := d.Continue
			a.mu.Lock()
			if !cont && len(a.steering) > 0 {
				cont = true
			}
			cancelled, reason, disposed := a.cancelMarked, a.cancelReason, a.disposed
			a.mu.Unlock()
			if cancelled {
				t.reason = session.EndReason{Kind: session.EndAborted, Reason: reason}
				return nil
			}
			if !cont || disposed {
				if disposed {
					t.reason = session.EndReason{Kind: session.EndDisposed}
				}
				return nil
			}
		}
	}

	err := body()
	turn = t.turn
	if err != nil {
		if !t.opened {
			return a.sess.LastTurn() + 1, err
		}
		if len(t.owed) > 0 && t.notRun == "" {
			t.notRun = notRunText(a.isDisposed(), nil, err)
		}
		t.closeStep()
		if a.isDisposed() && !t.errorReported {
			t.reason = session.EndReason{Kind: session.EndDisposed}
		} else {
			t.failTurn(toError(err))
		}
	} else if maxTokens && (t.reason.Kind == session.EndCompleted) {
		t.reason = session.EndReason{Kind: session.EndMaxTokens}
	}
	if t.opened && !t.errorReported {
		// Everything before turn/end is durable before the turn claims its
		// outcome: a failure here still turns the end into an error.
		t.flush()
	}
	t.closeTurn()
	t.finalFlush()
	return turn, nil
}

// openTurn appends this turn's turn/start. Only one turn may be open: when
// an injection turn from another goroutine is open, wait for it to close,
// then take the next number.
func (a *loopAgent) openTurn(t *turnState, src llm.Source) error {
	for {
		st := a.sess.Turns()
		if st.Open {
			select {
			case <-time.After(200 * time.Microsecond):
			case <-a.disposedCh:
				return a.disposedErr()
			}
			continue
		}
		turn := st.Last + 1
		ev, err := a.log.AppendIf(t.bg, func(ts session.TurnState) bool { return !ts.Open && ts.Last == st.Last },
			session.TypeTurnStart, session.TurnStart{Turn: turn, Trigger: session.Trigger{Kind: session.TriggerMessage, Source: &src}}, nil)
		if errors.Is(err, session.ErrCondition) {
			continue
		}
		if ev.Type != "" {
			// Pushed (a listener may still have failed): the turn is ours.
			t.turn, t.opened = turn, true
		}
		return err
	}
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

type stepOutcome struct {
	hadToolCalls bool
	finish       llm.FinishReason
}

// errChunkAfterFinish is a protocol violation by an adapter.
var errChunkAfterFinish = &llm.Error{Name: "LlmError", Code: llm.CodeProtocol, Message: "model stream sent a chunk after its finish chunk"}

func (a *loopAgent) runStep(ctx context.Context, t *turnState, asm *prompt.Assembly, system string) (stepOutcome, error) {
	msgs, err := a.sess.Messages()
	if err != nil {
		return stepOutcome{}, err
	}
	req := &llm.Request{Model: a.opts.Model, Messages: msgs, System: system, SessionID: string(a.sess.ID()), MaxTokens: a.opts.MaxTokens, Temperature: a.opts.Temperature}
	req.Tools = a.l.d.Tools.Schemas(a.opts.Tools)
	if len(asm.Tools) > 0 {
		req.Tools = append(req.Tools, asm.Tools...)
	}
	if len(req.Tools) == 0 {
		req.Tools = nil
	}
	hub := a.l.d.Agents.Hub
	info := agent.StepInfo{Agent: a, Turn: t.turn, Step: t.step}
	req, err = hub.Request.Run(ctx, agent.RequestInput{StepInfo: info, Request: req},
		func(_ context.Context, in agent.RequestInput) (*llm.Request, error) { return in.Request, nil })
	if err != nil {
		return stepOutcome{}, err
	}
	if req == nil || req.Model == "" {
		return stepOutcome{}, fmt.Errorf("agent %q has no model: set Options.Model or supply one via the agent/request point", a.id)
	}
	stream, err := a.l.d.LLM.Stream(ctx, req)
	if err != nil {
		return stepOutcome{}, err
	}
	var as llm.Assembler
	var chunkSeqs []int64
	finished := false
	if stream != nil {
		for c, serr := range stream {
			if ctx.Err() != nil {
				return stepOutcome{}, context.Cause(ctx)
			}
			if serr != nil {
				return stepOutcome{}, serr
			}
			if finished {
				return stepOutcome{}, errChunkAfterFinish
			}
			ev, err := a.log.AppendChunk(t.bg, t.turn, t.step, c)
			if err != nil {
				return stepOutcome{}, err
			}
			chunkSeqs = append(chunkSeqs, ev.Seq)
			if _, _, err := as.Push(c); err != nil {
				return stepOutcome{}, err
			}
			finished = c.Type == llm.ChunkFinish
		}
	}
	if ctx.Err() != nil {
		return stepOutcome{}, context.Cause(ctx)
	}
	fin := as.Finish()
	switch fin.Kind {
	case llm.FinishError:
		return stepOutcome{}, &llm.Error{Name: "LlmError", Code: fin.Code, Message: fin.Message}
	case llm.FinishAborted:
		return stepOutcome{}, &llm.Error{Name: "LlmError", Code: llm.CodeAborted, Message: "model stream aborted"}
	}
	msg, err := as.Message()
	if err != nil {
		return stepOutcome{}, err
	}
	truncated := fin.Kind == llm.FinishMaxTokens
	if truncated {
		msg = withoutToolCalls(msg)
	}
	msg, err = hub.StepResult.Run(ctx, agent.StepResult{StepInfo: info, Message: msg},
		func(_ context.Context, in agent.StepResult) (llm.Message, error) { return in.Message, nil })
	if err != nil {
		return stepOutcome{}, err
	}
	if truncated {
		msg = withoutToolCalls(msg)
	}
	msg.Content = fixCallIDs(msg.Content, t.step)
	var calls []llm.Block
	for _, b := range msg.Content {
		if b.Type == llm.BlockToolCall {
			calls = append(calls, b)
		}
	}
	if len(msg.Content) > 0 || as.Usage() != nil {
		var src []int64
		if len(chunkSeqs) > 0 {
			src = chunkSeqs
		}
		if len(calls) > 0 {
			// From here until the calls are answered, injected context
			// waits (released by settle, at the latest in closeStep).
			a.beginHold()
		}
		ev, err := a.log.AppendSurface(t.bg, session.TypeAssistantMessage, session.AssistantMessage{
			Turn: t.turn, Step: t.step, Content: msg.Content, Usage: as.Usage(), Model: req.Model,
		}, session.AppendOp, src)
		if ev.Type != "" {
			// In the log (a listener may still have failed): each call
			// is owed a result before step/end.
			t.owe(calls)
		}
		if err != nil {
			return stepOutcome{}, err
		}
	}
	if truncated {
		return stepOutcome{finish: fin}, nil
	}
	if err := a.runTools(ctx, t, calls); err != nil {
		return stepOutcome{}, err
	}
	return stepOutcome{hadToolCalls: len(calls) > 0, finish: fin}, nil
}

func withoutToolCalls(m llm.Message) llm.Message {
	out := make([]llm.Block, 0, len(m.Content))
	for _, b := range m.Content {
		if b.Type != llm.BlockToolCall {
			out = append(out, b)
		}
	}
	return llm.Message{Role: m.Role, Content: out}
}

// fixCallIDs gives every tool call of a message a unique, non-empty id so
// each result pairs with exactly one call; a model that repeats or omits ids
// still gets a consistent history.
func fixCallIDs(content []llm.Block, step int) []llm.Block {
	seen := map[llm.CallID]bool{}
	var out []llm.Block
	for i, b := range content {
		if b.Type != llm.BlockToolCall {
			continue
		}
		id := b.ID
		if id == "" {
			id = llm.CallID(fmt.Sprintf("call-%d-%d", step, i))
		}
		for n := 2; seen[id]; n++ {
			id = llm.CallID(fmt.Sprintf("%s-%d", b.ID, n))
		}
		seen[id] = true
		if id != b.ID {
			if out == nil {
				out = append([]llm.Block(nil), content...)
			}
			out[i].ID = id
		}
	}
	if out == nil {
		return content
	}
	return out
}

// runTools executes a step's calls: in parallel when every call may run
// concurrently, else one by one. tool/call events precede execution; results
// are recorded in call order. Context attached by post-execute, and context
// injected from anywhere while the calls run, lands after all results.
//
// Whatever stops the step (a cancel, a disposal, a failed append), every
// call is answered before runTools returns: the calls that did not run get
// a synthetic "not run" error result (see turnState.settle), so the history
// the next request is derived from pairs every tool call with a result.
// This departs from the reference loop, which leaves the remaining calls
// of a cancelled step unanswered; providers reject such a history.
func (a *loopAgent) runTools(ctx context.Context, t *turnState, calls []llm.Block) (err error) {
	if len(calls) == 0 {
		return nil
	}
	defer func() {
		why := ""
		if len(t.owed) > 0 {
			var cancelled error
			if ctx.Err() != nil {
				cancelled = context.Cause(ctx)
			}
			why = notRunText(a.isDisposed(), cancelled, err)
		}
		if serr := t.settle(why); serr != nil && err == nil {
			err = serr
		}
	}()
	reg := a.l.d.Tools
	opts := tool.ExecOptions{
		Visible:  a.opts.Tools,
		Approver: a.opts.Approver,
		OnAsk: func(ctx context.Context, p *tool.Pending) {
			if _, err := a.log.Append(t.bg, session.TypeApprovalRequest, session.ApprovalRequest{Turn: t.turn, Step: t.step, CallID: p.Call.ID, Name: p.Call.Name, Reason: p.Decision.Reason}); err != nil {
				a.l.d.Logger.Warn("approval/request listener failed", "agent", a.id, "err", err)
			}
		},
		OnAnswer: func(ctx context.Context, p *tool.Pending, ap tool.Approval) {
			scope := "once"
			if ap.Remember {
				scope = "session"
			}
			if _, err := a.log.Append(t.bg, session.TypeApprovalAnswer, session.ApprovalAnswer{Turn: t.turn, Step: t.step, CallID: p.Call.ID, Allow: ap.Allow, Scope: scope, Reason: ap.Reason, By: ap.By}); err != nil {
				a.l.d.Logger.Warn("approval/answer listener failed", "agent", a.id, "err", err)
			}
		},
	}
	record := func(out tool.Outcome) error {
		tr := session.ToolResult{Turn: t.turn, Step: t.step, CallID: out.Call.ID, Content: out.Result.Content, IsError: out.Result.IsError, Meta: out.Result.Meta}
		if tr.Content == nil {
			tr.Content = []llm.Block{}
		}
		if len(tr.Meta) > 0 && !json.Valid(tr.Meta) {
			tr.Meta = nil
		}
		if out.Error != nil {
			tr.Error = &session.ErrorInfo{Name: out.Error.Name, Code: out.Error.Code}
		}
		ev, err := a.log.AppendSurface(t.bg, session.TypeToolResult, tr, session.AppendOp, []int64{callSeq(t, out.Call.ID)})
		if ev.Type != "" {
			t.answered(out.Call.ID)
		}
		if err != nil {
			return err
		}
		if out.Context != nil {
			// Recorded with held context, after all results (settle).
			_, _ = a.holdContext(queued{content: out.Context.Content, src: out.Context.Source.OrUser()}, true)
		}
		return nil
	}
	prepare := func(b llm.Block) (*tool.Pending, error) {
		p := reg.Prepare(ctx, tool.NewCall(b.ID, b.Name, b.Arguments, a), opts)
		tc := session.ToolCall{Turn: t.turn, Step: t.step, CallID: b.ID, Name: b.Name, Arguments: p.Call.Raw}
		if p.Rewritten() {
			orig := p.Original
			tc.OriginalArguments = &orig
			tc.RewrittenBy = p.Decision.By
		}
		ev, err := a.log.Append(t.bg, session.TypeToolCall, tc)
		if ev.Type != "" {
			t.callSeqs = append(t.callSeqs, callRef{id: b.ID, seq: ev.Seq})
			t.called(b.ID, ev.Seq)
		}
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	if len(calls) > 1 && allConcurrent(reg, a.opts.Tools, calls) {
		ps := make([]*tool.Pending, 0, len(calls))
		for _, b := range calls {
			if ctx.Err() != nil {
				// The prepared calls never run: settle answers them.
				return context.Cause(ctx)
			}
			p, err := prepare(b)
			if err != nil {
				return err
			}
			ps = append(ps, p)
		}
		popts := opts
		if opts.Approver != nil {
			// One question at a time, even when the calls run together.
			var mu sync.Mutex
			inner := opts.Approver
			popts.Approver = tool.ApproverFunc(func(ctx context.Context, r tool.ApprovalRequest) (tool.Approval, error) {
				mu.Lock()
				defer mu.Unlock()
				return inner.Approve(ctx, r)
			})
		}
		outs := make([]tool.Outcome, len(ps))
		var wg sync.WaitGroup
		for i, p := range ps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i] = reg.Finish(ctx, p, popts)
			}()
		}
		wg.Wait()
		// Every call ran: record every outcome, even past a failing append.
		var first error
		for _, out := range outs {
			if err := record(out); err != nil && first == nil {
				first = err
			}
		}
		if first != nil {
			return first
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
	} else {
		for _, b := range calls {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			p, err := prepare(b)
			if err != nil {
				return err
			}
			if err := record(reg.Finish(ctx, p, opts)); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
		}
	}
	return nil
}

type callRef struct {
	id  llm.CallID
	seq int64
}

// allConcurrent reports whether every call names a visible tool that
// declares itself safe to run alongside others.
func allConcurrent(reg *tool.Registry, filter func(tool.Info) bool, calls []llm.Block) bool {
	infos := map[string]tool.Info{}
	for _, in := range reg.Visible(filter) {
		infos[in.Name] = in
	}
	for _, c := range calls {
		if in, ok := infos[c.Name]; !ok || !in.Concurrent {
			return false
		}
	}
	return true
}

func callSeq(t *turnState, id llm.CallID) int64 {
	for i := len(t.callSeqs) - 1; i >= 0; i-- {
		if t.callSeqs[i].id == id {
			return t.callSeqs[i].seq
		}
	}
	return -1
}
