package term

import "strings"

// Streaming Markdown without reflow.
//
// An answer streams in as text deltas. Shown raw, "**bold**" and "| a | b |"
// flash on screen and then jump when the finished message is rendered. So
// the stream is cut into top-level blocks as it arrives: every block that
// is complete is rendered once and committed to the scrollback, where it
// never changes; only the block still being written is rendered again on
// each frame, in the live region. When the message ends only the text after
// the last committed block is left to render.
//
// A block is complete when the next one has started: a line beginning in
// the first column after a blank line, a fence opening in the first column,
// or the line after a closing fence. Text inside an open code fence never
// counts, and a line indented after a blank line (a list item's second
// paragraph, indented code) continues what came before, so the cut never
// splits what Markdown reads as one block.

// blockSplitter finds block boundaries in a growing text. It scans each
// complete line once.
type blockSplitter struct {
	pos   int    // start of the first line not scanned yet
	fence string // the open fence's marker ("```", "~~~~"), or ""
	// fenceTop says the open fence started in the first column (a
	// boundary follows its close); an indented one belongs to a list item.
	fenceTop bool
	blank    bool // the last scanned line was blank
	cut      int  // the newest boundary
}

// scan reads s (the whole text so far; it only grows) and returns the
// newest boundary: s[:cut] is complete blocks.
func (b *blockSplitter) scan(s string) int {
	for {
		nl := strings.IndexByte(s[b.pos:], '\n')
		if nl < 0 {
			break
		}
		line := s[b.pos : b.pos+nl]
		start, next := b.pos, b.pos+nl+1
		b.pos = next
		if b.fence != "" {
			if closesFence(line, b.fence) {
				b.fence = ""
				if b.fenceTop {
					b.cut = next
				}
			}
			b.blank = false
			continue
		}
		blank := strings.TrimSpace(line) == ""
		top := line != "" && line[0] != ' ' && line[0] != '\t'
		if !blank && top && b.blank {
			b.cut = start
		}
		if m, indent := opensFence(line); m != "" {
			b.fence, b.fenceTop = m, indent == 0
			if indent == 0 {
				b.cut = start
			}
		}
		b.blank = blank
	}
	// A line that has begun after a blank one starts a new block even
	// before it ends.
	if b.fence == "" && b.blank && b.pos < len(s) && s[b.pos] != ' ' && s[b.pos] != '\t' {
		b.cut = b.pos
	}
	return b.cut
}

// opensFence returns the marker of a code fence the line opens (three or
// more backticks or tildes after at most three spaces) and its indentation.
func opensFence(line string) (marker string, indent int) {
	t := strings.TrimLeft(line, " ")
	indent = len(line) - len(t)
	if indent > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return "", 0
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	if n < 3 || (t[0] == '`' && strings.IndexByte(t[n:], '`') >= 0) {
		return "", 0
	}
	return t[:n], indent
}

// closesFence reports whether line closes a fence opened by marker.
func closesFence(line, marker string) bool {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return false
	}
	n := 0
	for n < len(t) && t[n] == marker[0] {
		n++
	}
	return n >= len(marker) && strings.TrimSpace(t[n:]) == ""
}

// closeInline prepares the block being written for display: emphasis and
// code spans opened but not closed yet are closed, and a marker the text
// ends in is left out until what it marks arrives, so the live region
// shows "**bold" as bold rather than as asterisks. Inside an open code
// fence (inFence) nothing is inline.
func closeInline(s string, inFence bool) string {
	lastLine := s[strings.LastIndexByte(s, '\n')+1:]
	if m, _ := opensFence(lastLine); inFence || m != "" || strings.HasPrefix(strings.TrimLeft(lastLine, " "), "``") {
		return s // a code block, or a fence on its way
	}
	s = strings.TrimRight(s, "*`~")
	// Only the last paragraph can hold an open span.
	last := s
	if i := strings.LastIndex(s, "\n\n"); i >= 0 {
		last = s[i+2:]
	}
	code, strong, strike := false, 0, 0
	for i := 0; i < len(last); i++ {
		switch {
		case last[i] == '`':
			code = !code
		case code:
		case strings.HasPrefix(last[i:], "**"):
			strong++
			i++
		case strings.HasPrefix(last[i:], "~~"):
			strike++
			i++
		}
	}
	if code {
		return s + "`"
	}
	if strike%2 == 1 {
		s += "~~"
	}
	if strong%2 == 1 {
		s += "**"
	}
	return s
}
