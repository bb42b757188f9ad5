package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// resize sets the pane's size, as a user dragging the window's edge does:
// tmux reflows what the pane holds (scrollback too) and sends dsh SIGWINCH.
//
// tmux reflows its grid at once but tells the pane's program (TIOCSWINSZ)
// at most once per 250 ms: a second resize within that time leaves the
// program reading the old size while its output lands on the new grid, and
// every frame drawn in the gap climbs the old width's lines. No program can
// draw right against a size the terminal misreports, so resize keeps 300 ms
// after the last one and the test judges dsh, not tmux's throttle.
func (tt *tmuxTerm) resize(cols, rows int) {
	tt.t.Helper()
	if wait := 300*time.Millisecond - time.Since(tt.resized); wait > 0 {
		time.Sleep(wait)
	}
	tt.tmux("resize-window", "-t", tt.name, "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows))
	tt.resized = time.Now()
}

// history is the pane's whole history, every line tmux kept from the
// first, with wrapped lines joined: a redraw that climbed too few lines
// leaves its stale copy up there, above the visible screen.
func (tt *tmuxTerm) history() string {
	return tt.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", tt.name)
}

// visibleJoined is the visible screen only, wrapped lines joined.
func (tt *tmuxTerm) visibleJoined() string {
	return tt.tmux("capture-pane", "-p", "-J", "-t", tt.name)
}

// onceIn fails unless each sub occurs exactly once in scr.
func onceIn(t *testing.T, where, scr string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if n := strings.Count(scr, sub); n != 1 {
			t.Fatalf("%q shows %d times in the %s, want once:\n%s", sub, n, where, scr)
		}
	}
}

// drawnAt reports whether the line holding sub was drawn for cols columns:
// with the terminal's wrapping joined back, it still fits (a row the
// terminal merely reflowed from a wider frame would not).
func drawnAt(scr, sub string, cols int) bool {
	l := lineWith(scr, sub)
	return l != "" && len([]rune(strings.TrimRight(l, " "))) <= cols
}

