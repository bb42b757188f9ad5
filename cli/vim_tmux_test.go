package cli

import (
	"strings"
	"testing"
)

// The prompt's vim mode ("editorMode": "vim"): text typed in INSERT,
// edited with NORMAL commands (motions, cw, a counted dw, x, i, A, u),
// sent with enter from NORMAL; the model's request holds exactly the
// edited text. /vim then turns the mode off for the session.
func TestVimModeInTmux(t *testing.T) {
	m, srv := newPromptModel(t)
	s := newTermProject(t, srv, `,"editorMode":"vim"`)
	tt := s.start(t)
	tt.waitFor("-- INSERT --")
	normal := func() {
		t.Helper()
		tt.keys("Escape")
		tt.waitUntil(func(s string) bool { return strings.Contains(lastLines(s, 1), "-- NORMAL --") }, "NORMAL in the footer")
	}
	insert := func() {
		t.Helper()
		tt.waitUntil(func(s string) bool { return strings.Contains(lastLines(s, 1), "-- INSERT --") }, "INSERT in the footer")
	}
	tt.text("say hello wrold extra words")
	normal()
	tt.text("0wwcw")
	insert()
	tt.text("world")
	normal()
	tt.text("w2dwx0i")
	insert()
	tt.text("please ")
	normal()
	tt.text("A")
	insert()
	tt.text("!")
	normal()
	tt.text("u")
	tt.waitUntil(func(s string) bool {
		return strings.Contains(lastLines(s, 2), "› please say hello world\n")
	}, "the edited prompt")
	tt.keys("Enter")
	tt.waitFor("Finished: please say hello world")
	msgs := m.last().Messages
	if got := msgs[len(msgs)-1].text(); got != "please say hello world" {
		t.Fatalf("the model got %q, want %q", got, "please say hello world")
	}
	// Each prompt starts in INSERT again; /vim turns the mode off.
	tt.idle()
	insert()
	tt.prompt("/vim")
	tt.waitFor("vim mode off")
	tt.waitUntil(func(s string) bool {
		return !strings.Contains(lastLines(s, 1), "-- INSERT --") && strings.Contains(lastLines(s, 1), "default mode")
	}, "the footer without the vim mode")
	tt.text("dd")
	tt.keys("Enter")
	tt.waitFor("Finished: dd")
	tt.exit()
}
