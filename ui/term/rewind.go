package term

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/dshq/dsh/checkpoint"
)

// The rewind picker: Esc Esc on an empty prompt (as in Claude Code) or
// /rewind opens it. It lists the session's turns with their prompts and a
// summary of what each changed in the files; enter on one asks what to
// restore (code and conversation, the conversation, the code); files
// someone else changed since the agent's checkpoint are shown with their
// diffs and asked about (overwrite them, rewind the others, cancel). The
// rewind itself is checkpoint.Checkpoints.Rewind, as for every front door.

type rewindStage int

const (
	rewindList     rewindStage = iota // choosing the turn
	rewindScope                       // choosing what to restore
	rewindRunning                     // the rewind runs off the UI goroutine
	rewindConflict                    // asking about someone else's changes
)

// rewindPicker is the open picker (only the UI goroutine touches it).
type rewindPicker struct {
	stage  rewindStage
	points []checkpoint.Point
	sel    int // the chosen point
	opt    int // the chosen scope option
	req    checkpoint.Request
	cur    *current
	// conflicts are those the last attempt refused over.
	conflicts []checkpoint.Conflict
}

// rewindOptions are what the scope question offers, in order.
var rewindOptions = []struct {
	label      string
	code, chat bool
}{
	{"Restore code and conversation", true, true},
	{"Restore conversation", false, true},
	{"Restore code", true, false},
	{"Never mind", false, false},
}

// doubleEsc is how soon a second esc must follow the first to open the
// picker.
const doubleEsc = 800 * time.Millisecond

type rewindListed struct {
	cur    *current
	points []checkpoint.Point
	err    error
}

type rewindDone struct {
	cur *current
	req checkpoint.Request
	rep checkpoint.Report
	err error
}

// escIdle handles esc on an idle prompt: the second within doubleEsc on
// an empty prompt opens the picker.
func (u *ui) escIdle() {
	if u.ed.Text() != "" {
		return
	}
	if !u.lastEsc.IsZero() && time.Since(u.lastEsc) < doubleEsc {
		u.lastEsc = time.Time{}
		u.openRewind()
		return
	}
	u.lastEsc = time.Now()
	u.setHint("esc again to rewind", doubleEsc)
}

// openRewind lists the points off the UI goroutine (it reads the
// checkpoint store), then opens the picker.
func (u *ui) openRewind() {
	c := u.cur.Load()
	cps := u.app.Checkpoints
	switch {
	case cps == nil:
		u.tr.Note(u.st.Dim("rewind is not available: the checkpoints plugin is switched off"))
		return
	case c == nil:
		return
	case u.busy():
		u.tr.Note(u.st.Warn("a turn is running: interrupt it first (esc or ctrl-c), then rewind"))
		return
	}
	go func() {
		pts, err := cps.Points(c.sess)
		u.q.push(rewindListed{cur: c, points: pts, err: err})
	}()
}

func (u *ui) rewindListed(m rewindListed) {
	switch {
	case m.cur != u.cur.Load():
		return
	case m.err != nil:
		u.tr.Note(u.st.Err("rewind: " + sanitize(m.err.Error())))
		return
	case len(m.points) == 0:
		u.tr.Note(u.st.Dim("no turns to rewind to yet"))
		return
	}
	u.rw = &rewindPicker{stage: rewindList, points: m.points, sel: len(m.points) - 1, cur: m.cur}
}

// rewindKey drives the open picker.
func (u *ui) rewindKey(k Key) {
	p := u.rw
	switch p.stage {
	case rewindList:
		switch {
		case k.Kind == KeyUp:
			p.sel = max(0, p.sel-1)
		case k.Kind == KeyDown:
			p.sel = min(len(p.points)-1, p.sel+1)
		case k.Kind == KeyEnter:
			p.stage, p.opt = rewindScope, 0
			if !p.points[p.sel].Code {
				p.opt = 1 // only the conversation can go back there
			}
		case k.Kind == KeyEsc || k.Kind == KeyCtrlC:
			u.rw = nil
		}
	case rewindScope:
		choose := -1
		switch {
		case k.Kind == KeyUp:
			p.opt = max(0, p.opt-1)
		case k.Kind == KeyDown:
			p.opt = min(len(rewindOptions)-1, p.opt+1)
		case k.Kind == KeyRune && k.Rune >= '1' && int(k.Rune-'0') <= len(rewindOptions):
			choose = int(k.Rune - '1')
		case k.Kind == KeyEnter:
			choose = p.opt
		case k.Kind == KeyEsc:
			p.stage = rewindList
		case k.Kind == KeyCtrlC:
			u.rw = nil
		}
		if choose < 0 {
			return
		}
		o := rewindOptions[choose]
		if !o.code && !o.chat {
			u.rw = nil
			return
		}
		if o.code && !p.points[p.sel].Code {
			u.setHint("that turn has no checkpoint: only the conversation can go back there", 3*time.Second)
			return
		}
		p.req = checkpoint.Request{To: p.points[p.sel].Target, Code: o.code, Chat: o.chat}
		u.runRewind()
	case rewindConflict:
		switch {
		case k.Kind == KeyRune && (k.Rune == 'o' || k.Rune == 'O'):
			p.req.Force = true
			u.runRewind()
		case k.Kind == KeyRune && (k.Rune == 's' || k.Rune == 'S'):
			p.req.SkipConflicts = true
			u.runRewind()
		case k.Kind == KeyEsc || k.Kind == KeyCtrlC || (k.Kind == KeyRune && (k.Rune == 'n' || k.Rune == 'N')):
			u.rw = nil
			u.tr.Note(u.st.Dim("rewind cancelled: nothing was changed"))
		}
	case rewindRunning:
		// Keys wait until the rewind reports.
	}
}

