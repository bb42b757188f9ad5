package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/dshq/dsh/checkpoint/files"
	"github.com/dshq/dsh/internal/textdiff"
	"github.com/dshq/dsh/session"
)

// Request is one rewind.
type Request struct {
	To Target
	// Code restores the workspace files, Chat the conversation; at least
	// one must be set.
	Code, Chat bool
	// DryRun reports what would happen (Report.Diff) and changes nothing.
	DryRun bool
	// Force restores files someone else changed since the agent's
	// checkpoint too; SkipConflicts restores everything else and leaves
	// those alone. With neither, conflicts refuse the whole rewind
	// ([ErrConflicts]).
	Force, SkipConflicts bool
}

// Conflict is a file a rewind would restore that someone other than the
// agent changed since its checkpoint.
type Conflict struct {
	Path string `json:"path"`
	Op   string `json:"op"`
	// Diff is what they changed (text files).
	Diff string `json:"diff,omitempty"`
}

// Report is what a rewind did, or would do.
type Report struct {
	Request Request
	// Prompt is the target turn's prompt.
	Prompt string
	// Target is the checkpoint restored, Current the state found.
	Target, Current files.Hash
	Actions         []files.Action
	Skipped         []files.Skip
	Conflicts       []Conflict
	// Diff is the unified diff from the current files to the target's
	// (dry runs).
	Diff    string
	Applied *files.Applied
	// Shadowed counts the history entries the conversation rewind hid.
	Shadowed int
	// Interrupted names rewinds an earlier process started and did not
	// finish (their temporary files were removed).
	Interrupted []string
	// Done is set when the rewind was carried out (not a dry run, not
	// refused).
	Done bool
}

// Errors of [Checkpoints.Rewind].
var (
	// ErrBusy: a turn is running; rewind between turns.
	ErrBusy = errors.New("checkpoint: a turn is running; rewind when it has ended (or cancel it)")
	// ErrConflicts: files changed by someone else would be overwritten.
	ErrConflicts = errors.New("checkpoint: files changed since the agent's checkpoint would be overwritten")
	// ErrCompacted: the target's conversation was compacted into a summary.
	ErrCompacted = errors.New("checkpoint: the conversation at that point is no longer in the history (compacted into a summary, or rewound past)")
	// ErrNoPoint: the target names no turn or step of the session, or one
	// without the checkpoint a code rewind needs.
	ErrNoPoint = errors.New("checkpoint: no such rewind point")
)

// RestoreStart is the payload of checkpoint/restore-start.
type RestoreStart struct {
	Token  string     `json:"token"`
	To     Target     `json:"to"`
	Target files.Hash `json:"target"`
	From   files.Hash `json:"from"`
	Paths  []string   `json:"paths"`
	Forced bool       `json:"forced,omitempty"`
}

// Restored is the payload of checkpoint/restored.
type Restored struct {
	Token string     `json:"token"`
	After files.Hash `json:"after"`
	Done  int        `json:"done"`
	// Left are conflicts left alone and paths found changed meanwhile.
	Left []string `json:"left,omitempty"`
	// Failed are actions that failed, with the error.
	Failed []string `json:"failed,omitempty"`
	// Skipped are differences no checkpoint can undo (ignored files,
	// files over the size cap).
	Skipped []string `json:"skipped,omitempty"`
}

// Rewound is the payload of checkpoint/rewind.
type Rewound struct {
	To    Target `json:"to"`
	ToSeq int64  `json:"toSeq"`
	Code  bool   `json:"code,omitempty"`
}

