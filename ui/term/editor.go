package term

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/charmbracelet/x/ansi"
)

// Action is what a key asks of the caller once the editor has applied it.
type Action int

// Actions.
const (
	ActNone      Action = iota
	ActSubmit           // Enter on a line that does not end in a backslash
	ActEOF              // ctrl-d on an empty buffer
	ActInterrupt        // ctrl-c
	ActEsc              // a lone escape
	ActRedraw           // ctrl-l
	ActTab              // tab (completion is the caller's)
	ActBackTab          // shift-tab
	ActSuspend          // ctrl-z
)

// pasteLines is the most lines a paste may have and still be inserted as
// is; a longer one shows as one placeholder (see [Editor.Expanded]).
const pasteLines = 3

// Editor is a single- or multi-line input buffer with readline keys and
// history. It knows nothing about terminals: keys in, buffer and cursor
// out, and [Editor.Layout] to place it on screen.
type Editor struct {
	buf  []rune
	pos  int
	kill []rune

	hist    *History
	histIdx int // == hist.Len(): editing the draft
	draft   []rune

	// pastes are the collapsed pastes; the n-th shows in the buffer as
	// pastePlaceholder(n, …).
	pastes []string
	// images are the images pasted from the clipboard; the n-th shows in
	// the buffer as its name, [Image #n].
	images []clipImage
	search *histSearch // ctrl-r in progress
	vim    vimState
}

// clipImage is an image pasted into the editor.
type clipImage struct {
	name string
	mime string
	data []byte
}

// AddImage inserts a pasted image's placeholder at the cursor.
func (e *Editor) AddImage(mime string, data []byte) {
	im := clipImage{name: fmt.Sprintf("[Image #%d]", len(e.images)+1), mime: mime, data: data}
	e.images = append(e.images, im)
	e.insert([]rune(im.name))
}

// Images are the pasted images whose placeholder is still in the buffer
// (one the user deleted is not sent), in order.
func (e *Editor) Images() []clipImage {
	var out []clipImage
	text := string(e.buf)
	for _, im := range e.images {
		if strings.Contains(text, im.name) {
			out = append(out, im)
		}
	}
	return out
}

// SetImages gives back the images of a message put back in the buffer.
func (e *Editor) SetImages(imgs []clipImage) { e.images = imgs }

// histSearch is a reverse incremental history search: the buffer as it was
// before it began, what is typed, and the entry it found.
type histSearch struct {
	saved   []rune
	query   []rune
	idx     int // the matching entry; -1 none yet
	failing bool
}

// NewEditor returns an empty editor using h for up/down (h may be nil).
func NewEditor(h *History) *Editor {
	e := &Editor{hist: h}
	e.histIdx = e.histLen()
	return e
}

func (e *Editor) histLen() int {
	if e.hist == nil {
		return 0
	}
	return e.hist.Len()
}

// Text returns the buffer.
func (e *Editor) Text() string { return string(e.buf) }

// Cursor returns the cursor position in runes.
func (e *Editor) Cursor() int { return e.pos }

// SetText replaces the buffer and puts the cursor at its end.
func (e *Editor) SetText(s string) {
	e.buf = []rune(s)
	e.pos = len(e.buf)
}

// Reset empties the buffer and leaves history browsing.
func (e *Editor) Reset() {
	e.buf, e.pos, e.draft, e.pastes, e.images, e.search = nil, 0, nil, nil, nil, nil
	e.histIdx = e.histLen()
	e.vim = vimState{on: e.vim.on, lineKill: e.vim.lineKill} // each prompt starts in INSERT
}

// Expanded is the buffer with each collapsed paste's placeholder replaced
// by the pasted text: what is sent. A placeholder the user edited is no
// longer one and stays as typed.
func (e *Editor) Expanded() string {
	s := string(e.buf)
	for i, p := range e.pastes {
		s = strings.Replace(s, pastePlaceholder(i+1, p), p, 1)
	}
	return s
}

// pastePlaceholder is how the n-th collapsed paste shows in the buffer.
func pastePlaceholder(n int, text string) string {
	return fmt.Sprintf("[Pasted text #%d +%d lines]", n, countLines(text))
}

func countLines(s string) int {
	s = strings.TrimSuffix(s, "\n")
	return strings.Count(s, "\n") + 1
}

// Searching reports whether a ctrl-r search is open.
func (e *Editor) Searching() bool { return e.search != nil }

