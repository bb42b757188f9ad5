package checkpoint

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/dshq/dsh/checkpoint/files"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// Target names a point to rewind to: before turn Turn, or before step
// Step (2 or later) of it.
type Target struct {
	Turn int `json:"turn"`
	Step int `json:"step,omitempty"`
}

// String is "3" or "3.2".
func (t Target) String() string {
	if t.Step > 1 {
		return fmt.Sprintf("%d.%d", t.Turn, t.Step)
	}
	return strconv.Itoa(t.Turn)
}

// ParseTarget reads "TURN" or "TURN.STEP".
func ParseTarget(s string) (Target, error) {
	turn, step, hasStep := strings.Cut(strings.TrimSpace(s), ".")
	var t Target
	var err error
	if t.Turn, err = strconv.Atoi(turn); err != nil || t.Turn < 1 {
		return t, fmt.Errorf("checkpoint: %q names no turn (want TURN or TURN.STEP, counting from 1)", s)
	}
	if hasStep {
		if t.Step, err = strconv.Atoi(step); err != nil || t.Step < 1 {
			return t, fmt.Errorf("checkpoint: %q names no step (want TURN.STEP, counting from 1)", s)
		}
	}
	if t.Step == 1 {
		t.Step = 0
	}
	return t, nil
}

// mark is a checkpoint the log references, in log order, with its role in
// the agent's activity: an open starts a stretch of the agent's own work
// (a turn, a rewind), a close ends one; what changes between a close and
// the next open was done by someone else.
type mark struct {
	seq         int64
	turn, step  int
	at          string
	id          files.Hash
	open, close bool
}

type turnRec struct {
	turn    int
	seq     int64 // turn/start
	trigger string
	prompt  string
	ended   bool
	steps   map[int]int64 // step/start seqs
}

type pending struct {
	seq   int64
	start RestoreStart
}

// history is what a session's log says about its turns and checkpoints.
type history struct {
	turns       []turnRec
	marks       []mark
	interrupted []pending // restore-starts without their restored
	last        int64
}

func (h history) turn(n int) (turnRec, bool) {
	for _, t := range h.turns {
		if t.turn == n {
			return t, true
		}
	}
	return turnRec{}, false
}

// historyTypes are the events readHistory reads.
var historyTypes = map[string]bool{session.TypeTurnStart: true, session.TypeStepStart: true,
	session.TypeUserMessage: true, session.TypeTurnEnd: true, TypeTaken: true, TypeRestoreStart: true, TypeRestored: true}

