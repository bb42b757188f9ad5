package term

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dshq/dsh/checkpoint"
)

// /diff: what this session's agent changed in the workspace, from the
// checkpoint before its first turn to its newest one, as a coloured
// unified diff. It reads the checkpoints the session already recorded
// (checkpoint.Changes) and scans nothing.

// maxDiffLines bounds what /diff prints into the scrollback.
const maxDiffLines = 2000

// diffListed is the session's changes, read off the UI goroutine.
type diffListed struct {
	cur *current
	ch  checkpoint.Changes
	err error
}

func (u *ui) diffCmd() {
	c := u.cur.Load()
	cps := u.app.Checkpoints
	switch {
	case cps == nil:
		u.tr.Note(u.st.Dim("/diff is not available: the checkpoints plugin is switched off"))
		return
	case c == nil:
		return
	}
	go func() {
		ch, err := cps.Changes(c.sess)
		u.q.push(diffListed{cur: c, ch: ch, err: err})
	}()
}

func (u *ui) diffListed(m diffListed) {
	switch {
	case m.cur != u.cur.Load():
		return
	case errors.Is(m.err, checkpoint.ErrNoPoint):
		u.tr.Note(u.st.Dim("no changes yet: the session has no checkpoint"))
		return
	case m.err != nil:
		u.tr.Note(u.st.Err("diff: " + sanitize(m.err.Error())))
		return
	case len(m.ch.Actions) == 0 && len(m.ch.Skipped) == 0:
		u.tr.Note(u.st.Dim("this session changed no files"))
		return
	}
	u.tr.Note(u.changesText(m.ch))
}

// changesText is the summary line and the coloured diff.
func (u *ui) changesText(ch checkpoint.Changes) string {
	var b strings.Builder
	n := map[string]int{}
	paths := map[string]bool{}
	for _, a := range ch.Actions {
		if !paths[a.Path] {
			paths[a.Path] = true
			n[a.Op()]++
		}
	}
	var parts []string
	for _, op := range []string{"modified", "created", "deleted", "mode", "type"} {
		if n[op] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[op], op))
		}
	}
	b.WriteString(u.st.Bold("Changes this session") + u.st.Dim(" — "+strings.Join(parts, ", ")) + "\n")
	lines := strings.Split(strings.TrimRight(sanitize(ch.Diff), "\n"), "\n")
	cwd := strings.TrimSuffix(u.cwd(), "/") + "/"
	for i, l := range lines {
		// Paths under the working directory are shown relative to it.
		for _, side := range []string{"--- a", "+++ b"} {
			if rest, ok := strings.CutPrefix(l, side+cwd); ok {
				l = side + "/" + rest
			}
		}
		if i == maxDiffLines {
			b.WriteString(u.st.Dim(fmt.Sprintf("… %d more diff lines", len(lines)-i)) + "\n")
			break
		}
		b.WriteString(diffStyle(u.st, l) + "\n")
	}
	for _, s := range ch.Skipped {
		fmt.Fprintf(&b, "%s\n", u.st.Dim(fmt.Sprintf("%s %s (%s: no content recorded)", s.Op(), sanitize(s.Path), s.Why)))
	}
	return strings.TrimRight(b.String(), "\n")
}

// diffStyle colours one line of a unified diff.
func diffStyle(st Styles, l string) string {
	switch {
	case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "):
		return st.Bold(l)
	case strings.HasPrefix(l, "@@"):
		return st.Hunk(l)
	case strings.HasPrefix(l, "+"):
		return st.Add(l)
	case strings.HasPrefix(l, "-"):
		return st.Del(l)
	case strings.HasPrefix(l, " "), l == "":
		return l
	}
	return st.Warn(l) // mkdir, chmod, binary, link notes
}
