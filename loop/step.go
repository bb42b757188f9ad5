package loop

import (
	"context"
	"fmt"
	"strings"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/prompt"
	"github.com/dshq/dsh/session"
)

// stepOutcome is what a step that ran to its end tells the turn.
type stepOutcome struct {
	hadToolCalls bool
	finish       llm.FinishReason
}

// streamed is a model call's stream, assembled.
type streamed struct {
	msg    llm.Message
	usage  *llm.Usage
	finish llm.FinishReason
	seqs   []int64 // the assistant/chunk events, the message's provenance
}

// errChunkAfterFinish is a protocol violation by an adapter.
var errChunkAfterFinish = &llm.Error{Name: "LlmError", Code: llm.CodeProtocol, Message: "model stream sent a chunk after its finish chunk"}

// runStep makes the step's model call, records its message and runs its
// tools. An error means the step did not run to its end (see
// turnState.stepFailed).
func (a *loopAgent) runStep(ctx context.Context, t *turnState, asm *prompt.Assembly, system string) (stepOutcome, error) {
	info := agent.StepInfo{Agent: a, Turn: t.turn, Step: t.step}
	req, err := a.request(ctx, info, asm, system)
	if err != nil {
		return stepOutcome{}, err
	}
	out, err := a.stream(ctx, t, req)
	if err != nil && a.overflowed(ctx, info, system, out, err) {
		// The history was shortened: ask once more, with it as it is now.
		if req, err = a.request(ctx, info, asm, system); err != nil {
			return stepOutcome{}, err
		}
		out, err = a.stream(ctx, t, req)
	}
	if err != nil {
		if ctx.Err() != nil {
			// Interrupted mid-answer, by a cancel or by the agent being
			// disposed (the user quitting while it streamed): what the user
			// saw stays in the history and comes back on resume (the turn's
			// end adds the marker).
			a.recordPartial(t, req.Model, out)
		}
		return stepOutcome{}, err
	}
	calls, err := a.recordMessage(ctx, t, info, req.Model, &out)
	if err != nil {
		return stepOutcome{}, err
	}
	if out.finish.Kind == llm.FinishMaxTokens {
		return stepOutcome{finish: out.finish}, nil
	}
	if err := a.runTools(ctx, t, calls); err != nil {
		return stepOutcome{}, err
	}
	return stepOutcome{hadToolCalls: len(calls) > 0, finish: out.finish}, nil
}

// overflowed reports whether a model call that failed should be made once
// more: the provider refused it as too long for the context window before
// any of its answer was recorded, and an agent/context-overflow listener
// (compaction) shortened the history. A listener's failure keeps the
// provider's refusal as the step's error.
func (a *loopAgent) overflowed(ctx context.Context, info agent.StepInfo, system string, out streamed, err error) bool {
	if ctx.Err() != nil || len(out.seqs) > 0 || llm.CodeOf(err) != llm.CodeContextTooLong {
		return false
	}
	retry, lerr := a.l.d.Agents.Hub.Overflow.Run(ctx, agent.Overflow{StepInfo: info, SystemPrompt: system, Err: err},
		func(context.Context, agent.Overflow) (bool, error) { return false, nil })
	if lerr != nil {
		a.l.d.Logger.Warn("agent/context-overflow listener failed", "agent", a.id, "turn", info.Turn, "step", info.Step, "err", lerr)
		return false
	}
	return retry && ctx.Err() == nil
}

// request builds the step's model request from the derived history, the
// system prompt and the visible tools, and passes it through agent/request.
func (a *loopAgent) request(ctx context.Context, info agent.StepInfo, asm *prompt.Assembly, system string) (*llm.Request, error) {
	msgs, err := a.sess.Messages()
	if err != nil {
		return nil, err
	}
	req := &llm.Request{Model: a.opts.Model, Messages: msgs, System: system, SessionID: string(a.sess.ID()), MaxTokens: a.opts.MaxTokens, Temperature: a.opts.Temperature}
	req.Tools = a.l.d.Tools.Schemas(a.opts.Tools)
	if len(asm.Tools) > 0 {
		req.Tools = append(req.Tools, asm.Tools...)
	}
	if len(req.Tools) == 0 {
		req.Tools = nil
	}
	req, err = a.l.d.Agents.Hub.Request.Run(ctx, agent.RequestInput{StepInfo: info, Request: req},
		func(_ context.Context, in agent.RequestInput) (*llm.Request, error) { return in.Request, nil })
	if err != nil {
		return nil, err
	}
	if req == nil || req.Model == "" {
		return nil, fmt.Errorf("agent %q has no model: set Options.Model or supply one via the agent/request point", a.id)
	}
	return req, nil
}

