package term

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/dshq/dsh/session"
)

// The transcript view (ctrl-o) is the whole session on the alternate
// screen: every prompt, answer and tool card since the session began, cards
// with their full command output and diffs when expanded, paged and
// searched. The inline UI commits cards to the scrollback once, cut to a
// few lines; this is where the rest is read. It is built by replaying the
// session's log into a [Transcript] that keeps its entries, and follows
// the session while it is open (new events are applied to it too).

// viewEntry is one committed item of the transcript: text rendered at the
// width it was built for, or a card rendered (collapsed or expanded) when
// drawn.
type viewEntry struct {
	text string
	card *Card
}

// transcriptView is the open view.
type transcriptView struct {
	tr    *Transcript
	from  int64 // the first seq not in the replayed log
	width int   // the width entries were built for

	top   int // first body row shown
	focus int // index of the focused card entry; -1 none
	// follow keeps the view at the bottom as the session grows.
	follow bool

	searching bool
	query     *Editor
	pattern   string
	hit       int // row of the current match; -1 none
	status    string
}

// openView enters the transcript view (ctrl-o).
func (u *ui) openView() {
	c := u.cur.Load()
	if c == nil {
		return
	}
	v := &transcriptView{focus: -1, hit: -1, follow: true}
	if err := u.buildView(v, c); err != nil {
		u.tr.Note(u.st.Err("transcript: " + sanitize(err.Error())))
		return
	}
	// The last card has the focus: the one the user most likely wants.
	v.focus = v.lastCard()
	u.view = v
	_, _ = io.WriteString(u.out, "\x1b[?1049h\x1b[H\x1b[2J")
	u.viewBottom()
}

// buildView replays the session into v at the screen's width.
func (u *ui) buildView(v *transcriptView, c *current) error {
	events, err := c.sess.Log(context.Background())
	if err != nil {
		return err
	}
	w := u.width()
	tr := u.newTranscript()
	tr.ShowThinking = true
	tr.width = func() int { return w - 2 }
	tr.keep = true
	for _, e := range events {
		if e.Type == session.TypeAssistantChunk {
			continue
		}
		tr.Apply(e)
	}
	// Output of running calls: the live transcript's tails.
	for _, lc := range u.tr.cards {
		if vc := tr.card(lc.ID); vc != nil {
			vc.Tail = lc.Tail
		}
	}
	tr.Take()
	v.tr, v.from, v.width = tr, int64(len(events)), w
	return nil
}

// closeView leaves the transcript view: the inline UI is as it was.
func (u *ui) closeView() {
	u.view = nil
	_, _ = io.WriteString(u.out, "\x1b[?1049l")
}

// viewEvent follows the session while the view is open.
func (u *ui) viewEvent(e session.Event) {
	v := u.view
	if v == nil || e.Seq < v.from || e.Type == session.TypeAssistantChunk {
		return
	}
	v.tr.Apply(e)
	v.tr.Take()
	if v.follow {
		u.viewBottom()
	}
}

// entries are the view's items: committed ones, then the calls still
// running.
func (v *transcriptView) entries() []viewEntry {
	es := v.tr.kept
	if len(v.tr.cards) == 0 {
		return es
	}
	out := make([]viewEntry, 0, len(es)+len(v.tr.cards))
	out = append(out, es...)
	for _, c := range v.tr.cards {
		out = append(out, viewEntry{card: c})
	}
	return out
}

func (v *transcriptView) lastCard() int {
	es := v.entries()
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].card != nil {
			return i
		}
	}
	return -1
}

// viewRows lays the entries out: the rows, and the first row of each
// entry.
func (u *ui) viewRows(v *transcriptView) (rows []string, starts []int) {
	w := v.width
	now := time.Now().UnixMilli()
	es := v.entries()
	starts = make([]int, len(es))
	for i, e := range es {
		if i > 0 {
			rows = append(rows, "")
		}
		starts[i] = len(rows)
		var ls []string
		if e.card != nil {
			ls = RenderCard(e.card, w-2, now, spinner[u.frame%len(spinner)], u.st)
		} else {
			ls = strings.Split(e.text, "\n")
		}
		lead := "  "
		if i == v.focus {
			lead = u.st.Accent("▌ ")
		}
		for _, l := range ls {
			rows = append(rows, lead+l)
		}
	}
	return rows, starts
}