// Resizing leaves no stale lines in any state: during an approval (while
// the running card's spinner keeps redrawing), while an answer streams,
// and in the transcript view (ctrl-o), narrowing and widening. Each part
// of the live region shows once in the whole history, not only on the
// visible screen, and is drawn at the new width.
//
// Narrowing is the hard case: tmux reflows every row wider than the new
// width onto more lines. On a pane that is not yet full it keeps the
// blank lines below the content and pushes as many lines off the top
// into the scrollback as the reflow added; a region near the top loses
// its first lines there, out of any program's reach. The frame after that
// climbed to the top of the screen and erased from its top-left corner,
// which tmux (scroll-on-clear) takes as clearing the screen: it pushed
// the whole screen into the scrollback, one copy of the approval per
// spinner turn. On a fresh pane the test asks that no part below the
// reflow's residue repeats; once the pane is full (as it is after a few
// turns) it asks that every part shows exactly once.
func TestResizeIsCleanInTmux(t *testing.T) {
	command := func(prefix string) string {
		var words []string
		for i := 0; len(strings.Join(words, " ")) < 300; i++ {
			words = append(words, fmt.Sprintf("%s%03d", prefix, i))
		}
		return "printf '%s\\n' " + strings.Join(words, " ") + " > words.txt"
	}
	var fill []string
	for i := range 60 {
		fill = append(fill, fmt.Sprintf("- filler line %02d", i))
	}
	answer := "STREAM-START " + strings.Repeat("a long streamed answer that wraps ", 9) + "STREAM-END"
	_, srv := newPromptModel(t,
		promptStep{key: "long one", call: command("w")},
		promptStep{key: "fill the screen", text: strings.Join(fill, "\n")},
		promptStep{key: "long two", call: command("v")},
		promptStep{key: "talk slowly", text: answer, hold: true},
	)
	s := newTermProject(t, srv, unconfined)
	tt := s.start(t)
	tt.resize(160, 48)
	tt.idle()

	// resizeApproval narrows the open approval to 60 columns and widens
	// it to 110, checking after each that every sub of once shows once in
	// the whole history, then allows the call.
	resizeApproval := func(where, prompt string, once []string) {
		t.Helper()
		tt.resize(60, 40)
		tt.waitUntil(func(s string) bool {
			return drawnAt(s, "? Allow Bash", 60) && drawnAt(s, "[y] allow once", 60)
		}, where+": the approval drawn at 60 columns")
		settle(tt)
		onceIn(t, where+": visible screen after narrowing", tt.visibleJoined(), "? Allow Bash printf", "? Bash printf")
		onceIn(t, where+": history after narrowing", tt.history(), once...)
		tt.resize(110, 40)
		tt.waitUntil(func(s string) bool {
			return strings.Contains(lineWith(s, "[y] allow once"), "[n] deny")
		}, where+": the approval drawn at 110 columns")
		settle(tt)
		onceIn(t, where+": history after widening", tt.history(), once...)
		tt.keys("y")
		tt.waitFor("Finished: " + prompt)
		tt.idle()
	}

	// A fresh pane: an approval at 160 columns, narrowed, widened; below
	// the reflow's residue nothing repeats.
	tt.prompt("long one")
	below := []string{"[y] allow once", `"> words.txt": write`, "rule: Edit("}
	tt.waitFor(append(below, "? Allow Bash printf '%s\\n' w000", "[n] deny")...)
	resizeApproval("fresh pane", "long one", below)
	if h := tt.history(); strings.Contains(h, "[y] allow once") {
		t.Fatalf("the answered approval left lines behind:\n%s", h)
	}

	// A full pane: every part of the approval once, its header included.
	tt.prompt("fill the screen")
	tt.waitFor("filler line 59")
	tt.idle()
	tt.resize(160, 48)
	tt.idle()
	tt.prompt("long two")
	card := []string{"? Allow Bash printf '%s\\n' v000", "? Bash printf '%s\\n' v000", "[y] allow once", `"> words.txt": write`, "rule: Edit("}
	tt.waitFor(append(card, "[n] deny")...)
	resizeApproval("full pane", "long two", card)

	// A streaming answer, narrowed to 50 and widened to 120.
	tt.prompt("talk slowly")
	tt.waitFor("STREAM-END", "esc or ctrl-c to interrupt")
	tt.resize(50, 40)
	tt.waitUntil(func(s string) bool {
		return drawnAt(s, "STREAM-START", 50) && drawnAt(s, "default mode (shift-tab)", 50)
	}, "the stream drawn at 50 columns")
	settle(tt)
	onceIn(t, "history while streaming, narrowed", tt.history(), "STREAM-START", "STREAM-END", "Writing…", "default mode (shift-tab)")
	tt.resize(120, 40)
	tt.waitUntil(func(s string) bool {
		return strings.Contains(lineWith(s, "STREAM-START"), "wraps a long") && strings.Contains(s, "esc or ctrl-c to interrupt")
	}, "the stream drawn at 120 columns")
	settle(tt)
	onceIn(t, "history while streaming, widened", tt.history(), "STREAM-START", "STREAM-END", "Writing…", "default mode (shift-tab)")
	tt.keys("Escape")
	tt.waitFor("⏹ Interrupted")
	tt.idle()

	// The transcript view, narrowed and widened: one header and the
	// session's text once, drawn at the new width; closing it gives back
	// the inline screen with nothing repeated.
	tt.resize(110, 40)
	tt.idle()
	tt.keys("C-o")
	tt.waitFor("✻ Transcript", "› talk slowly")
	tt.resize(70, 30)
	tt.waitUntil(func(string) bool {
		v := tt.visibleJoined()
		return strings.Contains(v, "✻ Transcript") && drawnAt(v, "pgup/pgdn scroll", 70) && strings.HasSuffix(strings.TrimRight(lineWith(v, "pgup/pgdn scroll"), " "), "…")
	}, "the view drawn at 70 columns")
	onceIn(t, "view at 70 columns", tt.visibleJoined(), "✻ Transcript", "› talk slowly")
	tt.resize(130, 40)
	tt.waitUntil(func(string) bool {
		v := tt.visibleJoined()
		return strings.Contains(v, "✻ Transcript") && strings.Contains(lineWith(v, "pgup/pgdn scroll"), "ctrl-o back")
	}, "the view drawn at 130 columns")
	onceIn(t, "view at 130 columns", tt.visibleJoined(), "✻ Transcript", "› talk slowly")
	tt.keys("q")
	tt.waitUntil(func(string) bool {
		v := tt.visibleJoined()
		return !strings.Contains(v, "✻ Transcript") && strings.Contains(lastLines(v, 2), "›")
	}, "the inline screen back")
	settle(tt)
	h := tt.history()
	onceIn(t, "history after the view", h, "Finished: long two", "› talk slowly", "STREAM-END", "⏹ Interrupted")
	if strings.Contains(h, "✻ Transcript") {
		t.Fatalf("the view left lines in the inline history:\n%s", h)
	}
	tt.exit()
}

// settle waits until the visible screen has been drawn anew three times
// (the spinner and timers change every frame; each frame is a full redraw
// of the live region and a chance to leave a copy behind), or, on a
// screen that does not animate, until it stayed the same for ten polls.
func settle(tt *tmuxTerm) {
	tt.t.Helper()
	seen := map[string]bool{}
	last, same := "", 0
	tt.waitUntil(func(string) bool {
		v := tt.visibleJoined()
		seen[v] = true
		if v == last {
			same++
		}
		last = v
		return len(seen) >= 4 || same >= 10
	}, "the screen to redraw a few times")
}
