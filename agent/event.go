package agent

import (
	"context"
	"errors"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// ErrWithdrawn ends a [Agent.Prompt] iteration whose prompt was dropped
// before a turn took it: a Cancel emptied the queue.
var ErrWithdrawn = errors.New("agent: the prompt was cancelled before its turn began")

// Event is one event of an agent's session, as [Agent.Events] and
// [Agent.Prompt] yield it: the log entry itself, plus typed accessors for
// what embedders look at most. Each accessor reports false for events of
// other types, so a loop over a turn reads
//
//	for ev, err := range a.Prompt(ctx, "fix the build") {
//		if err != nil { … }
//		if s, ok := ev.TextDelta(); ok { fmt.Print(s) }
//		if end, ok := ev.TurnEnd(); ok { fmt.Println(end.Reason.Kind, end.Usage.OutputTokens) }
//	}
//
// Every other event (approvals, permission decisions, hooks, compaction,
// plugin events) is there too; decode it with [session.Decode].
type Event struct {
	session.Event
	s *session.Session
}

// EventOf wraps an event of session s, for listeners on session.Live's
// Appended signal that want the same accessors.
func EventOf(s *session.Session, e session.Event) Event { return Event{Event: e, s: s} }

// Session is the session the event belongs to.
func (e Event) Session() *session.Session { return e.s }

func (e Event) chunk() (llm.Chunk, bool) {
	if e.Type != session.TypeAssistantChunk {
		return llm.Chunk{}, false
	}
	c, err := session.Decode[session.AssistantChunk](e.Event)
	return c.Chunk, err == nil
}

// TextDelta is the text a streamed chunk adds to the model's answer.
func (e Event) TextDelta() (string, bool) {
	c, ok := e.chunk()
	if !ok || c.Type != llm.ChunkTextDelta {
		return "", false
	}
	return c.Text, true
}

// ReasoningDelta is the text a streamed chunk adds to the model's
// reasoning (thinking).
func (e Event) ReasoningDelta() (string, bool) {
	c, ok := e.chunk()
	if !ok || c.Type != llm.ChunkReasoningDelta {
		return "", false
	}
	return c.Text, true
}

// Message is a model call's complete message (assistant/message): its
// text, reasoning and tool calls as the model produced them, and usage.
func (e Event) Message() (session.AssistantMessage, bool) {
	return decodeIf[session.AssistantMessage](e, session.TypeAssistantMessage)
}

// ToolCall is a tool call as it runs (tool/call). Its Arguments are the
// effective ones: when a listener rewrote them, OriginalArguments keeps
// the model's and RewrittenBy names who changed them.
func (e Event) ToolCall() (session.ToolCall, bool) {
	return decodeIf[session.ToolCall](e, session.TypeToolCall)
}

// Approval is the answer to an ask decision (approval/answer): who
// answered, whether the call may run, and the reason the model reads when
// it may not.
func (e Event) Approval() (session.ApprovalAnswer, bool) {
	return decodeIf[session.ApprovalAnswer](e, session.TypeApprovalAnswer)
}

// ToolResult is what a tool call returned (tool/result); IsError marks a
// failure the model reads, and CallID pairs it with its ToolCall.
func (e Event) ToolResult() (session.ToolResult, bool) {
	return decodeIf[session.ToolResult](e, session.TypeToolResult)
}

// TurnResult summarizes a finished turn.
type TurnResult struct {
	Turn   int
	Reason session.EndReason
	// Steps is how many steps (model calls) the turn took; Usage adds up
	// their token counts.
	Steps int
	Usage llm.Usage
	// Text is the text of the turn's last assistant message.
	Text string
}

// TurnEnd is the end of a turn (turn/end) with why it ended and what it
// cost. Usage is read back from the turn's assistant messages in the log,
// so it is complete however late the iteration began.
func (e Event) TurnEnd() (TurnResult, bool) {
	end, ok := decodeIf[session.TurnEnd](e, session.TypeTurnEnd)
	if !ok {
		return TurnResult{}, false
	}
	r := TurnResult{Turn: end.Turn, Reason: end.Reason}
	if e.s == nil {
		return r, true
	}
	if e.Seq >= int64(e.s.Len()) {
		return r, true
	}
	// The turn's start and steps are found backwards from the types memory
	// holds; its assistant messages, released from memory in a long turn,
	// are folded with their payloads read back in batches (one read each
	// was thousands of reads at the end of a long turn).
	from := int64(0)
	e.s.Backward(e.Seq, func(ev session.Event) bool {
		switch ev.Type {
		case session.TypeTurnStart:
			from = ev.Seq
			return false
		case session.TypeStepStart:
			r.Steps++
		}
		return true
	})
	_ = e.s.Each(context.Background(), from, func(ev session.Event) bool {
		return ev.Seq < e.Seq && ev.Type == session.TypeAssistantMessage
	}, func(ev session.Event) error {
		m, err := session.Decode[session.AssistantMessage](ev)
		if err != nil || m.Turn != end.Turn {
			return nil // a message that cannot be read adds nothing, as before
		}
		if m.Usage != nil {
			r.Usage.Add(*m.Usage)
		}
		r.Text = llm.TextOf(m.Content) // the newest one's, in the end
		return nil
	})
	return r, true
}

func decodeIf[T any](e Event, typ string) (T, bool) {
	var v T
	if e.Type != typ {
		return v, false
	}
	v, err := session.Decode[T](e.Event)
	return v, err == nil
}