func (u *ui) runRewind() {
	p := u.rw
	p.stage = rewindRunning
	req, c, cps := p.req, p.cur, u.app.Checkpoints
	go func() {
		rep, err := cps.Rewind(u.ctx, c.sess, req)
		u.q.push(rewindDone{cur: c, req: req, rep: rep, err: err})
	}()
}

func (u *ui) rewound(m rewindDone) {
	if u.rw == nil || m.cur != u.cur.Load() {
		return
	}
	if errors.Is(m.err, checkpoint.ErrConflicts) && !m.req.Force && !m.req.SkipConflicts {
		u.tr.Note(u.reportText(m.rep))
		u.rw.stage, u.rw.conflicts = rewindConflict, m.rep.Conflicts
		return
	}
	u.rw = nil
	text := u.reportText(m.rep)
	switch {
	case errors.Is(m.err, checkpoint.ErrBusy):
		u.tr.Note(u.st.Warn("a turn is running: interrupt it first (esc or ctrl-c), then rewind"))
		return
	case m.err != nil:
		u.tr.Note(text + "\n" + u.st.Err("rewind failed: "+sanitize(m.err.Error())))
		return
	}
	if m.req.Chat && m.rep.Done && m.rep.Shadowed > 0 {
		text += "\n" + u.st.Dim("the model no longer sees the rewound turns (they stay in the log and above)")
		// As in Claude Code: the rewound prompt comes back to edit.
		if u.ed.Text() == "" && m.rep.Prompt != "" {
			u.ed.SetText(m.rep.Prompt)
		}
	}
	u.tr.Note(text)
}

// reportText is the rewind's report for the transcript.
func (u *ui) reportText(rep checkpoint.Report) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(sanitize(rep.TextAsking()), "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "    +") && !strings.HasPrefix(l, "    +++"):
			l = u.st.Add(l)
		case strings.HasPrefix(l, "    -") && !strings.HasPrefix(l, "    ---"):
			l = u.st.Del(l)
		case strings.HasPrefix(l, "  conflict:"):
			l = u.st.Warn(l)
		}
		b.WriteString(l + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// rewindRows draws the open picker in the live region.
func (u *ui) rewindRows(w int) []string {
	p := u.rw
	k := u.st.Key
	var rows []string
	switch p.stage {
	case rewindList, rewindRunning:
		rows = append(rows, u.st.Bold("Rewind")+u.st.Dim(" — back to before which turn? (↑/↓, enter; esc closes)"))
		// A window of at most 10 turns around the selection.
		lo := max(0, min(p.sel-5, len(p.points)-10))
		hi := min(len(p.points), lo+10)
		for i := lo; i < hi; i++ {
			pt := p.points[i]
			mark := "  "
			if i == p.sel {
				mark = u.st.Accent("❯ ")
			}
			prompt := firstLine(sanitize(pt.Prompt))
			if prompt == "" {
				prompt = u.st.Dim("(no prompt)")
			}
			line := fmt.Sprintf("%s%s %s  %s", mark, u.st.Dim(fmt.Sprintf("%2d.", pt.Target.Turn)), prompt, u.st.Dim("· "+pt.Summary()))
			rows = append(rows, ansi.Truncate(line, w, "…"))
		}
		if p.stage == rewindRunning {
			rows = append(rows, u.st.Dim("  rewinding…"))
		}
	case rewindScope:
		pt := p.points[p.sel]
		rows = append(rows, ansi.Truncate(u.st.Bold(fmt.Sprintf("Rewind to before turn %d", pt.Target.Turn))+u.st.Dim(" — "+firstLine(sanitize(pt.Prompt))), w, "…"))
		rows = append(rows, ansi.Truncate(u.st.Dim("  files: "+pt.Summary()), w, "…"))
		for i, o := range rewindOptions {
			mark := "  "
			if i == p.opt {
				mark = u.st.Accent("❯ ")
			}
			label := o.label
			if o.code && !pt.Code {
				label = u.st.Dim(label + " (no checkpoint)")
			}
			rows = append(rows, fmt.Sprintf("%s%s %s", mark, k(fmt.Sprintf("%d.", i+1)), label))
		}
		rows = append(rows, u.st.Dim("  (↑/↓ and enter, or a number; esc goes back)"))
	case rewindConflict:
		rows = append(rows, u.st.Warn(fmt.Sprintf("⚠ %s changed by someone else since the agent's checkpoint (shown above)", fmt.Sprintf("%d %s", len(p.conflicts), plural(len(p.conflicts), "file", "files")))))
		rows = append(rows, "  "+k("[o]")+" overwrite them   "+k("[s]")+" rewind the others, leave these   "+k("[n]")+" cancel   "+u.st.Dim("(esc cancels)"))
	}
	return rows
}
