package term

import "unicode"

// The prompt editor's optional vim mode ("editorMode": "vim" in settings,
// or /vim for the session). It starts each prompt in INSERT, where keys
// do what they do without vim mode; Esc switches to NORMAL, where letters
// are commands: motions (h j k l, backspace and space, w b e 0 ^ $ gg G),
// operators (d c y with a motion, dd cc yy, D C), x, p P, u and ctrl-r
// (undo, redo), i a I A o O, and counts (3w, 2dd, d2w); backspace moves
// and deletes nothing, as in vim. Enter sends from either mode. Esc in
// NORMAL is Esc as without vim mode (it interrupts a running turn, and
// twice on an empty prompt opens the rewind picker), so a running turn
// is interrupted by Esc Esc from INSERT. The other control keys (ctrl-c,
// ctrl-d, tab, arrows, ctrl-r in INSERT) keep their meaning in both
// modes.

// vimState is the vim mode's part of an editor.
type vimState struct {
	on     bool
	normal bool
	// pending is the command typed so far in NORMAL (a count, an
	// operator, a g prefix), run once it is complete.
	pending []rune
	// lineKill says the kill register holds whole lines (dd, yy): p puts
	// them on a line of their own.
	lineKill bool
	undo     []edit
	redo     []edit
}

// edit is the buffer and cursor before (or after) a change, for undo.
type edit struct {
	buf []rune
	pos int
}

// SetVim turns the vim mode on or off; either way the editor is in INSERT.
func (e *Editor) SetVim(on bool) {
	e.vim = vimState{on: on}
}

// Vim reports whether the vim mode is on.
func (e *Editor) Vim() bool { return e.vim.on }

// VimMode is "INSERT" or "NORMAL" with the vim mode on, else "".
func (e *Editor) VimMode() string {
	switch {
	case !e.vim.on:
		return ""
	case e.vim.normal:
		return "NORMAL"
	}
	return "INSERT"
}

// vimKey handles k in vim mode where vim gives it a meaning of its own,
// and reports whether it did (false: the key does what it does without
// vim mode).
func (e *Editor) vimKey(k Key) (Action, bool) {
	v := &e.vim
	if !v.normal {
		if k.Kind == KeyEsc {
			v.normal, v.pending = true, nil
			if len(v.undo) == 0 && len(e.buf) > 0 {
				v.undo = append(v.undo, edit{}) // u undoes the first insertion too
			}
			if e.pos > e.lineStart(e.pos) {
				e.pos-- // as vim does: the cursor steps back onto the last character typed
			}
			return ActNone, true
		}
		return ActNone, false
	}
	switch k.Kind {
	case KeyRune, KeyBackspace:
		r := k.Rune
		if k.Kind == KeyBackspace {
			r = '\b' // a motion in NORMAL, as in vim: left, across lines
		}
		v.pending = append(v.pending, r)
		if e.runNormal() {
			v.pending = nil
		}
		e.clampNormal()
		return ActNone, true
	case KeyCtrlR:
		e.undoStep(&v.redo, &v.undo)
		v.pending = nil
		return ActNone, true
	case KeyEsc:
		if len(v.pending) > 0 {
			v.pending = nil // cancels a half-typed command
			return ActNone, true
		}
		return ActEsc, true
	case KeyPaste:
		return ActNone, true // NORMAL takes no text
	case KeyEnter:
		v.pending = nil
		return ActSubmit, true
	}
	v.pending = nil
	return ActNone, false
}

// snapshot records the buffer before a change, for u.
func (e *Editor) snapshot() {
	e.vim.undo = append(e.vim.undo, edit{append([]rune(nil), e.buf...), e.pos})
	e.vim.redo = nil
}

// undoStep moves one state from from to to: u takes from undo and saves
// the present on redo, ctrl-r the reverse.
func (e *Editor) undoStep(from, to *[]edit) {
	if len(*from) == 0 {
		return
	}
	s := (*from)[len(*from)-1]
	*from = (*from)[:len(*from)-1]
	*to = append(*to, edit{append([]rune(nil), e.buf...), e.pos})
	e.buf, e.pos = s.buf, min(s.pos, len(s.buf))
}

// insertMode leaves NORMAL for INSERT after a snapshot, so u undoes the
// whole insertion at once.
func (e *Editor) insertMode(snap bool) {
	if snap {
		e.snapshot()
	}
	e.vim.normal = false
}

// clampNormal keeps the cursor on a character in NORMAL: not past the end
// of a line that has any.
func (e *Editor) clampNormal() {
	if !e.vim.normal {
		return
	}
	if e.pos == e.lineEnd(e.pos) && e.pos > e.lineStart(e.pos) {
		e.pos--
	}
}

