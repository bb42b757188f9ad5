package term

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// The transcript view (ctrl-o) is the whole session on the alternate
// screen: every prompt, answer and tool card since the session began, cards
// with their full command output and diffs when expanded, paged and
// searched. The inline UI commits cards to the scrollback once, cut to a
// few lines; this is where the rest is read.
//
// A long session is far larger than a screen, so the view holds a few
// pages of it, never all of it: each page replays a stretch of the log
// (read back from the store where memory released the payloads) into a
// [Transcript] that keeps its entries. Scrolling or searching past the
// pages held replays the next stretch and drops the page farthest away, so
// what the view holds does not grow with the session. The page at the
// log's end follows the session while the view is open (new events are
// applied to it).

// viewEntry is one committed item of the transcript: text rendered at the
// width it was built for, or a card rendered (collapsed or expanded) when
// drawn.
type viewEntry struct {
	text string
	card *Card
}

// Bounds of the view: a page is a stretch of about viewPageEvents events
// (streamed chunks not counted), cut where a step or turn starts so that no
// tool call is parted from its result; at most viewPages pages are held.
// Variables so that tests can make pages small.
var (
	viewPageEvents = 400
	viewPages      = 3
)

// viewPage is the replay of the log's events with seqs in [from, to).
type viewPage struct {
	from, to int64
	tr       *Transcript
}

// entries are the page's committed items, then its calls still running.
func (p *viewPage) entries() []viewEntry {
	if len(p.tr.cards) == 0 {
		return p.tr.kept
	}
	out := make([]viewEntry, 0, len(p.tr.kept)+len(p.tr.cards))
	out = append(out, p.tr.kept...)
	for _, c := range p.tr.cards {
		out = append(out, viewEntry{card: c})
	}
	return out
}

