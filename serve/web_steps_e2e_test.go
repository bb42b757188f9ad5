package serve_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/dshq/dsh/internal/chrometest"
	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/client"
)

// openSession makes a session over the API and opens its view in a
// logged-in page.
func (w *webServer) openSession(t *testing.T, mode string) (*chrometest.Page, string) {
	t.Helper()
	c := client.New(w.p.URL, w.token)
	s, err := c.CreateSession(context.Background(), api.CreateSession{Workspace: w.ws, PermissionMode: mode})
	if err != nil {
		t.Fatal(err)
	}
	p := chrometest.New(t, 1280, 800)
	w.login(p)
	p.Run(chromedp.Navigate(w.p.URL + "/ui#/s/" + string(s.ID)))
	p.WaitFor(`document.querySelector("#prompt")`)
	return p, string(s.ID)
}

// idle waits until the view's session has ended its turn.
func idle(p *chrometest.Page) {
	p.T.Helper()
	p.WaitFor(`document.querySelector("#send").textContent === "Send" && !["running", "waiting"].includes(document.querySelector("#view-status").dataset.status)`)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// TestWebRewind: rewinding from the web UI takes the files and the
// conversation back to before a turn; the rewound turns are marked in the
// timeline, their prompt comes back to the composer, and the next request
// carries only the history before them. A file changed by someone else
// refuses the rewind with its diff shown, until the user chooses to
// overwrite it.
func TestWebRewind(t *testing.T) {
	w := startWeb(t)
	p, _ := w.openSession(t, "bypassPermissions")
	file := filepath.Join(w.ws, "a.txt")

	send(p, "please write version one")
	p.WaitFor(`document.querySelector(".card[data-call='toolu_v1']") && document.querySelector(".card[data-call='toolu_v1']").dataset.state === "done"`)
	idle(p)
	send(p, "please write version two")
	p.WaitFor(`document.querySelector(".card[data-call='toolu_v2']") && document.querySelector(".card[data-call='toolu_v2']").dataset.state === "done"`)
	idle(p)
	if got := readFile(t, file); got != "version two\n" {
		t.Fatalf("after two turns a.txt holds %q", got)
	}

	// The dialog lists both turns with their prompts and changes.
	p.Run(chromedp.Click("#rewind"))
	p.WaitFor(`document.querySelectorAll("#rewind-dialog .rewind-list button[data-turn]").length === 2`)
	if got := p.Text(`#rewind-dialog .rewind-list li:nth-child(2)`); !strings.Contains(got, "please write version two") || !strings.Contains(got, "1 modified") {
		t.Fatalf("the second rewind point reads %q", got)
	}
	p.Shot("rewind-dialog")
	p.Run(chromedp.Click(`#rewind-dialog button[data-turn="2"]`))
	p.WaitFor(`!document.querySelector("#rw-result").hidden`)
	if got := readFile(t, file); got != "version one\n" {
		t.Fatalf("after rewinding to before turn 2 a.txt holds %q", got)
	}
	if got := p.Text("#rw-result"); !strings.Contains(got, "a.txt") {
		t.Fatalf("the rewind's report reads %q", got)
	}
	p.Run(chromedp.Click(`#rw-close`))
	p.WaitFor(`!document.querySelector("#rewind-dialog") || !document.querySelector("#rewind-dialog").open`)

	// The timeline says so, marks turn 2 as rewound (turn 1 stays), and the
	// composer holds turn 2's prompt again.
	p.WaitFor(`[...document.querySelectorAll("#timeline .note")].some(n => n.textContent.includes("Rewound code and conversation to before turn 2"))`)
	p.WaitFor(`document.querySelector("#timeline section.turn[data-turn='2']").classList.contains("rewound")`)
	if p.Count(`#timeline section.turn[data-turn='1'].rewound`) != 0 {
		t.Fatal("turn 1 is marked rewound")
	}
	if got := chrometest.Eval[string](p, `document.querySelector("#prompt").value`); got != "please write version two" {
		t.Fatalf("the composer holds %q, want the rewound turn's prompt", got)
	}
	p.Shot("rewound")

	// The next turn's request no longer carries turn 2.
	p.Run(chromedp.Evaluate[chromedp.Void](`document.querySelector("#prompt").value = ""`))
	send(p, "say hi after the rewind")
	p.WaitFor(`document.querySelector("#timeline").textContent.includes("hello from the scripted model")`)
	idle(p)
	if req := w.lastRequest().Text(); strings.Contains(req, "version two") || !strings.Contains(req, "version one") {
		t.Fatalf("the request after the rewind: %q", req)
	}

	// Someone else edits a.txt: a code rewind to before turn 1 refuses,
	// shows their change, and changes nothing until the user overwrites.
	if err := os.WriteFile(file, []byte("the user's own words\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.Run(chromedp.Click("#rewind"))
	p.WaitFor(`document.querySelector('#rewind-dialog button[data-turn="1"]')`)
	p.Run(chromedp.SetValue("#rw-scope", "code"), chromedp.Click(`#rewind-dialog button[data-turn="1"]`))
	p.WaitFor(`document.querySelector("#rewind-dialog .rw-conflicts:not([hidden]) .rw-conflict")`)
	if got := p.Text("#rewind-dialog .rw-conflicts"); !strings.Contains(got, "a.txt") || !strings.Contains(got, "the user's own words") {
		t.Fatalf("the conflict reads %q", got)
	}
	if got := readFile(t, file); got != "the user's own words\n" {
		t.Fatalf("a refused rewind changed a.txt: %q", got)
	}
	p.Shot("rewind-conflict")
	p.Run(chromedp.Click(`#rewind-dialog .rw-conflicts button[data-choice="force"]`))
	p.WaitFor(`!document.querySelector("#rw-result").hidden && document.querySelector("#rw-result").textContent.includes("a.txt")`)
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("after overwriting, a.txt (created in turn 1) is still there: %v", err)
	}
	p.NoErrors()
}

// TestWebApproveWithRule: approving with the suggested rule allows the
// call and what the rule covers for the rest of the session — the next
// matching call runs without asking (its card says which rule let it)
// while a different one still asks.
func TestWebApproveWithRule(t *testing.T) {
	w := startWeb(t)
	p, _ := w.openSession(t, "default")
	other, _ := filepath.EvalSymlinks(t.TempDir())
	far, _ := filepath.EvalSymlinks(t.TempDir())
	for _, f := range []string{filepath.Join(other, "one.txt"), filepath.Join(other, "two.txt"), filepath.Join(far, "three.txt")} {
		if err := os.WriteFile(f, []byte("CONTENT OF "+filepath.Base(f)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := "Read(/" + other + "/**)"

	send(p, "READ-1 "+filepath.Join(other, "one.txt"))
	rule := `.card[data-call='toolu_read1'] .approval button[data-answer='allow_session']`
	p.WaitFor(`document.querySelector(` + js(rule) + `)`)
	if got := chrometest.Eval[string](p, `document.querySelector(`+js(rule)+`).dataset.rule`); got != want {
		t.Fatalf("the suggested rule is %q, want %q", got, want)
	}
	p.Shot("rule-suggested")
	p.Run(chromedp.Click(rule))
	p.WaitFor(`document.querySelector(".card[data-call='toolu_read1']").dataset.state === "done"`)
	if got := p.Text(".card[data-call='toolu_read1'] .gate-answer"); !strings.Contains(got, "Allowed for this session") || !strings.Contains(got, want) {
		t.Fatalf("the card's answer reads %q", got)
	}
	idle(p)

	// A file the rule covers: no question, and the card names the rule.
	send(p, "READ-2 "+filepath.Join(other, "two.txt"))
	p.WaitFor(`document.querySelector(".card[data-call='toolu_read2']") && document.querySelector(".card[data-call='toolu_read2']").dataset.state === "done"`)
	if n := p.Count(`.card[data-call='toolu_read2'] .approval`); n != 0 {
		t.Fatal("the call the rule covers asked")
	}
	if got := p.Text(".card[data-call='toolu_read2'] .gate-note"); !strings.Contains(got, "Allowed by rule") || !strings.Contains(got, want) {
		t.Fatalf("the covered call's note reads %q", got)
	}
	idle(p)
	p.Shot("rule-covered")

	// A file elsewhere still asks.
	send(p, "READ-3 "+filepath.Join(far, "three.txt"))
	p.WaitFor(`document.querySelector(".card[data-call='toolu_read3'] .approval button[data-answer='allow']")`)
	p.Shot("rule-other-asks")
	p.Run(chromedp.Click(".card[data-call='toolu_read3'] .approval button[data-answer='deny']"))
	p.WaitFor(`document.querySelector(".card[data-call='toolu_read3'] .gate-answer.deny")`)
	idle(p)
	p.NoErrors()
}
