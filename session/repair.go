package session

import (
	"encoding/json"
	"fmt"

	"github.com/dshq/dsh/llm"
)

// InterruptedText is the model-facing content of a synthetic result for a
// call that was cut off by a crash.
const InterruptedText = "Tool call interrupted by a crash; no result was recorded."

// CodeNotRun is the error code of the synthetic result the loop records for
// a call of a step that ended before the call ran or finished (a cancel, a
// disposal, a step error): every call of an assistant/message is answered
// before its step/end.
const CodeNotRun = "not-run"

// InterruptedClosers returns the events that close a log whose last turn is
// still open (a crash, a kill -9): an error result for every call of the
// open step that has none, the step's step/end, and turn/end{interrupted}.
// Real events of the interrupted turn are kept; the closers reuse the last
// event's time so they never claim a future instant.
func InterruptedClosers(events []Event) ([]Event, error) {
	type pend struct {
		id      llm.CallID
		step    int
		callSeq int64
	}
	var (
		openTurn = 0
		inTurn   bool
		openStep = 0
		inStep   bool
		pending  []pend
	)
	for _, e := range events {
		switch e.Type {
		case TypeTurnStart:
			ts, err := Decode[TurnStart](e)
			if err != nil {
				return nil, err
			}
			openTurn, inTurn, inStep, pending = ts.Turn, true, false, nil
		case TypeTurnEnd:
			inTurn, inStep, pending = false, false, nil
		case TypeStepStart:
			sb, err := Decode[StepBoundary](e)
			if err != nil {
				return nil, err
			}
			openStep, inStep = sb.Step, true
		case TypeStepEnd:
			inStep, pending = false, nil
		case TypeAssistantMessage:
			am, err := Decode[AssistantMessage](e)
			if err != nil {
				return nil, err
			}
			for _, b := range am.Content {
				if b.Type == llm.BlockToolCall {
					pending = append(pending, pend{id: b.ID, step: am.Step, callSeq: -1})
				}
			}
		case TypeToolCall:
			tc, err := Decode[ToolCall](e)
			if err != nil {
				return nil, err
			}
			for i := range pending {
				if pending[i].id == tc.CallID {
					pending[i].callSeq = e.Seq
				}
			}
		case TypeToolResult:
			tr, err := Decode[ToolResult](e)
			if err != nil {
				return nil, err
			}
			for i := range pending {
				if pending[i].id == tr.CallID {
					pending = append(pending[:i], pending[i+1:]...)
					break
				}
			}
		}
	}
	if len(events) == 0 || !inTurn {
		return nil, nil
	}
	last := events[len(events)-1]
	seq, t := last.Seq+1, last.Time
	var out []Event
	add := func(typ string, data any, op *SurfaceOp, src []int64) error {
		b, err := json.Marshal(data)
		if err != nil {
			return fmt.Errorf("session: encoding closer: %w", err)
		}
		out = append(out, Event{Type: typ, Seq: seq, Time: t, Data: b, SurfaceOp: op, SourceEventSeqs: src})
		seq++
		return nil
	}
	for _, p := range pending {
		var src []int64
		if p.callSeq >= 0 {
			src = []int64{p.callSeq}
		}
		op := AppendOp
		if err := add(TypeToolResult, ToolResult{Turn: openTurn, Step: p.step, CallID: p.id,
			Content: []llm.Block{llm.Text(InterruptedText)}, IsError: true,
			Error: &ErrorInfo{Name: "InterruptedError", Code: "interrupted"}}, &op, src); err != nil {
			return nil, err
		}
	}
	if inStep {
		if err := add(TypeStepEnd, StepBoundary{Turn: openTurn, Step: openStep}, nil, nil); err != nil {
			return nil, err
		}
	}
	if err := add(TypeTurnEnd, TurnEnd{Turn: openTurn, Reason: EndReason{Kind: EndInterrupted}}, nil, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// CompletedPrefix returns the events through the last turn/end: the
// balanced prefix a fork inherits (the turn in flight is left out).
func CompletedPrefix(events []Event) []Event {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == TypeTurnEnd {
			return events[: i+1 : i+1]
		}
	}
	return nil
}

// Balanced reports whether every tool call on the surface before seq
// beforeSeq has its result (beforeSeq < 0 checks the whole surface). A
// result with no matching call is an error: the surface is corrupt.
func Balanced(events []Event, surface []int64, beforeSeq int64) (bool, error) {
	return balanced(func(seq int64) (Event, bool) {
		if seq < 0 || seq >= int64(len(events)) {
			return Event{}, false
		}
		return events[seq], true
	}, surface, beforeSeq)
}

// Balanced is [Balanced] over the session's log, without copying it.
func (s *Session) Balanced(surface []int64, beforeSeq int64) (bool, error) {
	return balanced(s.Event, surface, beforeSeq)
}

func balanced(event func(int64) (Event, bool), surface []int64, beforeSeq int64) (bool, error) {
	depth := 0
	for _, seq := range surface {
		if seq == beforeSeq {
			return depth == 0, nil
		}
		e, ok := event(seq)
		if !ok {
			return false, fmt.Errorf("session: surface seq %d is not in the log", seq)
		}
		switch e.Type {
		case TypeAssistantMessage:
			am, err := Decode[AssistantMessage](e)
			if err != nil {
				return false, err
			}
			for _, b := range am.Content {
				if b.Type == llm.BlockToolCall {
					depth++
				}
			}
		case TypeToolResult:
			depth--
			if depth < 0 {
				return false, fmt.Errorf("session: tool-pairing balance: tool/result at surface seq %d has no matching tool-call (corrupt surface)", seq)
			}
		}
	}
	return depth == 0, nil
}