// readHistory folds the log of s. Its step markers and checkpoints (a few
// a step) are released from memory once stored, so they are folded with
// their payloads read back in batches ([session.Session.Each]); a log that
// cannot be read back is an error, not a history with turns missing.
func readHistory(ctx context.Context, s *session.Session) (history, error) {
	var h history
	open := map[string]int{}
	cur := 0 // the turn being read
	err := s.Each(ctx, 0, func(e session.Event) bool {
		h.last = e.Seq
		return historyTypes[e.Type]
	}, func(e session.Event) error {
		switch e.Type {
		case session.TypeTurnStart:
			ts, err := session.Decode[session.TurnStart](e)
			if err == nil {
				cur = ts.Turn
				h.turns = append(h.turns, turnRec{turn: ts.Turn, seq: e.Seq, trigger: ts.Trigger.Kind, steps: map[int]int64{}})
			}
		case session.TypeStepStart:
			if sb, err := session.Decode[session.StepBoundary](e); err == nil && len(h.turns) > 0 {
				h.turns[len(h.turns)-1].steps[sb.Step] = e.Seq
			}
		case session.TypeUserMessage:
			if n := len(h.turns); n > 0 && h.turns[n-1].prompt == "" {
				if p, err := session.Decode[session.Prompt](e); err == nil {
					h.turns[n-1].prompt = llm.TextOf(p.Content)
				}
			}
		case session.TypeTurnEnd:
			if n := len(h.turns); n > 0 {
				h.turns[n-1].ended = true
			}
		case TypeTaken:
			t, err := session.Decode[Taken](e)
			if err != nil || t.ID.IsZero() {
				return nil
			}
			h.marks = append(h.marks, mark{seq: e.Seq, turn: t.Turn, step: t.Step, at: t.At, id: t.ID,
				open: t.At == AtTurn, close: t.At == AtEnd})
		case TypeRestoreStart:
			rs, err := session.Decode[RestoreStart](e)
			if err != nil {
				return nil
			}
			open[rs.Token] = len(h.interrupted)
			h.interrupted = append(h.interrupted, pending{seq: e.Seq, start: rs})
			if !rs.From.IsZero() {
				// The state a rewind found: what rewinding its turn restores.
				h.marks = append(h.marks, mark{seq: e.Seq, turn: cur, id: rs.From, at: AtRewind, open: true})
			}
		case TypeRestored:
			r, err := session.Decode[Restored](e)
			if err != nil {
				return nil
			}
			if i, ok := open[r.Token]; ok {
				h.interrupted[i].seq = -1
			}
			if !r.After.IsZero() {
				h.marks = append(h.marks, mark{seq: e.Seq, turn: cur, id: r.After, at: AtRewind, close: true})
			}
		}
		return nil
	})
	if err != nil {
		return history{}, fmt.Errorf("checkpoint: reading the session's history: %w", err)
	}
	var keep []pending
	for _, p := range h.interrupted {
		if p.seq >= 0 {
			keep = append(keep, p)
		}
	}
	h.interrupted = keep
	return h, nil
}

// target finds the checkpoint and the log position of t: the state
// before turn t.Turn (or before its step t.Step).
func (h history) target(t Target) (turnRec, mark, int64, error) {
	tr, ok := h.turn(t.Turn)
	if !ok {
		return tr, mark{}, 0, fmt.Errorf("%w: the session has no turn %d", ErrNoPoint, t.Turn)
	}
	at, seq := AtTurn, tr.seq
	if t.Step > 1 {
		at = AtStep
		s, ok := tr.steps[t.Step]
		if !ok {
			return tr, mark{}, 0, fmt.Errorf("%w: turn %d has no step %d", ErrNoPoint, t.Turn, t.Step)
		}
		seq = s
	}
	for _, m := range h.marks {
		if m.turn != t.Turn || m.seq <= tr.seq {
			continue
		}
		// Before a rewind's own turn is the state that rewind found.
		if m.at == at && (at == AtTurn || m.step == t.Step) || at == AtTurn && m.at == AtRewind && m.open {
			return tr, m, seq, nil
		}
	}
	if at == AtStep {
		return tr, mark{}, seq, fmt.Errorf("%w: step %d of turn %d changed nothing, so it has no checkpoint (rewind to a step that ran a tool, or to the turn)", ErrNoPoint, t.Step, t.Turn)
	}
	return tr, mark{}, seq, fmt.Errorf("%w: turn %d has no checkpoint (checkpoints were off, or it was recorded by an older dsh): only the conversation can be rewound there", ErrNoPoint, t.Turn)
}

// foreign lists the stretches after position from in which someone other
// than the agent changed the workspace: from a close to the next open,
// and from the last close to now.
func (h history) foreign(from int64, now files.Hash) [][2]files.Hash {
	var out [][2]files.Hash
	var closed *mark
	for i := range h.marks {
		m := h.marks[i]
		if m.seq < from {
			continue
		}
		switch {
		case m.open:
			if closed != nil && closed.id != m.id {
				out = append(out, [2]files.Hash{closed.id, m.id})
			}
			closed = nil
		case m.close:
			closed = &h.marks[i]
		}
	}
	if closed != nil && closed.id != now {
		out = append(out, [2]files.Hash{closed.id, now})
	}
	return out
}
