package loop

import (
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// Every tool call of a step's assistant/message is answered before the
// step's step/end, whatever ended the step; context injected while the
// calls ran follows their results.

// owedCall is a tool call awaiting its result; seq is its tool/call event,
// or -1 while the call was never prepared.
type owedCall struct {
	id  llm.CallID
	seq int64
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