// Handle applies one key.
func (e *Editor) Handle(k Key) Action {
	if e.search != nil {
		act, done := e.searchKey(k)
		if done {
			return act
		}
	}
	if e.vim.on {
		if act, ok := e.vimKey(k); ok {
			return act
		}
	}
	switch k.Kind {
	case KeyRune:
		e.insert([]rune{k.Rune})
	case KeyPaste:
		if countLines(k.Text) > pasteLines {
			e.pastes = append(e.pastes, k.Text)
			e.insert([]rune(pastePlaceholder(len(e.pastes), k.Text)))
			break
		}
		e.insert([]rune(k.Text))
	case KeyEnter:
		if e.pos == len(e.buf) && e.pos > 0 && e.buf[e.pos-1] == '\\' {
			e.buf[e.pos-1] = '\n'
			return ActNone
		}
		return ActSubmit
	case KeyNewline:
		e.insert([]rune{'\n'})
	case KeyBackspace:
		if e.pos > 0 {
			e.buf = append(e.buf[:e.pos-1], e.buf[e.pos:]...)
			e.pos--
		}
	case KeyDelete:
		e.deleteAt()
	case KeyCtrlD:
		if len(e.buf) == 0 {
			return ActEOF
		}
		e.deleteAt()
	case KeyLeft:
		if e.pos > 0 {
			e.pos--
		}
	case KeyRight:
		if e.pos < len(e.buf) {
			e.pos++
		}
	case KeyHome:
		e.pos = e.lineStart(e.pos)
	case KeyEnd:
		e.pos = e.lineEnd(e.pos)
	case KeyWordLeft:
		e.pos = e.wordLeft(e.pos)
	case KeyWordRight:
		for e.pos < len(e.buf) && !isWord(e.buf[e.pos]) {
			e.pos++
		}
		for e.pos < len(e.buf) && isWord(e.buf[e.pos]) {
			e.pos++
		}
	case KeyKillEnd:
		end := e.lineEnd(e.pos)
		if end == e.pos && end < len(e.buf) {
			end++ // at the end of a line: join the next one
		}
		e.cut(e.pos, end)
	case KeyKillStart:
		e.cut(e.lineStart(e.pos), e.pos)
	case KeyKillWord:
		start := e.pos
		for start > 0 && unicode.IsSpace(e.buf[start-1]) {
			start--
		}
		for start > 0 && !unicode.IsSpace(e.buf[start-1]) {
			start--
		}
		e.cut(start, e.pos)
	case KeyYank:
		e.insert(append([]rune(nil), e.kill...))
	case KeyUp:
		if ls := e.lineStart(e.pos); ls > 0 {
			e.moveLine(-1)
		} else {
			e.historyMove(-1)
		}
	case KeyDown:
		if le := e.lineEnd(e.pos); le < len(e.buf) {
			e.moveLine(+1)
		} else {
			e.historyMove(+1)
		}
	case KeyCtrlC:
		return ActInterrupt
	case KeyEsc:
		return ActEsc
	case KeyCtrlL:
		return ActRedraw
	case KeyTab:
		return ActTab
	case KeyBackTab:
		return ActBackTab
	case KeyCtrlZ:
		return ActSuspend
	case KeyCtrlR:
		if e.histLen() > 0 {
			e.search = &histSearch{saved: append([]rune(nil), e.buf...), idx: -1}
		}
	}
	return ActNone
}

// searchKey handles a key while ctrl-r searches: typing narrows, ctrl-r
// finds the next older match, esc or ctrl-g puts the buffer back, enter
// sends the match, and any other key takes the match into the buffer and
// then does what it does there (done is false).
func (e *Editor) searchKey(k Key) (act Action, done bool) {
	s := e.search
	switch k.Kind {
	case KeyRune:
		s.query = append(s.query, k.Rune)
		e.find(max(s.idx, e.histLen()-1))
		return ActNone, true
	case KeyBackspace:
		if len(s.query) > 0 {
			s.query = s.query[:len(s.query)-1]
		}
		s.idx = -1
		e.find(e.histLen() - 1)
		return ActNone, true
	case KeyCtrlR:
		from := e.histLen() - 1
		if s.idx >= 0 {
			from = s.idx - 1
		}
		e.find(from)
		return ActNone, true
	case KeyEsc, KeyCtrlG, KeyCtrlC:
		e.buf = s.saved
		e.pos = len(e.buf)
		e.search = nil
		return ActNone, true
	}
	if s.idx >= 0 {
		e.buf = []rune(e.hist.At(s.idx))
		e.pos = len(e.buf)
	} else {
		e.buf = s.saved
		e.pos = len(e.buf)
	}
	e.search = nil
	if k.Kind == KeyEnter {
		return ActSubmit, true
	}
	return ActNone, false
}

