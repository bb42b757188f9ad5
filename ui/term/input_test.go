package term

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
)

// A paste of more than pasteLines lines shows as a placeholder and is sent
// whole; a short one is inserted as is; an edited placeholder stays text.
func TestEditorCollapsesLongPastes(t *testing.T) {
	e := NewEditor(nil)
	var lines []string
	for i := 1; i <= 200; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	long := strings.Join(lines, "\n") + "\n"
	typeKeys(e, "see \x1b[200~"+long+"\x1b[201~ and \x1b[200~a\nb\x1b[201~")
	if got, want := e.Text(), "see [Pasted text #1 +200 lines] and a\nb"; got != want {
		t.Fatalf("buffer %q, want %q", got, want)
	}
	if got, want := e.Expanded(), "see "+long+" and a\nb"; got != want {
		t.Fatalf("expanded %q, want %q", got, want)
	}
	typeKeys(e, "\x1b[200~1\n2\n3\n4\x1b[201~")
	if !strings.HasSuffix(e.Text(), "[Pasted text #2 +4 lines]") {
		t.Fatalf("second paste: %q", e.Text())
	}
	// Break the first placeholder: it is no longer expanded.
	e.SetText(strings.Replace(e.Text(), "#1 +200", "#1 +20", 1))
	if strings.Contains(e.Expanded(), "line 150") || !strings.Contains(e.Expanded(), "1\n2\n3\n4") {
		t.Fatalf("after the edit: %q", e.Expanded())
	}
	e.Reset()
	if e.Expanded() != "" || len(e.pastes) != 0 {
		t.Fatal("reset keeps pastes")
	}
}

// ctrl-r finds the newest entry containing what is typed, ctrl-r again an
// older one, esc puts the draft back, enter sends the match.
func TestEditorReverseSearch(t *testing.T) {
	h := LoadHistory("")
	for _, s := range []string{"make test", "git status", "go test ./ui/...", "ls"} {
		h.Add(s)
	}
	e := NewEditor(h)
	typeKeys(e, "draft\x12tes")
	rows, _, _ := e.Layout("› ", "  ", 80)
	if got := rows[0]; got != "(reverse-i-search)`tes': go test ./ui/..." {
		t.Fatalf("search row %q", got)
	}
	typeKeys(e, "\x12")
	if rows, _, _ := e.Layout("› ", "  ", 80); rows[0] != "(reverse-i-search)`tes': make test" {
		t.Fatalf("older match: %q", rows[0])
	}
	typeKeys(e, "\x12") // no older one: the match stays, marked failing
	if rows, _, _ := e.Layout("› ", "  ", 80); rows[0] != "(failing reverse-i-search)`tes': make test" {
		t.Fatalf("failing: %q", rows[0])
	}
	typeKeys(e, "\x1b")
	if e.Searching() || e.Text() != "draft" {
		t.Fatalf("esc: searching %v, buffer %q", e.Searching(), e.Text())
	}
	// A movement key takes the match for editing.
	typeKeys(e, "\x12stat\x01")
	if e.Searching() || e.Text() != "git status" || e.Cursor() != 0 {
		t.Fatalf("ctrl-a: %v %q %d", e.Searching(), e.Text(), e.Cursor())
	}
	e.Reset()
	if acts := typeKeys(e, "\x12ls\r"); len(acts) != 1 || acts[0] != ActSubmit || e.Text() != "ls" {
		t.Fatalf("enter: %v %q", acts, e.Text())
	}
}

// A ! line runs through the bash tool; its output shows and reaches the
// next request as context, and the model is not called for it.
func TestShellModeOutputBecomesContext(t *testing.T) {
	ad := scripted.New(scripted.Text("seen it"))
	h := startUI(t, useScript(t, ad))
	h.send("/model script/m\r")
	h.wait("model set to script/m")
	h.send("!echo shell-$((6*7)) && echo second\r")
	h.wait("! echo shell-", "⎿ shell-42", "second")
	if n := ad.Calls(); n != 0 {
		t.Fatalf("the model was called %d times for a ! command", n)
	}
	h.send("what did it print?\r")
	h.wait("seen it")
	reqs := ad.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	var all strings.Builder
	for _, m := range reqs[0].Messages {
		all.WriteString(llm.TextOf(m.Content))
	}
	if s := all.String(); !strings.Contains(s, "<bash-input>echo shell-$((6*7)) && echo second</bash-input>") || !strings.Contains(s, "shell-42\nsecond") {
		t.Fatalf("the request lacks the command's output:\n%s", s)
	}
	h.exit()
}

// A collapsed 200-line paste shows as its placeholder and reaches the model
// whole.
func TestPastedBlockReachesTheModelWhole(t *testing.T) {
	ad := scripted.New(scripted.Text("got the paste"))
	h := startUI(t, useScript(t, ad))
	h.send("/model script/m\r")
	h.wait("model set to script/m")
	var lines []string
	for i := 1; i <= 200; i++ {
		lines = append(lines, fmt.Sprintf("row %03d", i))
	}
	h.send("look: \x1b[200~" + strings.Join(lines, "\n") + "\x1b[201~")
	h.wait("look: [Pasted text #1 +200 lines]")
	if strings.Contains(h.screen(), "row 100") {
		t.Fatal("the paste is drawn in full")
	}
	h.send("\r")
	h.wait("got the paste")
	reqs := ad.Requests()
	if len(reqs) != 1 || !strings.Contains(llm.TextOf(reqs[0].Messages[len(reqs[0].Messages)-1].Content), "look: row 001\n") ||
		!strings.Contains(llm.TextOf(reqs[0].Messages[len(reqs[0].Messages)-1].Content), "row 200") {
		t.Fatalf("the request lacks the paste: %+v", reqs)
	}
	h.exit()
}
