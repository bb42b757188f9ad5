package checkpoint

import (
	"context"
	"fmt"

	"github.com/dshq/dsh/checkpoint/files"
	"github.com/dshq/dsh/session"
)

// Changes is what a session's agent changed in the workspace, from the
// checkpoint before its first turn to its newest one (see
// [Checkpoints.Changes]).
type Changes struct {
	// From and To are the checkpoints compared.
	From, To files.Hash
	// Actions are the recorded changes, Old as before the first turn and
	// New as now recorded; Skipped those a checkpoint holds no content
	// for (ignored, over the size cap).
	Actions []files.Action
	Skipped []files.Skip
	// Diff is the unified diff of Actions (text files; others named).
	Diff string
}

// Changes compares the session's first checkpoint with its newest one,
// keeping only the paths the agent's own stretches changed (a turn's start
// to its end): an edit the user made in an editor between turns is not
// the session's. It reads only what the session's checkpoints recorded;
// it takes no checkpoint and scans nothing. A path both the agent and
// someone else changed shows its whole difference.
func (c *Checkpoints) Changes(s *session.Session) (Changes, error) {
	h, err := readHistory(context.Background(), s)
	if err != nil {
		return Changes{}, err
	}
	var first *mark
	for i := range h.marks {
		if h.marks[i].open {
			first = &h.marks[i]
			break
		}
	}
	if first == nil {
		return Changes{}, fmt.Errorf("%w: the session has no checkpoint yet", ErrNoPoint)
	}
	last := h.marks[len(h.marks)-1]
	var ch Changes
	ch.From, ch.To = first.id, last.id
	if first.id == last.id {
		return ch, nil
	}
	// The paths changed inside the agent's stretches: from each open to
	// the next close (or open, for a turn that never closed), the newest
	// checkpoint ending a stretch still running.
	touched := map[string]bool{}
	for i, m := range h.marks {
		if !m.open {
			continue
		}
		end := last.id
		for _, n := range h.marks[i+1:] {
			if n.open || n.close {
				end = n.id
				break
			}
		}
		diff, err := c.store.Diff(m.id, end)
		if err != nil {
			return ch, fmt.Errorf("checkpoint: %w", err)
		}
		for _, d := range diff {
			touched[d.Path] = true
		}
	}
	plan, err := c.store.Plan(first.id, last.id)
	if err != nil {
		return ch, fmt.Errorf("checkpoint: %w", err)
	}
	mine := files.Plan{Target: plan.Target, Current: plan.Current, Roots: plan.Roots}
	for _, a := range plan.Actions {
		if touched[a.Path] {
			mine.Actions = append(mine.Actions, a)
		}
	}
	for _, sk := range plan.Skipped {
		if touched[sk.Path] {
			mine.Skipped = append(mine.Skipped, sk)
		}
	}
	ch.Actions, ch.Skipped = mine.Actions, mine.Skipped
	if ch.Diff, err = c.store.DiffText(mine); err != nil {
		return ch, fmt.Errorf("checkpoint: %w", err)
	}
	return ch, nil
}