// count reads a count at the start of cmd (none: 1) and returns the rest.
func count(cmd []rune) (n int, rest []rune, given bool) {
	i := 0
	for i < len(cmd) && unicode.IsDigit(cmd[i]) && (i > 0 || cmd[i] != '0') {
		n = n*10 + int(cmd[i]-'0')
		i++
	}
	if i == 0 {
		return 1, cmd, false
	}
	return n, cmd[i:], true
}

// runNormal runs the pending command if it is complete and reports
// whether it is done with (run, or not a command).
func (e *Editor) runNormal() bool {
	n, rest, _ := count(e.vim.pending)
	if len(rest) == 0 {
		return false // a count so far
	}
	c := rest[0]
	switch c {
	case 'd', 'c', 'y':
		if len(rest) == 1 {
			return false
		}
		m, mrest, _ := count(rest[1:])
		if len(mrest) == 0 {
			return false
		}
		if mrest[0] == 'g' && len(mrest) == 1 {
			return false
		}
		e.operate(c, n*m, mrest)
		return true
	case 'g':
		if len(rest) == 1 {
			return false
		}
		if rest[1] == 'g' {
			e.pos = 0
		}
		return true
	}
	if to, _, ok := e.motion(rest[0], n, false); ok {
		e.pos = to
		return true
	}
	switch c {
	case 'x':
		end := min(e.pos+n, e.lineEnd(e.pos))
		if end > e.pos {
			e.snapshot()
			e.cut(e.pos, end)
			e.vim.lineKill = false
		}
	case 'D', 'C':
		e.snapshot()
		e.cut(e.pos, e.lineEnd(e.pos))
		e.vim.lineKill = false
		if c == 'C' {
			e.insertMode(false)
		}
	case 'p', 'P':
		e.put(c == 'p', n)
	case 'u':
		for range n {
			e.undoStep(&e.vim.undo, &e.vim.redo)
		}
	case 'i':
		e.insertMode(true)
	case 'a':
		if e.pos < e.lineEnd(e.pos) {
			e.pos++
		}
		e.insertMode(true)
	case 'I':
		e.pos = e.firstNonBlank(e.pos)
		e.insertMode(true)
	case 'A':
		e.pos = e.lineEnd(e.pos)
		e.insertMode(true)
	case 'o':
		e.snapshot()
		e.pos = e.lineEnd(e.pos)
		e.insert([]rune{'\n'})
		e.insertMode(false)
	case 'O':
		e.snapshot()
		e.pos = e.lineStart(e.pos)
		e.insert([]rune{'\n'})
		e.pos--
		e.insertMode(false)
	}
	return true
}

// motion is where motion m taken n times leads from the cursor; inclusive
// says the character it lands on belongs to an operator's range (e, $).
// ok is false for a key that is no motion.
func (e *Editor) motion(m rune, n int, forOp bool) (to int, inclusive, ok bool) {
	p := e.pos
	switch m {
	case 'h':
		return max(e.lineStart(p), p-n), false, true
	case 'l':
		end := e.lineEnd(p)
		if !forOp {
			end = max(e.lineStart(p), end-1)
		}
		return min(end, p+n), false, true
	case '\b', ' ':
		// Backspace and space are h and l that wrap across lines (vim's
		// default whichwrap "b,s"); an operator takes the line break.
		for range n {
			p = e.wrapStep(p, m == ' ', forOp)
		}
		return p, false, true
	case 'w':
		for range n {
			p = e.wordForward(p)
		}
		return p, false, true
	case 'b':
		for range n {
			p = e.wordBack(p)
		}
		return p, false, true
	case 'e':
		for range n {
			p = e.wordEnd(p)
		}
		return p, true, true
	case '0':
		return e.lineStart(p), false, true
	case '^':
		return e.firstNonBlank(p), false, true
	case '$':
		for range n - 1 {
			if le := e.lineEnd(p); le < len(e.buf) {
				p = le + 1
			}
		}
		if forOp {
			return e.lineEnd(p), false, true
		}
		return max(e.lineStart(p), e.lineEnd(p)-1), false, true
	case 'G':
		return len(e.buf), false, true
	case 'j', 'k':
		// As ↓ and ↑: the next or previous line, or history at the ends.
		kind := KeyDown
		if m == 'k' {
			kind = KeyUp
		}
		for range n {
			e.vim.normal = false
			e.Handle(Key{Kind: kind})
			e.vim.normal = true
		}
		p = e.pos
		return p, false, true
	}
	return p, false, false
}

// wrapStep is one character right (or left) from p in NORMAL, onto the
// next (or previous) line at its end; forOp stops on the line break
// itself, so an operator takes it.
func (e *Editor) wrapStep(p int, right, forOp bool) int {
	if right {
		end := e.lineEnd(p)
		switch {
		case forOp && p < len(e.buf):
			return p + 1
		case p+1 < end:
			return p + 1
		case end < len(e.buf):
			return end + 1
		}
		return p
	}
	switch {
	case p > e.lineStart(p):
		return p - 1
	case p == 0:
		return 0
	case forOp:
		return p - 1
	}
	return max(e.lineStart(p-1), p-2)
}