// Rewind takes the session back to before r.To: its files (Code), its
// conversation (Chat) or both. The session must be between turns. The
// rewind is logged in a one-shot turn of its own, so it can be rewound in
// turn (to before that turn).
func (c *Checkpoints) Rewind(ctx context.Context, s *session.Session, r Request) (Report, error) {
	rep := Report{Request: r}
	if !r.Code && !r.Chat {
		return rep, errors.New("checkpoint: a rewind needs code, chat or both")
	}
	if s.Turns().Open {
		return rep, ErrBusy
	}
	h, err := readHistory(ctx, s)
	if err != nil {
		return rep, err
	}
	for _, p := range h.interrupted {
		files.Sweep(p.start.Paths, p.start.Token)
		rep.Interrupted = append(rep.Interrupted, fmt.Sprintf("the rewind to before turn %s (%s) was interrupted: each of its %s holds either its content from before that rewind or the restored one",
			p.start.To, p.start.Token, plural(len(p.start.Paths), "file")))
	}
	tr, m, seq, err := h.target(r.To)
	if tr.seq == 0 && err != nil {
		return rep, err
	}
	rep.Prompt = tr.prompt
	if r.Code && err != nil {
		return rep, err
	}
	var shadow []int64
	if r.Chat {
		if shadow, err = chatRange(s, seq); err != nil {
			return rep, err
		}
		rep.Shadowed = len(shadow)
	}
	var plan files.Plan
	if r.Code {
		cur, err := c.scan(ctx, s)
		if err != nil {
			return rep, fmt.Errorf("checkpoint: recording the current files: %w", err)
		}
		if err := c.store.Reference(string(s.ID()), cur.ID); err != nil {
			return rep, err
		}
		rep.Target, rep.Current = m.id, cur.ID
		if plan, err = c.store.Plan(cur.ID, m.id); err != nil {
			return rep, err
		}
		rep.Actions, rep.Skipped = plan.Actions, plan.Skipped
		if rep.Conflicts, err = c.conflicts(h, m.seq, cur.ID, plan); err != nil {
			return rep, err
		}
		if r.DryRun {
			if rep.Diff, err = c.store.DiffText(plan); err != nil {
				return rep, err
			}
		}
	}
	if r.DryRun {
		return rep, nil
	}
	if len(rep.Conflicts) > 0 && !r.Force && !r.SkipConflicts {
		return rep, ErrConflicts
	}
	if r.Code && len(plan.Actions) == 0 && (!r.Chat || len(shadow) == 0) && len(rep.Interrupted) == 0 {
		rep.Done = true
		return rep, nil
	}
	turn, err := c.openTurn(ctx, s)
	if err != nil {
		return rep, err
	}
	var failed error
	if r.Code && len(plan.Actions) > 0 {
		failed = c.restore(ctx, s, r, m.id, plan, &rep)
	}
	if r.Chat && failed == nil && len(shadow) > 0 {
		op := session.ReplaceOp(shadow[0], shadow[len(shadow)-1])
		if _, err := writer(s).AppendSurface(ctx, TypeRewind, Rewound{To: r.To, ToSeq: seq, Code: r.Code}, op, shadow); err != nil {
			failed = fmt.Errorf("checkpoint: recording the conversation rewind: %w", err)
		}
	}
	if err := c.closeTurn(ctx, s, turn, failed); err != nil && failed == nil {
		failed = err
	}
	rep.Done = failed == nil
	return rep, failed
}

// restore applies a code rewind between its two log records.
func (c *Checkpoints) restore(ctx context.Context, s *session.Session, r Request, target files.Hash, plan files.Plan, rep *Report) error {
	token := strconv.FormatInt(c.now().UnixNano(), 36)
	start := RestoreStart{Token: token, To: r.To, Target: target, From: plan.Current, Paths: plan.Paths(), Forced: r.Force}
	if _, err := writer(s).Append(ctx, TypeRestoreStart, start); err != nil {
		return fmt.Errorf("checkpoint: recording the rewind: %w", err)
	}
	if c.live != nil {
		// The record of the rewind is durable before any file changes.
		if err := c.live.FlushSession(ctx, s); err != nil {
			return fmt.Errorf("checkpoint: the rewind could not be saved, so no file was touched: %w", err)
		}
	}
	conflict := map[string]bool{}
	if !r.Force {
		for _, cf := range rep.Conflicts {
			conflict[cf.Path] = true
		}
	}
	applied, err := c.store.Apply(ctx, plan, files.ApplyOptions{Leave: func(p string) bool { return conflict[p] }, Token: token, Sync: c.sync})
	files.Sweep(start.Paths, token)
	rep.Applied = &applied
	done := Restored{Token: token, Done: len(applied.Done)}
	for _, f := range applied.Left {
		done.Left = append(done.Left, f.Path)
	}
	for _, f := range applied.Failed {
		done.Failed = append(done.Failed, fmt.Sprintf("%s: %v", f.Path, f.Err))
	}
	for _, sk := range plan.Skipped {
		done.Skipped = append(done.Skipped, sk.Path+" ("+sk.Why+")")
	}
	if after, serr := c.scan(ctx, s); serr == nil {
		done.After = after.ID
		_ = c.store.Reference(string(s.ID()), after.ID)
	}
	if _, aerr := writer(s).Append(ctx, TypeRestored, done); aerr != nil && err == nil {
		err = aerr
	}
	if err != nil {
		return fmt.Errorf("checkpoint: restoring files: %w", err)
	}
	return nil
}