// stream calls the model, appends each chunk as assistant/chunk and folds
// it. A stream that ended in an error or an abort is an error.
func (a *loopAgent) stream(ctx context.Context, t *turnState, req *llm.Request) (streamed, error) {
	stream, err := a.l.d.LLM.Stream(ctx, req)
	if err != nil {
		return streamed{}, err
	}
	var as llm.Assembler
	var seqs []int64
	finished := false
	if stream != nil {
		for c, serr := range stream {
			if ctx.Err() != nil {
				return streamed{msg: partialText(&as), seqs: seqs}, context.Cause(ctx)
			}
			// A failed stream still says which chunks it recorded (an
			// overflow is retried only when none was).
			if serr != nil {
				return streamed{seqs: seqs}, serr
			}
			if finished {
				return streamed{seqs: seqs}, errChunkAfterFinish
			}
			ev, err := a.log.AppendChunk(t.bg, t.turn, t.step, c)
			if err != nil {
				return streamed{seqs: seqs}, err
			}
			seqs = append(seqs, ev.Seq)
			if _, _, err := as.Push(c); err != nil {
				return streamed{seqs: seqs}, err
			}
			finished = c.Type == llm.ChunkFinish
		}
	}
	if ctx.Err() != nil {
		return streamed{msg: partialText(&as), seqs: seqs}, context.Cause(ctx)
	}
	fin := as.Finish()
	switch fin.Kind {
	case llm.FinishError:
		return streamed{seqs: seqs}, &llm.Error{Name: "LlmError", Code: fin.Code, Message: fin.Message}
	case llm.FinishAborted:
		return streamed{seqs: seqs}, &llm.Error{Name: "LlmError", Code: llm.CodeAborted, Message: "model stream aborted"}
	}
	msg, err := as.Message()
	if err != nil {
		return streamed{}, err
	}
	return streamed{msg: msg, usage: as.Usage(), finish: fin, seqs: seqs}, nil
}

// recordMessage passes the assembled message through agent/step-result and
// appends it as assistant/message; it returns the tool calls to run. A
// max-tokens finish drops the calls (their arguments may be cut short).
func (a *loopAgent) recordMessage(ctx context.Context, t *turnState, info agent.StepInfo, model string, out *streamed) ([]llm.Block, error) {
	truncated := out.finish.Kind == llm.FinishMaxTokens
	msg := out.msg
	if truncated {
		msg = withoutToolCalls(msg)
	}
	msg, err := a.l.d.Agents.Hub.StepResult.Run(ctx, agent.StepResult{StepInfo: info, Message: msg},
		func(_ context.Context, in agent.StepResult) (llm.Message, error) { return in.Message, nil })
	if err != nil {
		return nil, err
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
	if len(msg.Content) == 0 && out.usage == nil {
		return calls, nil
	}
	var src []int64
	if len(out.seqs) > 0 {
		src = out.seqs
	}
	if len(calls) > 0 {
		// From here until the calls are answered, injected context waits
		// (released by settle, at the latest in closeStep).
		a.beginHold()
	}
	ev, err := a.log.AppendSurface(t.bg, session.TypeAssistantMessage, session.AssistantMessage{
		Turn: t.turn, Step: t.step, Content: msg.Content, Usage: out.usage, Model: model,
	}, session.AppendOp, src)
	if ev.Type != "" {
		// In the log (a listener may still have failed): each call is owed
		// a result before step/end.
		t.owe(calls)
	}
	return calls, err
}

// partialText is the text a stream produced before it was cut off: its
// text blocks only (a reasoning block without its signature, or a tool
// call whose arguments may be cut short, cannot be sent back).
func partialText(as *llm.Assembler) llm.Message {
	bs, _ := as.Blocks()
	var out []llm.Block
	for _, b := range bs {
		if b.Type == llm.BlockText && strings.TrimSpace(b.Text) != "" {
			out = append(out, b)
		}
	}
	return llm.Message{Role: llm.RoleAssistant, Content: out}
}

// recordPartial appends the text of an interrupted model call as its
// assistant/message, so the next request shows what the model had said
// (Claude Code and Codex keep it too). It has no tool calls: nothing is
// owed a result.
func (a *loopAgent) recordPartial(t *turnState, model string, out streamed) {
	if len(out.msg.Content) == 0 {
		return
	}
	var src []int64
	if len(out.seqs) > 0 {
		src = out.seqs
	}
	if _, err := a.log.AppendSurface(t.bg, session.TypeAssistantMessage, session.AssistantMessage{
		Turn: t.turn, Step: t.step, Content: out.msg.Content, Model: model, Interrupted: true,
	}, session.AppendOp, src); err != nil {
		a.l.d.Logger.Warn("recording an interrupted answer failed", "agent", a.id, "turn", t.turn, "err", err)
	}
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
