package term

import (
	"fmt"
	"strings"
)

// Screen paints an inline terminal UI: committed output scrolls up into the
// terminal's scrollback like any program's output, and a small live region
// (streaming text, running tools, status line, input) stays below it and is
// redrawn in place. It only ever moves the cursor within the live region,
// so it needs no alternate screen and leaves a readable scrollback.
type Screen struct {
	rows   int // rows the live region occupied when last drawn
	curRow int // the cursor's row within it
	// Sync wraps frames in synchronized-update marks (terminals that know
	// them paint each frame at once; others ignore them).
	Sync bool
}

// Frame returns the bytes that print committed (rows separated by "\n")
// above the live region and redraw the region as live, leaving the cursor
// at (crow, ccol) within it; crow < 0 hides the cursor. live rows must fit
// the terminal width; height bounds the region (the bottom rows are kept).
func (s *Screen) Frame(committed string, live []string, crow, ccol, height int) string {
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
	if s.curRow > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", s.curRow)
	}
	b.WriteString("\x1b[J")
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
	s.curRow = max(0, len(live)-1)
	if crow >= 0 && crow < len(live) {
		if up := len(live) - 1 - crow; up > 0 {
			fmt.Fprintf(&b, "\x1b[%dA", up)
		}
		b.WriteString("\r")
		if ccol > 0 {
			fmt.Fprintf(&b, "\x1b[%dC", ccol)
		}
		s.curRow = crow
		b.WriteString("\x1b[?25h")
	}
	if s.Sync {
		b.WriteString("\x1b[?2026l")
	}
	return b.String()
}

// Clear returns the bytes that erase the live region and leave the cursor
// at its top-left (before the program exits or hands the terminal over).
func (s *Screen) Clear() string {
	var b strings.Builder
	b.WriteString("\r")
	if s.curRow > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", s.curRow)
	}
	b.WriteString("\x1b[J\x1b[?25h")
	s.rows, s.curRow = 0, 0
	return b.String()
}

// Reset forgets the region (after the screen was cleared).
func (s *Screen) Reset() { s.rows, s.curRow = 0, 0 }