// openTurn opens the one-shot turn a rewind is recorded in.
func (c *Checkpoints) openTurn(ctx context.Context, s *session.Session) (int, error) {
	st := s.Turns()
	turn := st.Last + 1
	_, err := writer(s).AppendIf(ctx, func(ts session.TurnState) bool { return !ts.Open && ts.Last == st.Last },
		session.TypeTurnStart, session.TurnStart{Turn: turn, Trigger: session.Trigger{Kind: TriggerRewind}}, nil)
	if errors.Is(err, session.ErrCondition) {
		return 0, ErrBusy
	}
	return turn, err
}

func (c *Checkpoints) closeTurn(ctx context.Context, s *session.Session, turn int, failed error) error {
	reason := session.EndReason{Kind: session.EndCompleted}
	if failed != nil {
		reason = session.EndReason{Kind: session.EndError, Message: failed.Error()}
	}
	if _, err := writer(s).Append(context.WithoutCancel(ctx), session.TypeTurnEnd, session.TurnEnd{Turn: turn, Reason: reason}); err != nil {
		return err
	}
	if c.live != nil {
		return c.live.FlushSession(context.WithoutCancel(ctx), s)
	}
	return nil
}

// conflicts are the plan's paths that someone other than the agent
// changed after the target checkpoint (at log position from).
func (c *Checkpoints) conflicts(h history, from int64, now files.Hash, plan files.Plan) ([]Conflict, error) {
	touched := map[string]bool{}
	for _, a := range plan.Actions {
		touched[a.Path] = true
	}
	var out []Conflict
	seen := map[string]bool{}
	for _, iv := range h.foreign(from, now) {
		changes, err := c.store.Diff(iv[0], iv[1])
		if err != nil {
			return nil, err
		}
		for _, ch := range changes {
			if !touched[ch.Path] || seen[ch.Path] {
				continue
			}
			seen[ch.Path] = true
			out = append(out, Conflict{Path: ch.Path, Op: ch.Op(), Diff: c.changeDiff(ch)})
		}
	}
	slices.SortFunc(out, func(a, b Conflict) int {
		switch {
		case a.Path < b.Path:
			return -1
		case a.Path > b.Path:
			return 1
		}
		return 0
	})
	return out, nil
}

// changeDiff renders one change of a text file as a unified diff.
func (c *Checkpoints) changeDiff(ch files.Change) string {
	read := func(e files.Entry) (string, bool) {
		if e.Kind != files.File {
			return "", e.Kind == 0 || e.Kind == files.Absent
		}
		b, err := c.store.Blob(e.Hash)
		if err != nil || slices.Contains(b, 0) {
			return "", false
		}
		return string(b), true
	}
	before, ok1 := read(ch.Old)
	after, ok2 := read(ch.New)
	if !ok1 || !ok2 {
		return ""
	}
	return textdiff.Unified("a"+ch.Path, "b"+ch.Path, before, after)
}

// chatRange lists the surface nodes a conversation rewind to log
// position seq shadows: the tail of the surface that stands for events
// after seq. A node made after seq that stands for earlier events too (a
// compaction summary spanning the point) makes the point unreachable.
func chatRange(s *session.Session, seq int64) ([]int64, error) {
	nodes, err := s.Surface()
	if err != nil {
		return nil, err
	}
	origin := func(n int64) int64 {
		e, ok := s.Event(n)
		if !ok || e.SurfaceOp == nil || !e.SurfaceOp.Replace || len(e.SourceEventSeqs) == 0 {
			return n
		}
		return slices.Min(e.SourceEventSeqs)
	}
	i := len(nodes)
	for i > 0 && origin(nodes[i-1]) > seq {
		i--
	}
	for _, n := range nodes[:i] {
		if n <= seq {
			continue
		}
		// Made after the point, standing for something before it: a
		// pruned result stands for its own result (fine); a summary
		// standing for both sides cannot be split.
		e, _ := s.Event(n)
		if slices.ContainsFunc(e.SourceEventSeqs, func(src int64) bool { return src > seq }) {
			return nil, fmt.Errorf("%w (at seq %d); rewind the conversation to a turn after it, or the code only", ErrCompacted, n)
		}
	}
	return slices.Clone(nodes[i:]), nil
}