func (u *ui) viewBody() int { return max(1, u.height()-2) }

func (u *ui) viewBottom() {
	v := u.view
	rows, _ := u.viewRows(v)
	v.top = max(0, len(rows)-u.viewBody())
	v.follow = true
}

// scrollTo moves the view so row r shows.
func (u *ui) scrollTo(r int) {
	v := u.view
	body := u.viewBody()
	if r < v.top || r >= v.top+body {
		v.top = max(0, r-body/3)
	}
}

// viewFrame draws the whole view (the alternate screen is the view's).
func (u *ui) viewFrame() string {
	v := u.view
	if w := u.width(); w != v.width {
		// The width changed: lay the text out again for it.
		if c := u.cur.Load(); c != nil {
			focus, top := v.focus, v.top
			if u.buildView(v, c) == nil {
				v.focus, v.top = focus, top
			}
		}
	}
	rows, _ := u.viewRows(v)
	body := u.viewBody()
	v.top = max(0, min(v.top, len(rows)-body))
	w := v.width
	var b strings.Builder
	b.WriteString("\x1b[?2026h\x1b[?25l\x1b[H")
	title := u.st.Accent("✻ Transcript") + u.st.Dim(fmt.Sprintf("  rows %d–%d of %d", v.top+1, min(len(rows), v.top+body), len(rows)))
	b.WriteString(ansi.Truncate(title, w, "…") + "\x1b[K")
	needle := strings.ToLower(v.pattern)
	for i := 0; i < body; i++ {
		b.WriteString("\r\n")
		r := v.top + i
		if r < len(rows) {
			line := rows[r]
			if needle != "" {
				line = highlight(line, needle, u.st)
			}
			b.WriteString(ansi.Truncate(line, w, "…"))
		}
		b.WriteString("\x1b[K")
	}
	b.WriteString("\r\n")
	var foot string
	switch {
	case v.searching:
		in, _, c := v.query.Layout("/", "", w)
		foot = in[0]
		b.WriteString(foot + "\x1b[K")
		fmt.Fprintf(&b, "\r\x1b[%dC\x1b[?25h", c)
		b.WriteString("\x1b[?2026l")
		return b.String()
	case v.status != "":
		foot = u.st.Warn(v.status)
	default:
		foot = u.st.Dim("↑↓ pgup/pgdn scroll · tab/shift-tab card · enter expand · e all · / search, n/N · esc, q or ctrl-o back")
	}
	b.WriteString(ansi.Truncate(u.modePiece()+u.st.Dim(" · ")+foot, w, "…") + "\x1b[K")
	b.WriteString("\x1b[?2026l")
	return b.String()
}

// highlight marks the first case-insensitive occurrence of needle in a
// row (the row is shown plain then, so the mark is the only style).
func highlight(row, needle string, st Styles) string {
	plain := ansi.Strip(row)
	i := strings.Index(strings.ToLower(plain), needle)
	if i < 0 {
		return row
	}
	mark := func(s string) string { return "\x1b[7m" + s + "\x1b[27m" }
	if st.Plain {
		mark = func(s string) string { return "[" + s + "]" }
	}
	return plain[:i] + mark(plain[i:i+len(needle)]) + plain[i+len(needle):]
}

