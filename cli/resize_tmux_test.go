package cli

import (
	"fmt"
	"strings"
	"testing"
)

// resize changes the pane's size; tmux rewraps what is on it and signals
// dsh (SIGWINCH), as a user dragging the window's edge does.
func (tt *tmuxTerm) resize(cols, rows int) {
	tt.t.Helper()
	tt.tmux("resize-window", "-t", tt.name, "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows))
}

// once fails unless every line holding sub (scrollback included; lines the
// terminal wrapped are joined) is exactly one: a second is a stale copy of
// the live region left behind by a redraw.
func (tt *tmuxTerm) once(scr string, subs ...string) {
	tt.t.Helper()
	for _, sub := range subs {
		if n := strings.Count(scr, sub); n != 1 {
			tt.t.Fatalf("%q shows %d times, want once:\n%s", sub, n, scr)
		}
	}
}

// redrawn reports whether the line holding sub fits cols columns once the
// lines the terminal wrapped are joined: then dsh drew it at that width,
// the terminal did not just rewrap an older, wider row (runes: these
// screens are box-drawing and ASCII).
func redrawn(scr, sub string, cols int) bool {
	l := lineWith(scr, sub)
	return l != "" && len([]rune(strings.TrimRight(l, " "))) <= cols
}

// Resizing during an approval, while an answer streams, and in the
// transcript view leaves no stale lines: each part of the live region
// shows once, redrawn at the new width. Narrowing is the hard case: the
// terminal rewraps every old row wider than the new width into two lines,
// and a frame that climbs only the old row count leaves the top ones.
func TestResizeIsCleanInTmux(t *testing.T) {
	var words []string
	for i := 0; len(strings.Join(words, " ")) < 300; i++ {
		words = append(words, fmt.Sprintf("w%03d", i))
	}
	cmd := "printf '%s\\n' " + strings.Join(words, " ") + " > words.txt"
	answer := "STREAM-START " + strings.Repeat("a long streamed answer that wraps ", 9) + "STREAM-END"
	_, srv := newPromptModel(t,
		promptStep{key: "long one", call: cmd},
		promptStep{key: "talk slowly", text: answer, hold: true},
	)
	s := newTermProject(t, srv, unconfined)
	tt := s.start(t)

	// An approval, narrowed then widened.
	tt.prompt("long one")
	tt.waitFor("? Allow Bash printf", "[y] allow once", "[n] deny")
	tt.resize(60, 40)
	// The choices no longer fit: "[n] deny" is cut off the redrawn line.
	scr := tt.waitUntil(func(s string) bool {
		return strings.Contains(s, "[y] allow once") && !strings.Contains(s, "[n] deny") && redrawn(s, "? Allow Bash", 60)
	}, "the approval redrawn at 60 columns")
	tt.once(scr, "? Allow Bash printf", "[y] allow once", "rule: Bash(printf:*)", "│ $ printf")
	tt.resize(110, 40)
	scr = tt.waitFor("[y] allow once", "[n] deny")
	tt.once(scr, "? Allow Bash printf", "[y] allow once", "rule: Bash(printf:*)", "│ $ printf")
	tt.keys("y")
	scr = tt.waitFor("Finished: long one")
	tt.idle()
	if strings.Contains(scr, "[y] allow once") {
		t.Fatalf("the answered approval left lines behind:\n%s", scr)
	}

	// A streaming answer, narrowed.
	tt.prompt("talk slowly")
	tt.waitFor("STREAM-END", "esc or ctrl-c to interrupt")
	tt.resize(50, 40)
	scr = tt.waitUntil(func(s string) bool {
		return redrawn(s, "STREAM-START", 50) && redrawn(s, "to interrupt", 50)
	}, "the stream redrawn at 50 columns")
	tt.once(scr, "STREAM-START", "STREAM-END", "to interrupt")
	tt.keys("Escape")
	tt.waitFor("⏹ Interrupted")
	tt.idle()

	// The transcript view, narrowed and widened: one header, the
	// session's text once, at the new width.
	tt.resize(110, 40)
	tt.idle()
	tt.keys("C-o")
	tt.waitFor("✻ Transcript", "› talk slowly")
	tt.resize(70, 30)
	view := func() string { return tt.tmux("capture-pane", "-p", "-J", "-t", tt.name) }
	tt.waitUntil(func(string) bool { return redrawn(view(), "✻ Transcript", 70) }, "the view redrawn at 70 columns")
	tt.once(view(), "✻ Transcript", "› talk slowly")
	tt.resize(110, 40)
	tt.waitUntil(func(string) bool { return strings.Contains(view(), "✻ Transcript") }, "the view at 110 columns")
	tt.once(view(), "✻ Transcript", "› talk slowly")
	tt.keys("q")
	scr = tt.waitUntil(func(s string) bool {
		return !strings.Contains(s, "✻ Transcript") && strings.Contains(lastLines(s, 2), "›")
	}, "the inline screen back")
	tt.once(scr, "Finished: long one")
	tt.exit()
}
