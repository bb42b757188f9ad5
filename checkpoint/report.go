package checkpoint

import (
	"context"
	"fmt"
	"strings"

	"github.com/dshq/dsh/checkpoint/files"
	"github.com/dshq/dsh/session"
)

// Point is a turn a session can be rewound to, for pickers.
type Point struct {
	Target Target
	// Prompt is the turn's prompt (the user's text).
	Prompt string
	// Code says the turn has a checkpoint (its files can be rewound).
	Code bool
	// Steps are the later steps with a checkpoint of their own.
	Steps []int
	// Changes are what the turn changed in the workspace, as far as the
	// checkpoints saw (its start to its end, or to the next checkpoint).
	Changes []files.Change
}

// Summary is a short account of the point's file changes: "2 modified,
// 1 created, 1 deleted".
func (p Point) Summary() string {
	if !p.Code {
		return "no checkpoint"
	}
	n := map[string]int{}
	untracked := 0
	for _, c := range p.Changes {
		if c.Old.Kind == files.Dir || c.New.Kind == files.Dir {
			continue
		}
		if !plainKind(c.Old) || !plainKind(c.New) {
			untracked++
			continue
		}
		n[c.Op()]++
	}
	var parts []string
	for _, op := range []string{"modified", "created", "deleted", "mode", "type"} {
		if n[op] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[op], op))
		}
	}
	if untracked > 0 {
		parts = append(parts, fmt.Sprintf("%d not recorded (ignored or too big)", untracked))
	}
	if len(parts) == 0 {
		return "no file changes"
	}
	return strings.Join(parts, ", ")
}

// plainKind: a side of a change a checkpoint holds (or its absence).
func plainKind(e files.Entry) bool {
	return e.Kind == 0 || e.Kind == files.Absent || e.Kind == files.File || e.Kind == files.Link
}

// Points lists the user turns of s, oldest first.
func (c *Checkpoints) Points(s *session.Session) ([]Point, error) {
	h, err := readHistory(context.Background(), s)
	if err != nil {
		return nil, err
	}
	var out []Point
	for _, tr := range h.turns {
		if tr.trigger != session.TriggerMessage && tr.trigger != "" {
			continue
		}
		p := Point{Target: Target{Turn: tr.turn}, Prompt: tr.prompt}
		var start *mark
		for i, m := range h.marks {
			if m.turn != tr.turn || m.seq < tr.seq {
				continue
			}
			switch m.at {
			case AtTurn:
				if start == nil {
					start = &h.marks[i]
				}
			case AtStep:
				p.Steps = append(p.Steps, m.step)
			}
		}
		if start != nil {
			p.Code = true
			end := c.nextMark(h, start.seq)
			if !end.IsZero() {
				ch, err := c.store.Diff(start.id, end)
				if err == nil {
					p.Changes = ch
				}
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// nextMark is the checkpoint that ends what the turn starting at seq did:
// its end checkpoint, or the next turn's start.
func (c *Checkpoints) nextMark(h history, seq int64) files.Hash {
	for _, m := range h.marks {
		if m.seq > seq && (m.close || m.open) {
			return m.id
		}
	}
	return files.Hash{}
}

// Text renders the report for people: what was (or would be) restored,
// conflicts with their diffs, what could not be restored and why.
func (r Report) Text() string { return r.text(false) }

// TextAsking is Text for a front door that asks about conflicts itself
// (the terminal, ACP): without the hint to rewind again with --force.
func (r Report) TextAsking() string { return r.text(true) }

func (r Report) text(asking bool) string {
	var b strings.Builder
	for _, s := range r.Interrupted {
		b.WriteString("note: " + s + "\n")
	}
	what := map[[2]bool]string{{true, true}: "code and conversation", {true, false}: "code", {false, true}: "conversation"}[[2]bool{r.Request.Code, r.Request.Chat}]
	verb := "rewound"
	switch {
	case r.Request.DryRun:
		verb = "would rewind"
	case !r.Done:
		verb = "did not rewind"
	}
	fmt.Fprintf(&b, "%s %s to before turn %s", verb, what, r.Request.To)
	if r.Prompt != "" {
		fmt.Fprintf(&b, " (%q)", clip(r.Prompt, 60))
	}
	b.WriteString("\n")
	if r.Request.Code {
		if len(r.Actions) == 0 {
			b.WriteString("files: nothing to restore\n")
		}
		left := map[string]bool{}
		failed := map[string]string{}
		if r.Applied != nil {
			for _, f := range r.Applied.Left {
				left[f.Path] = true
			}
			for _, f := range r.Applied.Failed {
				failed[f.Path] = f.Err.Error()
			}
		}
		for _, a := range r.Actions {
			state := ""
			switch {
			case failed[a.Path] != "":
				state = " — failed: " + failed[a.Path]
			case left[a.Path]:
				state = " — left alone"
			}
			fmt.Fprintf(&b, "  %-7s %s%s\n", actionWord(a), a.Path, state)
		}
		for _, s := range r.Skipped {
			fmt.Fprintf(&b, "  not restored: %s (%s, %s)\n", s.Path, s.Op(), s.Why)
		}
		if len(r.Conflicts) > 0 {
			fmt.Fprintf(&b, "%s changed by someone else since the agent's checkpoint:\n", plural(len(r.Conflicts), "file"))
			for _, cf := range r.Conflicts {
				fmt.Fprintf(&b, "  conflict: %s (%s)\n", cf.Path, cf.Op)
				if cf.Diff != "" {
					for _, l := range strings.SplitAfter(strings.TrimRight(cf.Diff, "\n"), "\n") {
						b.WriteString("    " + strings.TrimRight(l, "\n") + "\n")
					}
				}
			}
			switch {
			case r.Request.Force:
				b.WriteString("  (restored anyway: --force)\n")
			case r.Request.SkipConflicts:
				b.WriteString("  (left alone)\n")
			case !r.Request.DryRun && asking:
				b.WriteString("  nothing was changed yet\n")
			case !r.Request.DryRun:
				b.WriteString("  nothing was changed: rewind again with --force to overwrite them\n")
			}
		}
	}
	if r.Request.Chat && (r.Done || r.Request.DryRun) {
		fmt.Fprintf(&b, "conversation: %s hidden from the model (the log keeps them)\n", plural(r.Shadowed, "message"))
	}
	if r.Diff != "" {
		b.WriteString(r.Diff)
		if !strings.HasSuffix(r.Diff, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// ActionWord names what a rewind does to a path, for people and wire
// formats: restore (recreate), revert, remove, mkdir, rmdir, chmod.
func ActionWord(a files.Action) string { return actionWord(a) }

func actionWord(a files.Action) string {
	switch a.Do {
	case files.Write:
		if a.Old.Kind == 0 || a.Old.Kind == files.Absent {
			return "restore"
		}
		return "revert"
	case files.Remove:
		return "remove"
	case files.Mkdir:
		return "mkdir"
	case files.Rmdir:
		return "rmdir"
	case files.Chmod:
		return "chmod"
	}
	return string(a.Do)
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