// find looks for the query from entry from back to the oldest, case
// insensitively; without a match the last one found stays.
func (e *Editor) find(from int) {
	s := e.search
	q := strings.ToLower(string(s.query))
	for i := from; i >= 0; i-- {
		if strings.Contains(strings.ToLower(e.hist.At(i)), q) {
			s.idx, s.failing = i, false
			return
		}
	}
	s.failing = true
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

func (e *Editor) insert(rs []rune) {
	if len(rs) == 0 {
		return
	}
	nb := make([]rune, 0, len(e.buf)+len(rs))
	nb = append(nb, e.buf[:e.pos]...)
	nb = append(nb, rs...)
	nb = append(nb, e.buf[e.pos:]...)
	e.buf = nb
	e.pos += len(rs)
}

func (e *Editor) deleteAt() {
	if e.pos < len(e.buf) {
		e.buf = append(e.buf[:e.pos], e.buf[e.pos+1:]...)
	}
}

func (e *Editor) cut(from, to int) {
	if from >= to {
		return
	}
	e.kill = append([]rune(nil), e.buf[from:to]...)
	e.buf = append(e.buf[:from], e.buf[to:]...)
	e.pos = from
}

func (e *Editor) wordLeft(p int) int {
	for p > 0 && !isWord(e.buf[p-1]) {
		p--
	}
	for p > 0 && isWord(e.buf[p-1]) {
		p--
	}
	return p
}

func (e *Editor) lineStart(p int) int {
	for p > 0 && e.buf[p-1] != '\n' {
		p--
	}
	return p
}

func (e *Editor) lineEnd(p int) int {
	for p < len(e.buf) && e.buf[p] != '\n' {
		p++
	}
	return p
}

// moveLine moves the cursor to the previous (-1) or next (+1) logical line,
// keeping the column where the target line is long enough.
func (e *Editor) moveLine(dir int) {
	start := e.lineStart(e.pos)
	col := e.pos - start
	var ts int
	if dir < 0 {
		ts = e.lineStart(start - 1)
	} else {
		ts = e.lineEnd(e.pos) + 1
	}
	te := e.lineEnd(ts)
	e.pos = min(ts+col, te)
}

func (e *Editor) historyMove(dir int) {
	n := e.histLen()
	next := e.histIdx + dir
	if next < 0 || next > n {
		return
	}
	if e.histIdx == n {
		e.draft = append([]rune(nil), e.buf...)
	}
	e.histIdx = next
	if next == n {
		e.buf = append([]rune(nil), e.draft...)
	} else {
		e.buf = []rune(e.hist.At(next))
	}
	e.pos = len(e.buf)
}

// Layout places the buffer on screen rows of at most width columns. The
// first logical line follows prompt, later ones follow cont; wrapped rows
// are indented to the prompt's width. It returns the rows (prompt included)
// and the cursor's row and column.
func (e *Editor) Layout(prompt, cont string, width int) (rows []string, crow, ccol int) {
	if s := e.search; s != nil {
		label := "reverse-i-search"
		if s.failing {
			label = "failing " + label
		}
		var found []rune
		pos := 0
		if s.idx >= 0 {
			found = []rune(e.hist.At(s.idx))
			if i := strings.Index(strings.ToLower(string(found)), strings.ToLower(string(s.query))); i >= 0 {
				pos = len([]rune(string(found)[:i]))
			}
		}
		return layout(found, pos, "("+label+")`"+sanitize(string(s.query))+"': ", cont, width)
	}
	return layout(e.buf, e.pos, prompt, cont, width)
}

func layout(buf []rune, pos int, prompt, cont string, width int) (rows []string, crow, ccol int) {
	pw := ansi.StringWidth(prompt)
	if width < pw+4 {
		width = pw + 4
	}
	indent := strings.Repeat(" ", pw)
	var row strings.Builder
	col := 0
	crow, ccol = -1, -1
	newRow := func(prefix string) {
		row.Reset()
		row.WriteString(prefix)
		col = ansi.StringWidth(prefix)
	}
	flush := func() { rows = append(rows, row.String()) }
	newRow(prompt)
	for i := 0; i <= len(buf); i++ {
		if i == pos {
			if col >= width { // pending wrap: the cursor starts the next row
				flush()
				newRow(indent)
			}
			crow, ccol = len(rows), col
		}
		if i == len(buf) {
			break
		}
		r := buf[i]
		if r == '\n' {
			flush()
			newRow(cont)
			continue
		}
		glyph, w := displayRune(r)
		if col+w > width {
			flush()
			newRow(indent)
		}
		row.WriteString(glyph)
		col += w
	}
	flush()
	return rows, crow, ccol
}

// displayRune is how a buffer rune is drawn: tabs as spaces, control
// characters in caret notation.
func displayRune(r rune) (string, int) {
	switch {
	case r == '\t':
		return "    ", 4
	case r < 0x20:
		return "^" + string(rune(r+'@')), 2
	case r == 0x7f:
		return "^?", 2
	case r >= 0x80 && r <= 0x9f: // C1 controls, as their 7-bit form
		return "^[" + string(r-0x40), 3
	}
	s := string(r)
	return s, ansi.StringWidth(s)
}
