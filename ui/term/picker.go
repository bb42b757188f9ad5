package term

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

// The session picker: /resume without an argument and dsh -r without an
// id open it. It lists the directory's sessions newest first with their
// title (the first prompt), how long ago they were active, their turns and
// size; typing filters the list, ↑/↓ choose, enter resumes, esc closes.
// Subagent children are not listed: they belong to their parent, whose
// row counts them (a child resumed on its own would be a conversation the
// user never had).

// sessionPicker is the open picker (only the UI goroutine touches it).
type sessionPicker struct {
	all    []SessionRow // every listed session, newest first
	shown  []SessionRow // those the filter keeps
	filter []rune
	sel    int
	// start: opened by dsh -r; closing it leaves the new session that was
	// started meanwhile.
	start bool
}

// SessionRow is one session of a picker or of dsh sessions: its listing
// entry and how many subagent sessions descend from it.
type SessionRow struct {
	store.Info
	Children int
}

// SessionRows turns a listing into rows newest first. Subagent children
// (sessions with a parent) are folded into their root's count unless all
// is set; a child whose parent is not in the listing is folded nowhere
// and still hidden.
func SessionRows(infos []store.Info, all bool) []SessionRow {
	parent := make(map[session.ID]session.ID, len(infos))
	for _, in := range infos {
		if in.Header.ParentSession != "" {
			parent[in.Header.ID] = in.Header.ParentSession
		}
	}
	root := func(id session.ID) session.ID {
		for range len(parent) + 1 { // a cycle in bad data must end
			p, ok := parent[id]
			if !ok {
				return id
			}
			id = p
		}
		return id
	}
	kids := map[session.ID]int{}
	for id := range parent {
		kids[root(id)]++
	}
	rows := make([]SessionRow, 0, len(infos))
	for _, in := range infos {
		if in.Header.ParentSession != "" && !all {
			continue
		}
		rows = append(rows, SessionRow{Info: in, Children: kids[in.Header.ID]})
	}
	slices.SortStableFunc(rows, func(a, b SessionRow) int {
		switch {
		case a.LastActivity > b.LastActivity:
			return -1
		case a.LastActivity < b.LastActivity:
			return 1
		}
		return 0
	})
	return rows
}

// Describe is a row's one-line summary after its title: "3 turns · 41
// events · 2 subagents".
func (r SessionRow) Describe() string {
	parts := []string{fmt.Sprintf("%d %s", r.Turns, plural(r.Turns, "turn", "turns")), fmt.Sprintf("%d %s", r.Events, plural(int(r.Events), "event", "events"))}
	if r.Children > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", r.Children, plural(r.Children, "subagent", "subagents")))
	}
	if r.Header.ParentSession != "" {
		parts = append(parts, "subagent of "+string(r.Header.ParentSession))
	}
	return strings.Join(parts, " · ")
}

// matches reports whether every word of the filter occurs in the row's
// title or id (case-insensitively).
func (r SessionRow) matches(words []string) bool {
	hay := strings.ToLower(r.Title + " " + string(r.Header.ID))
	for _, w := range words {
		if !strings.Contains(hay, w) {
			return false
		}
	}
	return true
}

func (p *sessionPicker) refilter() {
	words := strings.Fields(strings.ToLower(string(p.filter)))
	p.shown = p.shown[:0]
	for _, r := range p.all {
		if r.matches(words) {
			p.shown = append(p.shown, r)
		}
	}
	p.sel = min(p.sel, max(0, len(p.shown)-1))
}

// openPicker lists the directory's other sessions and opens the picker
// (or says there are none).
func (u *ui) openPicker(start bool) {
	infos, err := u.app.Coordinator.List(u.ctx, store.Query{Cwd: u.cwd()})
	if err != nil {
		u.tr.Note(u.st.Err("listing sessions: " + sanitize(err.Error())))
		return
	}
	cur := u.cur.Load()
	rows := SessionRows(infos, false)
	rows = slices.DeleteFunc(rows, func(r SessionRow) bool { return cur != nil && r.Header.ID == cur.sess.ID() })
	u.resumeList = make([]store.Info, len(rows))
	for i, r := range rows {
		u.resumeList[i] = r.Info
	}
	if len(rows) == 0 {
		u.tr.Note(u.st.Dim("no other sessions in this directory"))
		return
	}
	u.sp = &sessionPicker{all: rows, shown: slices.Clone(rows), start: start}
}

// pickerKey handles a key while the picker is open.
func (u *ui) pickerKey(k Key) {
	p := u.sp
	switch k.Kind {
	case KeyUp:
		p.sel = max(0, p.sel-1)
	case KeyDown:
		p.sel = min(max(0, len(p.shown)-1), p.sel+1)
	case KeyRune:
		p.filter = append(p.filter, k.Rune)
		p.refilter()
	case KeyPaste:
		p.filter = append(p.filter, []rune(strings.ReplaceAll(k.Text, "\n", " "))...)
		p.refilter()
	case KeyBackspace:
		if len(p.filter) > 0 {
			p.filter = p.filter[:len(p.filter)-1]
			p.refilter()
		}
	case KeyKillStart, KeyKillWord:
		p.filter = p.filter[:0]
		p.refilter()
	case KeyEnter:
		if len(p.shown) == 0 {
			return
		}
		id := p.shown[p.sel].Header.ID
		u.sp = nil
		u.resumeCmd(string(id))
	case KeyEsc, KeyCtrlC:
		u.sp = nil
		if p.start {
			u.setHint("a new session: type your first message", 3*time.Second)
		}
	}
}

// pickerRows draws the open picker: the filter, then a window of rows
// around the selection.
func (u *ui) pickerRows(w int) []string {
	p := u.sp
	rows := []string{u.st.Bold("Resume a session") + u.st.Dim(" — type to filter, ↑/↓ and enter to resume, esc "+map[bool]string{true: "starts a new one", false: "closes"}[p.start])}
	rows = append(rows, ansi.Truncate(u.st.Accent("filter › ")+sanitize(string(p.filter)), w, "…"))
	if len(p.shown) == 0 {
		return append(rows, u.st.Dim(fmt.Sprintf("  no session matches (%d in this directory)", len(p.all))))
	}
	room := max(3, min(10, u.height()-10))
	lo := max(0, min(p.sel-room/2, len(p.shown)-room))
	hi := min(len(p.shown), lo+room)
	now := time.Now()
	for i := lo; i < hi; i++ {
		r := p.shown[i]
		mark := "  "
		if i == p.sel {
			mark = u.st.Accent("❯ ")
		}
		title := firstLine(sanitize(r.Title))
		if title == "" {
			title = u.st.Dim("(no prompt)")
		}
		line := mark + title + u.st.Dim("  "+agoFrom(now, time.UnixMilli(r.LastActivity))+" · "+r.Describe())
		rows = append(rows, ansi.Truncate(line, w, "…"))
	}
	if hidden := len(p.shown) - (hi - lo); hidden > 0 {
		rows = append(rows, u.st.Dim(fmt.Sprintf("  … %d more", hidden)))
	}
	return rows
}
