package term

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// Bounds of what the screen keeps of a running call's output.
const (
	tailKeep     = 200  // lines kept (the expanded card and the transcript view show them)
	tailLineMax  = 1024 // bytes kept of one line
	liveTailRows = 5    // lines a collapsed running card shows
)

// OutputTail is the end of a running call's output as it streams in: the
// last [tailKeep] lines, each cut to [tailLineMax] bytes, so a command that
// prints without end costs bounded memory and bounded redraw. A carriage
// return starts its line over, as a terminal would show a progress bar.
// The call's result, not the tail, is what the model reads.
type OutputTail struct {
	lines   []string // a ring of complete lines, oldest at head once full
	head    int
	partial []byte // the line still being written
	total   int    // complete lines ever seen
}

// Write adds output (any split: mid-line, mid-rune).
func (t *OutputTail) Write(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexAny(p, "\r\n")
		if i < 0 {
			t.add(p)
			return
		}
		t.add(p[:i])
		switch {
		case p[i] == '\n':
			t.finish()
		case i+1 < len(p) && p[i+1] == '\n':
			// CRLF: the "\n" ends the line.
		default:
			t.partial = t.partial[:0] // a lone CR redraws the line
		}
		p = p[i+1:]
	}
}

func (t *OutputTail) add(p []byte) {
	if room := tailLineMax - len(t.partial); room > 0 {
		t.partial = append(t.partial, p[:min(len(p), room)]...)
	}
}

func (t *OutputTail) finish() {
	line := sanitize(strings.ToValidUTF8(string(t.partial), string(utf8.RuneError)))
	t.partial = t.partial[:0]
	t.total++
	if len(t.lines) < tailKeep {
		t.lines = append(t.lines, line)
		return
	}
	t.lines[t.head] = line
	t.head = (t.head + 1) % tailKeep
}

// Lines returns the last n lines (n <= 0: all that are kept), the line
// being written included, and how many earlier lines are not returned.
func (t *OutputTail) Lines(n int) (lines []string, hidden int) {
	all := make([]string, 0, len(t.lines)+1)
	all = append(all, t.lines[t.head:]...)
	all = append(all, t.lines[:t.head]...)
	total := t.total
	if len(t.partial) > 0 {
		all = append(all, sanitize(strings.ToValidUTF8(string(t.partial), string(utf8.RuneError))))
		total++
	}
	if n > 0 && len(all) > n {
		all = all[len(all)-n:]
	}
	return all, total - len(all)
}

// Empty reports whether nothing was written yet.
func (t *OutputTail) Empty() bool { return t == nil || (t.total == 0 && len(t.partial) == 0) }
