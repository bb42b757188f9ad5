package loop

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

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
	r := &t.tools
	if r.a == nil {
		*r = toolRun{a: a, t: t, reg: a.l.d.Tools}
		r.opts = tool.ExecOptions{Visible: a.opts.Tools, Approver: a.opts.Approver, OnAsk: r.asked, OnAnswer: r.answered}
	}
	if len(calls) > 1 && allConcurrent(r.reg, a.opts.Tools, calls) {
		return r.parallel(ctx, calls)
	}
	return r.serial(ctx, calls)
}

// toolRun runs a turn's tool calls, one step at a time.
type toolRun struct {
	a    *loopAgent
	t    *turnState
	reg  *tool.Registry
	opts tool.ExecOptions
}

// serial runs the calls one by one, stopping at a cancel.
func (r *toolRun) serial(ctx context.Context, calls []llm.Block) error {
	for _, b := range calls {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		p, err := r.prepare(ctx, b)
		if err != nil {
			return err
		}
		if err := r.record(r.reg.Finish(ctx, p, r.opts)); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// parallel prepares every call (recording its tool/call), runs them
// together, then records every outcome in call order.
func (r *toolRun) parallel(ctx context.Context, calls []llm.Block) error {
	ps := make([]*tool.Pending, 0, len(calls))
	for _, b := range calls {
		if ctx.Err() != nil {
			// The prepared calls never run: settle answers them.
			return context.Cause(ctx)
		}
		p, err := r.prepare(ctx, b)
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	opts := r.opts
	if opts.Approver != nil {
		// One question at a time, even when the calls run together.
		var mu sync.Mutex
		inner := opts.Approver
		opts.Approver = tool.ApproverFunc(func(ctx context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
			mu.Lock()
			defer mu.Unlock()
			return inner.Approve(ctx, req)
		})
	}
	outs := make([]tool.Outcome, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { outs[i] = r.reg.Finish(ctx, p, opts) })
	}
	wg.Wait()
	// Every call ran: record every outcome, even past a failing append.
	var first error
	for _, out := range outs {
		if err := r.record(out); err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return first
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// prepare gates a call through the pipeline's first half and appends its
// tool/call with the effective arguments (and the original ones when a
// listener rewrote them).
func (r *toolRun) prepare(ctx context.Context, b llm.Block) (*tool.Pending, error) {
	t := r.t
	p := r.reg.Prepare(ctx, tool.NewCall(b.ID, b.Name, b.Arguments, r.a), r.opts)
	tc := session.ToolCall{Turn: t.turn, Step: t.step, CallID: b.ID, Name: b.Name, Arguments: p.Call.Raw}
	if p.Rewritten() {
		orig := p.Original
		tc.OriginalArguments = &orig
		tc.RewrittenBy = p.Decision.By
	}
	ev, err := r.a.log.Append(t.bg, session.TypeToolCall, tc)
	if ev.Type != "" {
		t.callSeqs = append(t.callSeqs, callRef{id: b.ID, seq: ev.Seq})
		t.called(b.ID, ev.Seq)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// record appends a call's tool/result; context its post-execute listeners
// attached is held for after all results.
func (r *toolRun) record(out tool.Outcome) error {
	t := r.t
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
	ev, err := r.a.log.AppendSurface(t.bg, session.TypeToolResult, tr, session.AppendOp, []int64{callSeq(t, out.Call.ID)})
	if ev.Type != "" {
		t.answered(out.Call.ID)
	}
	if err != nil {
		return err
	}
	if out.Context != nil {
		// Recorded with held context, after all results (settle).
		_, _ = r.a.holdContext(queued{content: out.Context.Content, src: out.Context.Source.OrUser()}, true)
	}
	return nil
}

// asked records an ask decision put to the approver.
func (r *toolRun) asked(_ context.Context, p *tool.Pending) {
	t := r.t
	if _, err := r.a.log.Append(t.bg, session.TypeApprovalRequest, session.ApprovalRequest{Turn: t.turn, Step: t.step, CallID: p.Call.ID, Name: p.Call.Name, Reason: p.Decision.Reason, Suggestions: p.Decision.Suggestions}); err != nil {
		r.a.l.d.Logger.Warn("approval/request listener failed", "agent", r.a.id, "err", err)
	}
}

// answered records the approver's answer.
func (r *toolRun) answered(_ context.Context, p *tool.Pending, ap tool.Approval) {
	t := r.t
	if _, err := r.a.log.Append(t.bg, session.TypeApprovalAnswer, session.ApprovalAnswer{Turn: t.turn, Step: t.step, CallID: p.Call.ID, Allow: ap.Allow, Scope: ap.Scope(), Rules: ap.Rules, Reason: ap.Reason, By: ap.By}); err != nil {
		r.a.l.d.Logger.Warn("approval/answer listener failed", "agent", r.a.id, "err", err)
	}
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