// operate applies operator op (d, c, y) over motion m counted n times;
// the operator doubled (dd, cc, yy) or a j/k motion takes whole lines.
func (e *Editor) operate(op rune, n int, m []rune) {
	var from, to int
	lines := false
	switch {
	case m[0] == op, m[0] == 'j', m[0] == 'k':
		lines = true
		from, to = e.lineStart(e.pos), e.lineEnd(e.pos)
		extra := n - 1
		if m[0] == 'j' || m[0] == 'k' {
			extra = n
		}
		for range extra {
			if m[0] == 'k' {
				if from > 0 {
					from = e.lineStart(from - 1)
				}
			} else if to < len(e.buf) {
				to = e.lineEnd(to + 1)
			}
		}
	case m[0] == 'g' && len(m) > 1 && m[1] == 'g':
		from, to = 0, e.pos
	default:
		cm := m[0]
		if op == 'c' && cm == 'w' && e.pos < len(e.buf) && !unicode.IsSpace(e.buf[e.pos]) {
			cm = 'e' // cw changes to the end of the word, as in vim
		}
		t, inclusive, ok := e.motion(cm, n, true)
		if !ok {
			return
		}
		from, to = min(e.pos, t), max(e.pos, t)
		if inclusive && to < len(e.buf) {
			to++
		}
	}
	text := append([]rune(nil), e.buf[from:to]...)
	if lines {
		text = append(text, '\n')
	}
	if op == 'y' {
		e.kill, e.vim.lineKill = text, lines
		if !lines {
			e.pos = from
		}
		return
	}
	e.snapshot()
	switch {
	case lines && op == 'd':
		// Take the lines and one newline with them.
		if to < len(e.buf) {
			to++
		} else if from > 0 {
			from--
		}
		e.buf = append(e.buf[:from], e.buf[to:]...)
		e.pos = e.firstNonBlank(min(from, len(e.buf)))
		if from > 0 && from == len(e.buf) {
			e.pos = e.lineStart(from)
		}
	default:
		e.buf = append(e.buf[:from], e.buf[to:]...)
		e.pos = from
	}
	e.kill, e.vim.lineKill = text, lines
	if op == 'c' {
		e.insertMode(false)
	}
}

// put pastes the kill register n times: after the cursor (p) or before
// it (P); whole lines go below or above the cursor's line.
func (e *Editor) put(after bool, n int) {
	if len(e.kill) == 0 {
		return
	}
	e.snapshot()
	var text []rune
	for range n {
		text = append(text, e.kill...)
	}
	if e.vim.lineKill {
		if after {
			end := e.lineEnd(e.pos)
			e.pos = end
			e.insert(append([]rune{'\n'}, text[:len(text)-1]...))
			e.pos = end + 1
		} else {
			e.pos = e.lineStart(e.pos)
			start := e.pos
			e.insert(text)
			e.pos = start
		}
		return
	}
	if after && e.pos < len(e.buf) && e.buf[e.pos] != '\n' {
		e.pos++
	}
	e.insert(text)
	e.pos--
}

func (e *Editor) firstNonBlank(p int) int {
	p = e.lineStart(p)
	for p < len(e.buf) && e.buf[p] != '\n' && unicode.IsSpace(e.buf[p]) {
		p++
	}
	return p
}

// class groups runes as vim's word motions see them: blanks, word
// characters, and other punctuation.
func class(r rune) int {
	switch {
	case unicode.IsSpace(r):
		return 0
	case isWord(r):
		return 1
	}
	return 2
}

// wordForward is the start of the next word after p.
func (e *Editor) wordForward(p int) int {
	if p >= len(e.buf) {
		return p
	}
	if c := class(e.buf[p]); c != 0 {
		for p < len(e.buf) && class(e.buf[p]) == c {
			p++
		}
	}
	for p < len(e.buf) && class(e.buf[p]) == 0 {
		p++
	}
	return p
}

// wordBack is the start of the word before p.
func (e *Editor) wordBack(p int) int {
	for p > 0 && class(e.buf[p-1]) == 0 {
		p--
	}
	if p == 0 {
		return 0
	}
	c := class(e.buf[p-1])
	for p > 0 && class(e.buf[p-1]) == c {
		p--
	}
	return p
}

// wordEnd is the last character of the word after p.
func (e *Editor) wordEnd(p int) int {
	if p+1 >= len(e.buf) {
		return max(0, len(e.buf)-1)
	}
	p++
	for p < len(e.buf) && class(e.buf[p]) == 0 {
		p++
	}
	if p >= len(e.buf) {
		return len(e.buf) - 1
	}
	c := class(e.buf[p])
	for p+1 < len(e.buf) && class(e.buf[p+1]) == c {
		p++
	}
	return p
}
