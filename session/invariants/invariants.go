// Package invariants is dsh's development contract checker for session logs:
// turn and step nesting, contiguous numbering, seq order, surface rules,
// provenance and tool-call/result pairing (every tool call of a step's
// assistant/message has its tool/result before that step's step/end). Every test harness enables it
// live (a violation fails the append that caused it); persistence tests run
// [CheckLog] over reloaded logs.
package invariants

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// Error is a violated invariant.
type Error struct{ Msg string }

func (e *Error) Error() string { return "invariant violated: " + e.Msg }

func violation(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// Tracker checks one session's events as they arrive.
type Tracker struct {
	lastSeq  int64
	inTurn   bool
	openTurn int
	inStep   bool
	openStep int
	nextTurn int
	nextStep int
	pending  map[llm.CallID]bool // tool/call events of the open step without a result
	owed     []llm.CallID        // tool calls of the open step's assistant/message without a result
	known    map[int64]bool
	surface  []int64
	// seeding relaxes the checks a log written by an older build may fail
	// (its calls were not all answered before step/end) while Install
	// replays a session's seed: such a log is still resumed, and the
	// derived history repairs it for the model.
	seeding bool
}

// NewTracker returns a tracker for an empty log.
func NewTracker() *Tracker {
	return &Tracker{lastSeq: -1, nextTurn: 1, nextStep: 1, pending: map[llm.CallID]bool{}, known: map[int64]bool{}}
}

// CheckLog checks a whole log.
func CheckLog(events []session.Event) error {
	t := NewTracker()
	for _, e := range events {
		if err := t.Check(e); err != nil {
			return err
		}
	}
	return nil
}

// Closed reports whether the log so far ends with no open turn.
func (t *Tracker) Closed() bool { return !t.inTurn }

// Check validates the next event.
func (t *Tracker) Check(e session.Event) error {
	if e.Seq <= t.lastSeq {
		return violation("seq must strictly increase: saw %d after %d", e.Seq, t.lastSeq)
	}
	surface := session.SurfaceEligible(e.Type)
	if !surface && e.SourceEventSeqs != nil {
		return violation("%s cannot carry sourceEventSeqs (non-surface event)", e.Type)
	}
	if !surface && e.SurfaceOp != nil {
		return violation("%s cannot carry surfaceOp (non-surface event)", e.Type)
	}
	if e.SourceEventSeqs != nil {
		if len(e.SourceEventSeqs) == 0 {
			return violation("%s (seq %d) has empty sourceEventSeqs", e.Type, e.Seq)
		}
		seen := map[int64]bool{}
		for _, s := range e.SourceEventSeqs {
			if seen[s] {
				return violation("%s (seq %d) has duplicate source seq %d", e.Type, e.Seq, s)
			}
			seen[s] = true
			if s >= e.Seq {
				return violation("%s (seq %d) references a later event %d", e.Type, e.Seq, s)
			}
			if !t.known[s] {
				return violation("%s (seq %d) references unknown event %d", e.Type, e.Seq, s)
			}
		}
	}
	if e.SurfaceOp != nil {
		if !e.SurfaceOp.Replace {
			t.surface = append(t.surface, e.Seq)
		} else {
			i, j := index(t.surface, e.SurfaceOp.Start), index(t.surface, e.SurfaceOp.End)
			if i < 0 || j < 0 {
				return violation("%s (seq %d) replaces %d..%d, which are not on the surface", e.Type, e.Seq, e.SurfaceOp.Start, e.SurfaceOp.End)
			}
			if i > j {
				return violation("%s (seq %d) replace start %d is after end %d", e.Type, e.Seq, e.SurfaceOp.Start, e.SurfaceOp.End)
			}
			src := map[int64]bool{}
			for _, s := range e.SourceEventSeqs {
				src[s] = true
			}
			for _, s := range t.surface[i : j+1] {
				if !src[s] {
					return violation("%s (seq %d) shadows %d without recording it in sourceEventSeqs", e.Type, e.Seq, s)
				}
			}
			next := append([]int64(nil), t.surface[:i]...)
			next = append(next, e.Seq)
			t.surface = append(next, t.surface[j+1:]...)
		}
	}
	if err := t.byType(e); err != nil {
		return err
	}
	t.lastSeq = e.Seq
	t.known[e.Seq] = true
	return nil
}

func index(xs []int64, v int64) int {
	for i, x := range xs {
		if x == v {
			return i
		}
	}
	return -1
}

func (t *Tracker) needStep(e session.Event, turn, step int) error {
	if !t.inTurn || turn != t.openTurn || !t.inStep || step != t.openStep {
		return violation("%s (seq %d) for turn %d step %d is outside the open step", e.Type, e.Seq, turn, step)
	}
	return nil
}

func (t *Tracker) byType(e session.Event) error {
	switch e.Type {
	case session.TypeTurnStart:
		ts, err := session.Decode[session.TurnStart](e)
		if err != nil {
			return err
		}
		if t.inTurn {
			return violation("turn/start %d while turn %d is open", ts.Turn, t.openTurn)
		}
		if ts.Turn != t.nextTurn {
			return violation("turn/start %d, expected turn %d", ts.Turn, t.nextTurn)
		}
		t.inTurn, t.openTurn, t.nextStep = true, ts.Turn, 1
	case session.TypeTurnEnd:
		te, err := session.Decode[session.TurnEnd](e)
		if err != nil {
			return err
		}
		if !t.inTurn || te.Turn != t.openTurn {
			return violation("turn/end %d does not match the open turn", te.Turn)
		}
		if t.inStep {
			return violation("turn/end %d while step %d is open", te.Turn, t.openStep)
		}
		t.inTurn = false
		t.nextTurn++
	case session.TypeStepStart:
		sb, err := session.Decode[session.StepBoundary](e)
		if err != nil {
			return err
		}
		if !t.inTurn || sb.Turn != t.openTurn {
			return violation("step/start for turn %d outside that turn", sb.Turn)
		}
		if t.inStep {
			return violation("step/start %d while step %d is open", sb.Step, t.openStep)
		}
		if sb.Step != t.nextStep {
			return violation("step/start %d, expected step %d", sb.Step, t.nextStep)
		}
		t.inStep, t.openStep = true, sb.Step
	case session.TypeStepEnd:
		sb, err := session.Decode[session.StepBoundary](e)
		if err != nil {
			return err
		}
		if err := t.needStep(e, sb.Turn, sb.Step); err != nil {
			return err
		}
		if len(t.owed) > 0 && !t.seeding {
			return violation("step/end %d (seq %d) leaves tool call %s of the step's assistant/message without a tool/result", sb.Step, e.Seq, t.owed[0])
		}
		t.inStep = false
		t.nextStep++
		clear(t.pending)
		t.owed = t.owed[:0]
	case session.TypeAssistantChunk:
		sb, err := session.Decode[session.StepBoundary](e)
		if err != nil {
			return err
		}
		return t.needStep(e, sb.Turn, sb.Step)
	case session.TypeAssistantMessage:
		am, err := session.Decode[session.AssistantMessage](e)
		if err != nil {
			return err
		}
		if err := t.needStep(e, am.Turn, am.Step); err != nil {
			return err
		}
		if e.SurfaceOp == nil || !e.SurfaceOp.Replace {
			for _, b := range am.Content {
				if b.Type == llm.BlockToolCall {
					t.owed = append(t.owed, b.ID)
				}
			}
		}
	case session.TypeToolCall:
		tc, err := session.Decode[session.ToolCall](e)
		if err != nil {
			return err
		}
		if err := t.needStep(e, tc.Turn, tc.Step); err != nil {
			return err
		}
		t.pending[tc.CallID] = true
	case session.TypeToolResult:
		tr, err := session.Decode[session.ToolResult](e)
		if err != nil {
			return err
		}
		if e.SurfaceOp != nil && e.SurfaceOp.Replace {
			// A pruned copy that replaces an earlier result in place
			// (compaction): it answers no call, so it needs only a turn.
			if !t.inTurn {
				return violation("%s (seq %d) appended outside any open turn (every event must be turn-enclosed)", e.Type, e.Seq)
			}
			break
		}
		if err := t.needStep(e, tr.Turn, tr.Step); err != nil {
			return err
		}
		// Crash repair and the loop's "not run" results answer calls that
		// may never have been recorded as tool/call.
		synthetic := tr.IsError && tr.Error != nil && (tr.Error.Code == "interrupted" || tr.Error.Code == session.CodeNotRun)
		if !t.pending[tr.CallID] && !synthetic {
			return violation("tool/result %s (seq %d) has no tool/call in this step", tr.CallID, e.Seq)
		}
		delete(t.pending, tr.CallID)
		if i := slices.Index(t.owed, tr.CallID); i >= 0 {
			t.owed = slices.Delete(t.owed, i, i+1)
		}
	default:
		if !t.inTurn {
			return violation("%s (seq %d) appended outside any open turn (every event must be turn-enclosed)", e.Type, e.Seq)
		}
	}
	return nil
}

// Install checks every session of st live: existing sessions and new ones
// are replayed when they enter, each append is checked before other
// listeners see it, and a violation fails that append.
func Install(scope *kernel.Scope, st *session.Live) error {
	var mu sync.Mutex
	trackers := map[*session.Session]*Tracker{}
	seed := func(s *session.Session) (*Tracker, error) {
		t := NewTracker()
		t.seeding = true
		for _, e := range s.Events() {
			if err := t.Check(e); err != nil {
				return nil, fmt.Errorf("invariants: seed of %s: %w", s.ID(), err)
			}
		}
		t.seeding = false
		return t, nil
	}
	if err := scope.Add(st.Created.Listen(func(_ context.Context, s *session.Session) error {
		t, err := seed(s)
		if err != nil {
			return err
		}
		mu.Lock()
		trackers[s] = t
		mu.Unlock()
		return nil
	}, kernel.Prepend(), kernel.Named("invariants"))); err != nil {
		return err
	}
	return scope.Add(st.Appended.Listen(func(_ context.Context, a session.Appended) error {
		mu.Lock()
		defer mu.Unlock()
		t := trackers[a.Session]
		if t == nil {
			t = NewTracker()
			t.seeding = true
			for _, e := range a.Session.Events() {
				if e.Seq >= a.Event.Seq {
					break
				}
				if err := t.Check(e); err != nil {
					return err
				}
			}
			t.seeding = false
			trackers[a.Session] = t
		}
		return t.Check(a.Event)
	}, kernel.Prepend(), kernel.Named("invariants")))
}

// InstallStatus checks every agent/status notification on status: the first
// one seen for an agent is its baseline, every later one must change the
// status, and disposed is terminal. Front-ends drive their busy indicators
// and teardown from these notifications, so a repeated or resurrected status
// is a loop bug. Agents are told apart by identity, not id: an id may be
// reused by a new agent after the old one was disposed.
func InstallStatus(scope *kernel.Scope, status *kernel.Signal[agent.StatusChange]) error {
	var mu sync.Mutex
	last := map[agent.Agent]agent.Status{}
	return scope.Add(status.Listen(func(_ context.Context, c agent.StatusChange) error {
		mu.Lock()
		defer mu.Unlock()
		prev, seen := last[c.Agent]
		switch {
		case seen && prev == c.Status:
			return violation("agent/status repeated %s (no-op transition)", c.Status)
		case seen && prev == agent.Disposed:
			return violation("agent/status left terminal state disposed → %s", c.Status)
		}
		last[c.Agent] = c.Status
		return nil
	}, kernel.Prepend(), kernel.Named("invariants")))
}