// transcriptView is the open view.
type transcriptView struct {
	pages []*viewPage // consecutive stretches of the log, oldest first
	// live: the last page reaches the log's end and follows the session.
	live  bool
	width int // the width entries were built for

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

// buildView replays the last page of the session into v at the screen's
// width.
func (u *ui) buildView(v *transcriptView, c *current) error {
	n := int64(c.sess.Len())
	p, err := u.replayPage(c, pageStart(c.sess, n), n)
	if err != nil {
		return err
	}
	v.pages, v.live, v.width = []*viewPage{p}, true, u.width()
	return nil
}

// replayPage replays the events with seqs in [from, to) at the screen's
// width.
func (u *ui) replayPage(c *current, from, to int64) (*viewPage, error) {
	w := u.width()
	tr := u.newTranscript()
	tr.ShowThinking = true
	tr.width = func() int { return w - 2 }
	tr.keep = true
	err := c.sess.Range(context.Background(), from, to, func(e session.Event) error {
		if e.Type != session.TypeAssistantChunk {
			tr.Apply(e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Output of running calls: the live transcript's tails.
	for _, lc := range u.tr.cards {
		if vc := tr.card(lc.ID); vc != nil {
			vc.Tail = lc.Tail
		}
	}
	tr.Take()
	return &viewPage{from: from, to: to, tr: tr}, nil
}

// pageStart is where the page that ends at seq before starts: about
// viewPageEvents events earlier, where a step or a turn starts (0 for a
// shorter log). It reads only the events' types, which memory holds of
// every event after [session.Session.Base]; before that (a session resumed
// from a snapshot) pages are fixed strides of the stored log.
func pageStart(sess *session.Session, before int64) int64 {
	base := sess.Base()
	if before <= base {
		return max(0, before-int64(8*viewPageEvents))
	}
	counted, cut := 0, int64(-1)
	sess.Backward(before, func(e session.Event) bool {
		if e.Seq < base {
			return false // a kept event: memory holds no types before base
		}
		if e.Type != session.TypeAssistantChunk {
			counted++
		}
		if counted >= viewPageEvents && (e.Type == session.TypeStepStart || e.Type == session.TypeTurnStart) {
			cut = e.Seq
			return false
		}
		return true
	})
	if cut < 0 {
		return base
	}
	return cut
}

// pageEnd is where the page that starts at seq from ends: about
// viewPageEvents events later, where a step or a turn starts (the log's
// length when less is left).
func pageEnd(sess *session.Session, from int64) int64 {
	if base := sess.Base(); from < base {
		return min(base, from+int64(8*viewPageEvents))
	}
	counted := 0
	for e := range sess.Scan(from) {
		if e.Seq < from {
			continue // a kept event from before base
		}
		if counted >= viewPageEvents && (e.Type == session.TypeStepStart || e.Type == session.TypeTurnStart) {
			return e.Seq
		}
		if e.Type != session.TypeAssistantChunk {
			counted++
		}
	}
	return int64(sess.Len())
}

// earlier adds the page before the first one held, dropping the last one
// when more than viewPages would be held; it reports whether there was a
// page to add. The rows shown stay on screen.
func (u *ui) earlier() bool {
	v, c := u.view, u.cur.Load()
	if c == nil || v.pages[0].from == 0 {
		return false
	}
	first := v.pages[0].from
	p, err := u.replayPage(c, pageStart(c.sess, first), first)
	if err != nil {
		v.status = "transcript: " + sanitize(err.Error())
		return false
	}
	added := u.pageRows(p)
	v.pages = append([]*viewPage{p}, v.pages...)
	v.top += added
	if v.hit >= 0 {
		v.hit += added
	}
	if v.focus >= 0 {
		v.focus += len(p.entries())
	}
	if len(v.pages) > viewPages {
		last := v.pages[len(v.pages)-1]
		if v.focus >= len(v.entries())-len(last.entries()) {
			v.focus = -1
		}
		v.pages, v.live, v.follow = v.pages[:len(v.pages)-1], false, false
	}
	return true
}

// later adds the page after the last one held, dropping the first one when
// more than viewPages would be held; it reports whether there was a page
// to add.
func (u *ui) later() bool {
	v, c := u.view, u.cur.Load()
	if c == nil || v.live {
		return false
	}
	from := v.pages[len(v.pages)-1].to
	to := pageEnd(c.sess, from)
	p, err := u.replayPage(c, from, to)
	if err != nil {
		v.status = "transcript: " + sanitize(err.Error())
		return false
	}
	v.pages = append(v.pages, p)
	v.live = to >= int64(c.sess.Len())
	if len(v.pages) > viewPages {
		first := v.pages[0]
		gone := u.pageRows(first)
		v.top = max(0, v.top-gone)
		if v.hit >= 0 {
			v.hit = max(-1, v.hit-gone)
		}
		if v.focus >= 0 {
			v.focus = max(-1, v.focus-len(first.entries()))
		}
		v.pages = v.pages[1:]
	}
	return true
}

// jump holds the log's first page instead (end false), or its last.
func (u *ui) jump(end bool) {
	v, c := u.view, u.cur.Load()
	if c == nil {
		return
	}
	if end {
		if !v.live {
			if err := u.buildView(v, c); err != nil {
				v.status = "transcript: " + sanitize(err.Error())
				return
			}
			v.focus, v.hit = v.lastCard(), -1
		}
		return
	}
	if v.pages[0].from == 0 {
		return
	}
	p, err := u.replayPage(c, 0, pageEnd(c.sess, 0))
	if err != nil {
		v.status = "transcript: " + sanitize(err.Error())
		return
	}
	v.pages, v.live, v.follow, v.focus, v.hit = []*viewPage{p}, p.to >= int64(c.sess.Len()), false, -1, -1
}

// relayView replays the pages held at the screen's width.
func (u *ui) relayView() {
	v, c := u.view, u.cur.Load()
	if c == nil {
		return
	}
	pages := make([]*viewPage, 0, len(v.pages))
	for i, p := range v.pages {
		to := p.to
		if v.live && i == len(v.pages)-1 {
			to = int64(c.sess.Len())
		}
		np, err := u.replayPage(c, p.from, to)
		if err != nil {
			v.status = "transcript: " + sanitize(err.Error())
			return
		}
		// Expanded cards stay expanded.
		for j, e := range np.entries() {
			if old := p.entries(); j < len(old) && e.card != nil && old[j].card != nil {
				e.card.Expanded = old[j].card.Expanded
			}
		}
		pages = append(pages, np)
	}
	v.pages, v.width = pages, u.width()
}

// closeView leaves the transcript view: the inline UI is as it was. The
// alternate screen is erased first: tmux, leaving an alternate screen
// whose width changed since it was entered, puts some of its top lines
// into the main screen's scrollback (the view's header and first rows
// showed up between the session's lines); erased, there is nothing to put.
func (u *ui) closeView() {
	u.view = nil
	_, _ = io.WriteString(u.out, "\x1b[H\x1b[J\x1b[?1049l")
}

// viewEvent follows the session while the view is open.
func (u *ui) viewEvent(e session.Event) {
	v := u.view
	if v == nil || !v.live || e.Type == session.TypeAssistantChunk {
		return
	}
	last := v.pages[len(v.pages)-1]
	if e.Seq < last.to {
		return // replayed already
	}
	last.tr.Apply(e)
	last.tr.Take()
	last.to = e.Seq + 1
	if v.follow {
		u.viewBottom()
	}
}

// card is a running call's card on the page that follows the session.
func (v *transcriptView) card(id llm.CallID) *Card {
	if !v.live {
		return nil
	}
	return v.pages[len(v.pages)-1].tr.card(id)
}

// entries are the view's items, page by page.
func (v *transcriptView) entries() []viewEntry {
	if len(v.pages) == 1 {
		return v.pages[0].entries()
	}
	var out []viewEntry
	for _, p := range v.pages {
		out = append(out, p.entries()...)
	}
	return out
}

// whole reports whether the view holds the whole log.
func (v *transcriptView) whole() bool { return v.live && v.pages[0].from == 0 }

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
	return u.layout(v.entries(), v.focus, v.width)
}

// pageRows is how many rows a page adds to the view: its entries and the
// blank row that parts it from the next page.
func (u *ui) pageRows(p *viewPage) int {
	es := p.entries()
	if len(es) == 0 {
		return 0
	}
	rows, _ := u.layout(es, -1, u.view.width)
	return len(rows) + 1
}

// layout lays entries out at width w, marking entry focus.
func (u *ui) layout(es []viewEntry, focus, w int) (rows []string, starts []int) {
	now := time.Now().UnixMilli()
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
		if i == focus {
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
	v.follow = v.live
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
		u.relayView() // the width changed: lay the text out again for it
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
	body := u.viewBody()
	// scroll moves by n rows, replaying the pages it reaches.
	scroll := func(n int) {
		rows, _ := u.viewRows(v)
		for n < 0 && v.top+n < 0 && u.earlier() {
		}
		for n > 0 && v.top+n > len(rows)-body && u.later() {
			rows, _ = u.viewRows(v)
		}
		rows, _ = u.viewRows(v)
		v.top = max(0, min(v.top+n, len(rows)-body))
		v.follow = v.live && v.top >= len(rows)-body
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
		u.jump(false)
		v.top, v.follow = 0, false
	case k.Kind == KeyEnd || (k.Kind == KeyRune && k.Rune == 'G'):
		u.jump(true)
		u.viewBottom()
	case k.Kind == KeyTab || k.Kind == KeyBackTab:
		step := 1
		if k.Kind == KeyBackTab {
			step = -1
		}
		focus := v.focus
		for {
			es := v.entries()
			for i := v.focus + step; i >= 0 && i < len(es); i += step {
				if es[i].card != nil {
					_, starts := u.viewRows(v)
					v.focus = i
					v.follow = false
					u.scrollTo(starts[i])
					return
				}
			}
			if v.focus < 0 && step < 0 {
				v.focus = len(es) // from the bottom up
			}
			if (step < 0 && !u.earlier()) || (step > 0 && !u.later()) {
				break
			}
		}
		if v.focus >= len(v.entries()) {
			v.focus = focus
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
		_, starts := u.viewRows(v)
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
// pattern, replaying pages past those held and wrapping around at the
// log's ends.
func (u *ui) findNext(dir int) {
	v := u.view
	if v.pattern == "" {
		v.status = "type / and a word to search"
		return
	}
	needle := strings.ToLower(v.pattern)
	wrapped := false
	for {
		rows, _ := u.viewRows(v)
		var hits []int
		for i, r := range rows {
			if strings.Contains(strings.ToLower(ansi.Strip(r)), needle) {
				hits = append(hits, i)
			}
		}
		n := -1
		for i, h := range hits {
			if dir > 0 && h > v.hit {
				n = i
				break
			}
			if dir < 0 && h < v.hit {
				n = i
			}
		}
		if n < 0 {
			if (dir < 0 && u.earlier()) || (dir > 0 && u.later()) {
				continue
			}
			if v.whole() || wrapped {
				if len(hits) == 0 {
					v.status = fmt.Sprintf("no match for %q", v.pattern)
					v.hit = -1
					return
				}
				n = 0 // wrap
				if dir < 0 {
					n = len(hits) - 1
				}
			} else {
				// Wrap around: from the other end of the log.
				wrapped = true
				u.jump(dir < 0)
				v.hit = -1
				if dir < 0 {
					v.hit = 1 << 30
				}
				continue
			}
		}
		v.hit = hits[n]
		v.follow = false
		body := u.viewBody()
		if v.hit < v.top || v.hit >= v.top+body {
			v.top = max(0, v.hit-body/3)
		}
		if v.whole() {
			v.status = fmt.Sprintf("match %d of %d for %q (n next, N previous)", n+1, len(hits), v.pattern)
		} else {
			v.status = fmt.Sprintf("match %d of %d for %q in this part of the session (n next, N previous)", n+1, len(hits), v.pattern)
		}
		return
	}
}
