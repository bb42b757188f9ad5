package term

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Screen paints an inline terminal UI: committed output scrolls up into the
// terminal's scrollback like any program's output, and a small live region
// (streaming text, running tools, status line, input) stays below it and is
// redrawn in place. It only ever moves the cursor within the live region,
// so it needs no alternate screen and leaves a readable scrollback.
type Screen struct {
	rows   int // rows the live region occupied when last drawn
	curRow int // the cursor's row within it
	curCol int // the cursor's column in that row
	// widths are the display widths of the rows drawn last, kept so a
	// frame after a resize can tell how many lines the terminal rewrapped
	// them into (counting them at the old width leaves stale lines above).
	widths []int
	// Sync wraps frames in synchronized-update marks (terminals that know
	// them paint each frame at once; others ignore them).
	Sync bool
}

// Frame returns the bytes that print committed (rows separated by "\n")
// above the live region and redraw the region as live, leaving the cursor
// at (crow, ccol) within it; crow < 0 hides the cursor. live rows must fit
// the terminal's width, now width columns (0: unknown, taken as unchanged);
// height bounds the region (the bottom rows are kept).
func (s *Screen) Frame(committed string, live []string, crow, ccol, width, height int) string {
	if height > 1 && len(live) > height-1 {
		cut := len(live) - (height - 1)
		live = live[cut:]
		crow -= cut
		if crow < 0 {
			crow = -1
		}
	}
	var b strings.Builder
	if s.Sync {
		b.WriteString("\x1b[?2026h")
	}
	b.WriteString("\x1b[?25l\r")
	if up := s.above(width); up > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", up)
	}
	b.WriteString(eraseDown(s.lines(width)))
	if committed != "" {
		committed = strings.TrimSuffix(committed, "\n")
		b.WriteString(strings.ReplaceAll(committed, "\n", "\x1b[K\r\n"))
		b.WriteString("\x1b[K\r\n")
	}
	for i, r := range live {
		if i > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString(r)
	}
	s.rows = len(live)
	s.curRow, s.curCol = max(0, len(live)-1), 0
	s.widths = s.widths[:0]
	for _, r := range live {
		s.widths = append(s.widths, ansi.StringWidth(r))
	}
	if crow < 0 || crow >= len(live) {
		// The hidden cursor parks at the start of the last row, where a
		// rewrap cannot move it.
		b.WriteString("\r")
	}
	if crow >= 0 && crow < len(live) {
		if up := len(live) - 1 - crow; up > 0 {
			fmt.Fprintf(&b, "\x1b[%dA", up)
		}
		b.WriteString("\r")
		if ccol > 0 {
			fmt.Fprintf(&b, "\x1b[%dC", ccol)
		}
		s.curRow, s.curCol = crow, ccol
		b.WriteString("\x1b[?25h")
	}
	if s.Sync {
		b.WriteString("\x1b[?2026l")
	}
	return b.String()
}

// above is how many lines the cursor sits below the region's top, now
// that the terminal is width columns wide. A terminal that rewraps on
// resize (tmux, VTE, kitty, iTerm2) splits each row wider than the new
// width into ceil(w/width) lines and moves the cursor along with its text;
// rows never rejoin on widening, since each ended with a hard newline.
func (s *Screen) above(width int) int {
	if width <= 0 || len(s.widths) != s.rows {
		return s.curRow
	}
	lines := func(w int) int { return max(1, (w+width-1)/width) }
	up := 0
	for _, w := range s.widths[:s.curRow] {
		up += lines(w)
	}
	if s.curRow < len(s.widths) {
		up += min(s.curCol/width, lines(s.widths[s.curRow])-1)
	}
	return up
}

// lines is how many terminal lines the region drawn last spans now that
// the terminal is width columns wide (0: unknown, taken as unchanged).
func (s *Screen) lines(width int) int {
	if width <= 0 || len(s.widths) != s.rows {
		return s.rows
	}
	n := 0
	for _, w := range s.widths {
		n += max(1, (w+width-1)/width)
	}
	return n
}

// eraseDown returns the bytes that erase, from the start of the line the
// cursor is on, that line and everything below it, where the region drawn
// last spans lines lines from there. It never erases from the screen's
// top-left corner: tmux (scroll-on-clear, on by default) and some other
// terminals take an erase from there as clearing the screen and push the
// whole screen into the scrollback first, so a region that sits at the
// top (as it does after a narrowing pushed its first lines off the top)
// would leave one copy of itself in the scrollback per frame. Erasing the
// first line alone and the rest from the line below is the same on every
// terminal; a region of one line has nothing of its own below it.
func eraseDown(lines int) string {
	if lines <= 1 {
		return "\x1b[K"
	}
	return "\x1b[K\x1b[B\x1b[J\x1b[A"
}

// Clear returns the bytes that erase the live region and leave the cursor
// at its top-left (before the program exits or hands the terminal over).
func (s *Screen) Clear() string {
	var b strings.Builder
	b.WriteString("\r")
	if s.curRow > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", s.curRow)
	}
	b.WriteString(eraseDown(s.rows))
	b.WriteString("\x1b[?25h")
	s.Reset()
	return b.String()
}

// Reset forgets the region (after the screen was cleared).
func (s *Screen) Reset() { s.rows, s.curRow, s.curCol, s.widths = 0, 0, 0, s.widths[:0] }