// viewKey handles a key in the transcript view.
func (u *ui) viewKey(k Key) {
	v := u.view
	v.status = ""
	if v.searching {
		switch v.query.Handle(k) {
		case ActSubmit:
			v.searching = false
			v.pattern = strings.TrimSpace(v.query.Text())
			v.hit = v.top - 1
			u.findNext(1)
		case ActEsc, ActInterrupt:
			v.searching = false
		}
		return
	}
	rows, starts := u.viewRows(v)
	body := u.viewBody()
	scroll := func(n int) {
		v.top = max(0, min(v.top+n, len(rows)-body))
		v.follow = v.top >= len(rows)-body
	}
	switch {
	case k.Kind == KeyEsc || k.Kind == KeyCtrlO || k.Kind == KeyCtrlC || (k.Kind == KeyRune && k.Rune == 'q'):
		u.closeView()
	case k.Kind == KeyUp || (k.Kind == KeyRune && k.Rune == 'k'):
		scroll(-1)
	case k.Kind == KeyDown || (k.Kind == KeyRune && k.Rune == 'j'):
		scroll(1)
	case k.Kind == KeyPageUp || (k.Kind == KeyRune && k.Rune == 'b'):
		scroll(-body)
	case k.Kind == KeyPageDown || (k.Kind == KeyRune && k.Rune == ' '):
		scroll(body)
	case k.Kind == KeyHome || (k.Kind == KeyRune && k.Rune == 'g'):
		scroll(-len(rows))
	case k.Kind == KeyEnd || (k.Kind == KeyRune && k.Rune == 'G'):
		scroll(len(rows))
	case k.Kind == KeyTab || k.Kind == KeyBackTab:
		step := 1
		if k.Kind == KeyBackTab {
			step = -1
		}
		es := v.entries()
		for i := v.focus + step; i >= 0 && i < len(es); i += step {
			if es[i].card != nil {
				v.focus = i
				v.follow = false
				u.scrollTo(starts[i])
				return
			}
		}
		v.status = "no more tool cards that way"
	case k.Kind == KeyEnter:
		es := v.entries()
		if v.focus < 0 || v.focus >= len(es) {
			v.status = "no tool card to expand (tab picks one)"
			return
		}
		c := es[v.focus].card
		c.Expanded = !c.Expanded
		v.follow = false
		u.scrollTo(starts[v.focus])
	case k.Kind == KeyRune && k.Rune == 'e':
		es := v.entries()
		expand := false
		for _, e := range es {
			if e.card != nil && !e.card.Expanded {
				expand = true
			}
		}
		for _, e := range es {
			if e.card != nil {
				e.card.Expanded = expand
			}
		}
	case k.Kind == KeyRune && k.Rune == '/':
		v.searching, v.query = true, NewEditor(nil)
	case k.Kind == KeyRune && k.Rune == 'n':
		u.findNext(1)
	case k.Kind == KeyRune && k.Rune == 'N':
		u.findNext(-1)
	}
}

// findNext moves to the next (dir 1) or previous (-1) row holding the
// pattern, wrapping around.
func (u *ui) findNext(dir int) {
	v := u.view
	if v.pattern == "" {
		v.status = "type / and a word to search"
		return
	}
	rows, _ := u.viewRows(v)
	needle := strings.ToLower(v.pattern)
	var hits []int
	for i, r := range rows {
		if strings.Contains(strings.ToLower(ansi.Strip(r)), needle) {
			hits = append(hits, i)
		}
	}
	if len(hits) == 0 {
		v.status = fmt.Sprintf("no match for %q", v.pattern)
		v.hit = -1
		return
	}
	n := -1
	for i, h := range hits {
		if (dir > 0 && h > v.hit) || (dir < 0 && h < v.hit) {
			if dir > 0 {
				n = i
				break
			}
			n = i
		}
	}
	if n < 0 { // wrap
		n = 0
		if dir < 0 {
			n = len(hits) - 1
		}
	}
	v.hit = hits[n]
	v.follow = false
	body := u.viewBody()
	if v.hit < v.top || v.hit >= v.top+body {
		v.top = max(0, v.hit-body/3)
	}
	v.status = fmt.Sprintf("match %d of %d for %q (n next, N previous)", n+1, len(hits), v.pattern)
}
