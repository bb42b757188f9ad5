package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/dshq/dsh/internal/chrometest"
	"github.com/dshq/dsh/internal/dshtest"
	"github.com/dshq/dsh/internal/fakeanthropic"
	"github.com/dshq/dsh/serve/client"
	"github.com/dshq/dsh/session"
)

// webModel is the scripted model behind the web UI tests: what it answers
// depends on the prompt (or, after a tool ran, on the call's id), and two
// of its answers wait, part-streamed, until the test lets them go on.
type webModel struct {
	dir string

	mu     sync.Mutex
	stream chan struct{} // "stream": released by the test
	slow   chan struct{} // "slow" and "wait": released at the test's end
}

const streamedAnswer = "# Streaming answer\n\nThe first half of the answer arrives **now**; " +
	"the second half arrives later.\n\n```go\nfunc main() { println(\"hi\") }\n```\n\nAll done: FINAL-WORDS."

func (m *webModel) hold(ch *chan struct{}) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if *ch == nil {
		*ch = make(chan struct{})
	}
	return *ch
}

func (m *webModel) release(ch *chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if *ch == nil {
		*ch = make(chan struct{})
	}
	select {
	case <-*ch:
	default:
		close(*ch)
	}
}

func (m *webModel) reply(req fakeanthropic.Request) fakeanthropic.Reply {
	last := req.Messages[len(req.Messages)-1]
	for _, b := range last.Content {
		if b.Type != "tool_result" {
			continue
		}
		switch b.ToolUseID {
		case "toolu_edit":
			return fakeanthropic.Reply{Text: "The notes are written."}
		case "toolu_cmd":
			return fakeanthropic.Reply{Text: "Understood: I will not run it."}
		case "toolu_task":
			return fakeanthropic.Reply{Text: "The subagent reported back."}
		case "toolu_childls":
			return fakeanthropic.Reply{Text: "child finished: CHILD-ANSWER"}
		case "toolu_evil":
			return fakeanthropic.Reply{Text: hostile, Chunks: 3}
		}
		return fakeanthropic.Reply{Text: "done"}
	}
	text := req.LastUserText()
	switch {
	case strings.Contains(text, "CHILD-TASK"):
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_childls", Name: "ls", Input: map[string]string{"path": m.dir}}}}
	case strings.Contains(text, "please stream long"):
		return fakeanthropic.Reply{Text: longAnswer, Chunks: 60, Hold: m.hold(&m.stream)}
	case strings.Contains(text, "please stream"):
		return fakeanthropic.Reply{Text: streamedAnswer, Chunks: 8, Hold: m.hold(&m.stream), InputTokens: 1200, OutputTokens: 300, CacheReadTokens: 3600}
	case strings.Contains(text, "please edit"):
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_edit", Name: "write",
			Input: map[string]string{"file_path": filepath.Join(m.dir, "notes.txt"), "content": "first line\nsecond line\n"}}}}
	case strings.Contains(text, "please run"):
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_cmd", Name: "bash",
			Input: map[string]any{"dangerouslyDisableSandbox": true, "command": "rm -rf build && touch " + filepath.Join(m.dir, "ran.txt"), "description": "clean the build"}}}}
	case strings.Contains(text, "please delegate"):
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_task", Name: "task",
			Input: map[string]string{"description": "look around", "prompt": "CHILD-TASK: list the workspace"}}}}
	case strings.Contains(text, "STEER-NOW"):
		return fakeanthropic.Reply{Text: "I read the steering message."}
	case strings.Contains(text, "please be slow"), strings.Contains(text, "please wait"):
		return fakeanthropic.Reply{Text: "slowly answering: the first part, then the rest", Chunks: 4, Hold: m.hold(&m.slow)}
	case strings.Contains(text, "please print slowly"):
		// Lines over time, a secret among them, then it waits for the
		// test's gate file: the card must show the lines while it runs.
		// The secret is split by an empty quote, so the shell prints it
		// but the command (recorded in the log) does not carry it.
		cmd := "for i in 1 2 3; do echo LIVE-LINE-$i; sleep 0.2; done; echo key=" + secretKey[:8] + "''" + secretKey[8:] +
			"; while [ ! -e " + filepath.Join(m.dir, "gate") + " ]; do sleep 0.05; done; echo AFTER-GATE"
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_live", Name: "bash",
			Input: map[string]any{"command": cmd, "description": "print slowly"}}}}
	case strings.Contains(text, "please write version one"):
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_v1", Name: "write",
			Input: map[string]string{"file_path": filepath.Join(m.dir, "a.txt"), "content": "version one\n"}}}}
	case strings.Contains(text, "please write version two"):
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_v2", Name: "bash",
			Input: map[string]any{"command": "printf 'version two\\n' > a.txt", "description": "rewrite a.txt"}}}}
	case strings.HasPrefix(text, "RULE-"):
		// RULE-<n> <command>: run the command outside the sandbox, so the
		// permission rules (not the sandbox) decide whether it asks.
		n, cmd, _ := strings.Cut(text, " ")
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_" + strings.ToLower(strings.ReplaceAll(n, "-", "")), Name: "bash",
			Input: map[string]any{"dangerouslyDisableSandbox": true, "command": cmd, "description": n}}}}
	case strings.HasPrefix(text, "READ-"):
		n, path, _ := strings.Cut(text, " ")
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_" + strings.ToLower(strings.ReplaceAll(n, "-", "")), Name: "read",
			Input: map[string]any{"file_path": strings.TrimSpace(path)}}}}
	case strings.Contains(text, "please be hostile"):
		out := strings.ReplaceAll(hostile, "'", `'"'"'`)
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_evil", Name: "bash",
			Input: map[string]string{"command": "printf '%s' '" + out + "'", "description": "<b onmouseover=\"window.__pwned='desc'\">evil</b>"}}}}
	}
	return fakeanthropic.Reply{Text: "hello from the scripted model"}
}

// hostile is what a model or a tool could print to take over the page:
// each active part would set window.__pwned if it ran.
const hostile = "<script>window.__pwned='script'</script>\n\n" +
	"<img src=x onerror=\"window.__pwned='img'\">\n\n" +
	"[click me](javascript:window.__pwned='link') and <a href=\"javascript:window.__pwned='a'\">raw</a>\n\n" +
	"![pic](javascript:window.__pwned='pic')\n\n" +
	"<iframe srcdoc=\"<script>parent.__pwned='frame'</script>\"></iframe>\n\n" +
	"\x1b[31mred\x1b[0m \x1b]0;title\x07 \x1b]8;;javascript:window.__pwned='osc8'\x07osc link\x1b]8;;\x07\n"

// webServer is a dsh serve with the web model, one workspace and a full
// token.
type webServer struct {
	e     *dshtest.Env
	p     *proc
	model *webModel
	ws    string
	token string
}

func startWeb(t *testing.T) *webServer {
	t.Helper()
	m := &webModel{}
	e := dshtest.New(t, "..", m.reply)
	root := t.TempDir()
	ws := filepath.Join(root, "proj")
	mkdirs(t, ws)
	ws, _ = filepath.EvalSymlinks(ws)
	m.dir = ws
	tok := token(t, e, "alice")
	p := startServe(t, e, nil, "--root", root)
	t.Cleanup(func() {
		m.release(&m.stream)
		m.release(&m.slow)
	})
	return &webServer{e: e, p: p, model: m, ws: ws, token: tok}
}

// login opens the UI in the page and logs in with the token through the
// form.
func (w *webServer) login(p *chrometest.Page) {
	p.T.Helper()
	p.Run(chromedp.Navigate(w.p.URL + "/ui"))
	p.WaitFor(`document.querySelector("form[action='/ui/login'] #token")`)
	p.Run(chromedp.SendKeys("#token", w.token), chromedp.Submit("#token"))
	p.WaitFor(`document.documentElement.dataset.ready === "1" && document.querySelector("#sessions")`)
}

// js quotes s as a JavaScript string.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// send types a message into the prompt box and sends it with Ctrl+Enter.
func send(p *chrometest.Page, text string) {
	p.T.Helper()
	p.Run(chromedp.Focus("#prompt"), chromedp.SendKeys("#prompt", text))
	p.Run(chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
}

// lastRequestText is the text of the model's latest request (tool results
// included).
func (w *webServer) lastRequest() fakeanthropic.Request {
	reqs := w.e.Model.Requests()
	return reqs[len(reqs)-1]
}

func TestWebUI(t *testing.T) {
	w := startWeb(t)
	p := chrometest.New(t, 1280, 800)

	// Log in through the form: the cookie is HttpOnly, so no script sees it.
	w.login(p)
	if got := chrometest.Eval[string](p, `document.cookie`); got != "" {
		t.Fatalf("the page's scripts see the cookie %q", got)
	}
	if who := p.Text(".topbar .who"); !strings.Contains(who, "alice") {
		t.Fatalf("the top bar says %q, want the token's name", who)
	}
	p.Shot("logged-in")

	// Start a session from the UI in the allowed workspace; its first
	// answer streams: half of it shows while the model still holds the
	// rest, then the whole.
	p.Run(chromedp.Click("#new-session"))
	p.WaitFor(`document.querySelector("#ns-workspace option")`)
	if got := chrometest.Eval[string](p, `document.querySelector("#ns-workspace").value`); got != w.ws && !strings.HasPrefix(w.ws, got) {
		t.Fatalf("the workspace choice is %q, want the server's root", got)
	}
	p.Run(chromedp.SendKeys("#ns-subdir", "proj"), chromedp.SendKeys("#ns-prompt", "please stream an answer"), chromedp.Click("#ns-start"))
	p.WaitFor(`document.querySelector("#timeline .msg.assistant") && document.querySelector("#timeline .msg.assistant").textContent.includes("arrives now")`)
	if got := p.Text("#timeline .msg.assistant"); strings.Contains(got, "FINAL-WORDS") {
		t.Fatalf("the whole answer showed before the model sent it: %q", got)
	}
	p.WaitFor(`document.querySelector("#view-status").dataset.status === "running"`)
	if n := p.Count(`#timeline .msg.assistant h1`); n != 1 {
		t.Fatalf("the streamed Markdown heading is not rendered as one h1 (%d)", n)
	}
	p.Shot("streaming")
	w.model.release(&w.model.stream)
	p.WaitFor(`document.querySelector("#timeline .msg.assistant").textContent.includes("FINAL-WORDS")`)
	p.WaitFor(`document.querySelector("#view-status").dataset.status !== "running"`)
	if n := p.Count(`#timeline .msg.assistant .codeblock .tok-kw`); n == 0 {
		t.Error("the answer's Go code is not highlighted")
	}
	if n := p.Count(`#timeline .msg.assistant script, #timeline .msg.assistant h1 + h1`); n != 0 {
		t.Errorf("the finished answer rendered oddly (%d)", n)
	}
	id := chrometest.Eval[string](p, `decodeURIComponent(location.hash.slice(4))`)
	// The list shows it, and filtering by text narrows the list.
	p.WaitFor(fmt.Sprintf(`document.querySelector(".session-item[data-id='" + %s + "']")`, js(id)))
	p.Shot("streamed")

	// Approve an edit: the approval card, then the diff card.
	send(p, "please edit the notes")
	p.WaitFor(`document.querySelector(".card[data-call='toolu_edit'] .approval button[data-answer='allow']")`)
	p.WaitFor(`document.querySelector("#view-status").dataset.status === "waiting"`)
	if _, err := os.Stat(filepath.Join(w.ws, "notes.txt")); err == nil {
		t.Fatal("the file was written before the approval")
	}
	p.Shot("approval")
	p.Run(chromedp.Click(".card[data-call='toolu_edit'] .approval button[data-answer='allow']"))
	p.WaitFor(`document.querySelector(".card[data-call='toolu_edit']").dataset.state === "done"`)
	p.WaitFor(`document.querySelector(".card[data-call='toolu_edit'] .card-result table.diff")`)
	if got := p.Text(".card[data-call='toolu_edit'] .card-badges"); !strings.Contains(got, "+2") || !strings.Contains(got, "new file") {
		t.Fatalf("the diff card's badges read %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(w.ws, "notes.txt")); err != nil || string(b) != "first line\nsecond line\n" {
		t.Fatalf("after allowing: %v %q", err, b)
	}
	if got := p.Text(".card[data-call='toolu_edit'] table.diff"); !strings.Contains(got, "second line") {
		t.Fatalf("the diff card shows %q", got)
	}
	if got := p.Text(".card[data-call='toolu_edit'] .gate-answer"); !strings.Contains(got, "Allowed once") {
		t.Fatalf("the card's answer reads %q", got)
	}
	p.WaitFor(`document.querySelector("#view-status").dataset.status !== "running" && document.querySelector("#view-status").dataset.status !== "waiting"`)
	p.Shot("diff")

	// Deny a command with a reason: the model's next request carries it.
	send(p, "please run the cleanup")
	p.WaitFor(`document.querySelector(".card[data-call='toolu_cmd'] .approval input.deny-reason")`)
	p.Run(chromedp.SendKeys(".card[data-call='toolu_cmd'] .approval input.deny-reason", "never delete the build dir"),
		chromedp.Click(".card[data-call='toolu_cmd'] .approval button[data-answer='deny']"))
	p.WaitFor(`document.querySelector(".card[data-call='toolu_cmd'] .gate-answer.deny")`)
	p.WaitFor(`document.querySelector("#timeline").textContent.includes("I will not run it")`)
	if got := p.Text(".card[data-call='toolu_cmd'] .gate-reason"); got != "never delete the build dir" {
		t.Fatalf("the denial's reason shows as %q", got)
	}
	var denial string
	for _, b := range w.lastRequest().ToolResults() {
		if b.ToolUseID == "toolu_cmd" {
			denial = fakeanthropic.Request{Messages: []fakeanthropic.Message{{Role: "user", Content: fakeanthropic.Content{b}}}}.Text()
		}
	}
	if !strings.Contains(denial, "never delete the build dir") {
		t.Fatalf("the model's next request does not carry the reason: %q", denial)
	}
	if _, err := os.Stat(filepath.Join(w.ws, "ran.txt")); err == nil {
		t.Fatal("the denied command ran")
	}
	p.Shot("denied")

	// Steer while the agent works: the button says so, and the model's
	// next request has the steering message.
	send(p, "please be slow")
	p.WaitFor(`document.querySelector("#send").textContent === "Steer"`)
	p.WaitFor(`[...document.querySelectorAll("#timeline .msg.assistant")].some(n => n.textContent.includes("slowly answering"))`)
	send(p, "STEER-NOW: mention the tests")
	p.WaitFor(`document.querySelector("#composer-note").textContent.includes("Steering message queued")`)
	p.Shot("steering")
	w.model.release(&w.model.slow)
	p.WaitFor(`document.querySelector("#timeline .msg.steer") && document.querySelector("#timeline").textContent.includes("I read the steering message")`)
	if got := p.Text("#timeline .msg.steer .bubble"); got != "STEER-NOW: mention the tests" {
		t.Fatalf("the steering bubble reads %q", got)
	}
	if !strings.Contains(w.lastRequest().Text(), "STEER-NOW: mention the tests") {
		t.Fatal("the model's request after steering lacks the steering message")
	}
	p.WaitFor(`document.querySelector("#send").textContent === "Send"`)

	// Cancel a turn the model never finishes.
	w.model.mu.Lock()
	w.model.slow = nil
	w.model.mu.Unlock()
	send(p, "please wait forever")
	p.WaitFor(`!document.querySelector("#cancel").disabled`)
	p.Run(chromedp.Click("#cancel"))
	p.WaitFor(`document.querySelector("#timeline .turn-end.aborted")`)
	p.WaitFor(`document.querySelector("#cancel").disabled && document.querySelector("#send").textContent === "Send"`)
	p.Shot("cancelled")

	// Switch the permission mode from the head of the view.
	p.Run(chromedp.SetValue("#mode", "acceptEdits"), chromedp.Evaluate[chromedp.Void](`document.querySelector("#mode").dispatchEvent(new Event("change"))`))
	p.WaitFor(`document.querySelector("#composer-note").textContent === "Permission mode: acceptEdits"`)
	if got, err := client.New(w.p.URL, w.token).Session(context.Background(), session.ID(id)); err != nil || got.PermissionMode != "acceptEdits" {
		t.Fatalf("after the switch: %v %+v", err, got)
	}

	// A subagent: its activity nested under the task call, and a link to
	// the child's own view, which links back.
	send(p, "please delegate the survey")
	p.WaitFor(`document.querySelector(".card[data-call='toolu_task'] .approval button[data-answer='allow']") || document.querySelector(".card[data-call='toolu_task'] .sub-open")`)
	if p.Count(`.card[data-call='toolu_task'] .approval button[data-answer='allow']`) > 0 {
		p.Run(chromedp.Click(".card[data-call='toolu_task'] .approval button[data-answer='allow']"))
	}
	p.WaitFor(`document.querySelector(".card[data-call='toolu_task'] .sub-call .card-label")`)
	p.WaitFor(`document.querySelector(".card[data-call='toolu_task'] .sub-text") && document.querySelector(".card[data-call='toolu_task'] .sub-text").textContent.includes("CHILD-ANSWER")`)
	p.WaitFor(`document.querySelector("#timeline").textContent.includes("The subagent reported back")`)
	p.Run(chromedp.ScrollIntoView(".card[data-call='toolu_task']"))
	p.Shot("subagent")
	p.Run(chromedp.Click(".card[data-call='toolu_task'] .sub-open"))
	p.WaitFor(`location.hash.startsWith("#/s/") && decodeURIComponent(location.hash.slice(4)) !== ` + js(id))
	p.WaitFor(`document.querySelector("#parent-link") && document.querySelector("#timeline .card[data-call='toolu_childls']")`)
	p.WaitFor(`document.querySelector("#timeline").textContent.includes("CHILD-ANSWER")`)
	p.Shot("child")
	p.Run(chromedp.Click("#parent-link"))
	p.WaitFor(`decodeURIComponent(location.hash.slice(4)) === ` + js(id) + ` && document.querySelector(".card[data-call='toolu_task']")`)

	// The usage panel: a bar per turn, and the first turn's cache hits.
	p.Run(chromedp.Click("#usage-toggle"))
	p.WaitFor(`!document.querySelector("#usage-panel").hidden && document.querySelector("#usage-panel svg.usage-chart g.bar")`)
	turns := p.Count(`#usage-panel svg.usage-chart g.bar`)
	if turns < 5 {
		t.Fatalf("the usage chart has %d bars, want one per turn (at least 5)", turns)
	}
	if got := p.Text(`#usage-panel .usage-table tr[data-turn="1"]`); !strings.Contains(got, "75%") {
		t.Fatalf("turn 1 (3600 of 4800 input tokens from the cache) reads %q", got)
	}
	p.Shot("usage")
	p.Run(chromedp.KeyEvent("\x1b"))
	p.WaitFor(`document.querySelector("#usage-panel").hidden`)

	// Keyboard: / searches; the list narrows to what matches.
	p.Run(chromedp.KeyEvent("/"))
	p.WaitFor(`document.activeElement === document.querySelector("#search")`)
	p.Run(chromedp.SendKeys("#search", "no session is called this"))
	p.WaitFor(`document.querySelectorAll(".session-item").length === 0`)
	p.Run(chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector("#search"); s.value = ""; s.dispatchEvent(new Event("input")); })()`))
	p.WaitFor(`document.querySelectorAll(".session-item").length === 1`)

	// A phone-width viewport and the dark theme.
	p.Run(chromedp.EmulateViewport(390, 844), chromedp.Evaluate[chromedp.Void](`document.documentElement.setAttribute("data-theme", "dark")`))
	p.WaitFor(`document.querySelector(".sidebar").offsetParent === null && document.querySelector("#prompt").getBoundingClientRect().right <= 390`)
	p.Shot("phone-dark")
	if wide := chrometest.Eval[string](p, `(() => { const out = []; for (const n of document.querySelectorAll("body *")) { const r = n.getBoundingClientRect(); if (r.right > 391 && n.offsetParent !== null) out.push(n.tagName + "." + n.className + " " + Math.round(r.right)); } return out.slice(0, 8).join("; "); })()`); wide != "" {
		t.Errorf("elements past the right edge at 390 px: %s", wide)
	}
	p.NoErrors()
}

// TestWebUIHostileContent: a model's answer and a tool's output full of
// markup, javascript: links and terminal escapes stay text in the live
// view; no script of theirs runs.
func TestWebUIHostileContent(t *testing.T) {
	w := startWeb(t)
	p, _ := w.openSession(t, "bypassPermissions")
	send(p, `<img src=x onerror="window.__pwned='prompt'"> please be hostile`)
	p.WaitFor(`document.querySelector(".card[data-call='toolu_evil']") && document.querySelector(".card[data-call='toolu_evil']").dataset.state === "done"`)
	p.WaitFor(`document.querySelector("#timeline").textContent.includes("click me")`)
	p.Run(chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("#timeline details").forEach(d => d.open = true); document.querySelectorAll("#timeline a").forEach(a => { if (!a.href.startsWith("http")) a.click(); })`))
	p.Shot("hostile")
	if got := chrometest.Eval[string](p, `String(window.__pwned)`); got != "undefined" {
		t.Fatalf("a hostile string ran: window.__pwned = %q", got)
	}
	for _, sel := range []string{"#timeline script", "#timeline img", "#timeline iframe", "#timeline style", "a[href^='javascript']", "[onerror]", "[onmouseover]", "#timeline b"} {
		if n := p.Count(sel); n != 0 {
			t.Errorf("%d elements match %s", n, sel)
		}
	}
	body := chrometest.Eval[string](p, `document.querySelector("#timeline").textContent`)
	for _, want := range []string{"<script>window.__pwned='script'</script>", `<img src=x onerror="window.__pwned='img'">`, "please be hostile", `<b onmouseover="window.__pwned='desc'">evil</b>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the view does not show %q as text", want)
		}
	}
	if strings.ContainsRune(body, 0x1b) || strings.ContainsRune(body, 0x07) {
		t.Error("raw escape or bell characters reached the page")
	}
	if n := p.Count(".card[data-call='toolu_evil'] pre.out .ansi-fg1"); n == 0 {
		t.Error("the tool output's ANSI colour is not rendered as a span")
	}
	if !slices.Contains(p.Errors(), "") && len(p.Errors()) > 0 {
		// Refused hrefs throw inside the renderer by design only when a
		// caller passes one; none should reach the console here.
		t.Errorf("the page reported errors: %v", p.Errors())
	}
}

// TestWebLiveToolOutput: a running command's output reaches its card
// while it runs (the server forwards tool progress on the event stream),
// scrubbed of the server's secrets.
func TestWebLiveToolOutput(t *testing.T) {
	w := startWeb(t)
	p, _ := w.openSession(t, "bypassPermissions")
	send(p, "please print slowly")
	live := `.card[data-call='toolu_live'] pre.out.live`
	p.WaitFor(`document.querySelector(` + js(live) + `) && document.querySelector(` + js(live) + `).textContent.includes("LIVE-LINE-3") && document.querySelector(` + js(live) + `).textContent.includes("key=")`)
	if st := chrometest.Eval[string](p, `document.querySelector(".card[data-call='toolu_live']").dataset.state`); st == "done" {
		t.Fatalf("the card is %q before the command could end", st)
	}
	got := p.Text(live)
	if strings.Contains(got, secretKey) {
		t.Errorf("the live output shows the server's secret: %q", got)
	}
	if strings.Contains(got, "AFTER-GATE") {
		t.Fatalf("the command went past its gate: %q", got)
	}
	p.Shot("live-output")
	if err := os.WriteFile(filepath.Join(w.ws, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p.WaitFor(`document.querySelector(".card[data-call='toolu_live']").dataset.state === "done"`)
	p.WaitFor(`document.querySelector(".card[data-call='toolu_live']").textContent.includes("AFTER-GATE")`)
}

// TestWebLoginAndCSRF: the log-in exchange and the CSRF rule, over plain
// HTTP as a browser's forged request would arrive.
func TestWebLoginAndCSRF(t *testing.T) {
	w := startWeb(t)
	ct := newContract(t, w.p.URL)
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Transport: ct, Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path, body string, hdr map[string]string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, w.p.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}

	// Without a cookie, /ui is the log-in form, under a policy that runs
	// no script; the API refuses.
	resp, body := do("GET", "/ui", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `action="/ui/login"`) || strings.Contains(body, "dsh-boot") {
		t.Fatalf("GET /ui logged out: %d %.300s", resp.StatusCode, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Fatalf("the log-in form's policy: %q", csp)
	}
	if resp, _ := do("GET", "/v1/sessions", "", nil); resp.StatusCode != 401 {
		t.Fatalf("the API without a token or cookie: %d", resp.StatusCode)
	}

	// A wrong token, and a log-in forged from another origin, are refused
	// and set no cookie.
	if resp, body := do("POST", "/ui/login", "token=dsh_nope", form); resp.StatusCode != 401 || !strings.Contains(body, "not valid") || len(resp.Cookies()) != 0 {
		t.Fatalf("log-in with a wrong token: %d %v", resp.StatusCode, resp.Cookies())
	}
	evil := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}
	if resp, _ := do("POST", "/ui/login", "token="+url.QueryEscape(w.token), evil); resp.StatusCode != 403 || len(resp.Cookies()) != 0 {
		t.Fatalf("a cross-site log-in: %d %v", resp.StatusCode, resp.Cookies())
	}

	// The real log-in: an HttpOnly, SameSite=Strict cookie and a redirect.
	resp, _ = do("POST", "/ui/login", "token="+url.QueryEscape(w.token), form)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui" {
		t.Fatalf("log-in: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Value == "" || strings.Contains(cookies[0].Value, w.token) {
		t.Fatalf("the log-in cookie: %+v", cookies)
	}
	resp, body = do("GET", "/ui", "", nil)
	m := regexp.MustCompile(`"csrf":"([^"]+)"`).FindStringSubmatch(body)
	if resp.StatusCode != 200 || m == nil {
		t.Fatalf("GET /ui logged in: %d %.300s", resp.StatusCode, body)
	}
	csrf := m[1]
	if strings.Contains(body, w.token) {
		t.Fatal("the page carries the bearer token")
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'sha256-", "connect-src 'self'", "require-trusted-types-for 'script'", "default-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("the UI's policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("the UI's policy allows inline or eval: %q", csp)
	}

	// Reading with the cookie needs no CSRF token; changing anything does.
	if resp, body := do("GET", "/v1/whoami", "", nil); resp.StatusCode != 200 || !strings.Contains(body, `"alice"`) {
		t.Fatalf("whoami with the cookie: %d %s", resp.StatusCode, body)
	}
	create := `{"workspace":` + js(w.ws) + `}`
	jsonHdr := map[string]string{"Content-Type": "application/json"}
	if resp, body := do("POST", "/v1/sessions", create, jsonHdr); resp.StatusCode != 403 || !strings.Contains(body, "X-CSRF-Token") {
		t.Fatalf("a state-changing request without the CSRF token: %d %s", resp.StatusCode, body)
	}
	if resp, _ := do("POST", "/v1/sessions", create, map[string]string{"Content-Type": "application/json", "X-CSRF-Token": csrf + "x"}); resp.StatusCode != 403 {
		t.Fatalf("with a wrong CSRF token: %d", resp.StatusCode)
	}
	if resp, _ := do("POST", "/v1/sessions", create, map[string]string{"Content-Type": "application/json", "X-CSRF-Token": csrf, "Origin": "http://evil.example"}); resp.StatusCode != 403 {
		t.Fatalf("with the CSRF token from another origin: %d", resp.StatusCode)
	}
	if list, _ := client.New(w.p.URL, w.token).ListSessions(context.Background(), nil); len(list) != 0 {
		t.Fatalf("a refused request made a session: %d", len(list))
	}
	resp, body = do("POST", "/v1/sessions", create, map[string]string{"Content-Type": "application/json", "X-CSRF-Token": csrf, "Origin": w.p.URL, "Sec-Fetch-Site": "same-origin"})
	if resp.StatusCode != 201 {
		t.Fatalf("with the CSRF token: %d %s", resp.StatusCode, body)
	}

	// Logging out ends the log-in on the server: the old cookie is dead.
	old := jar.Cookies(mustURL(t, w.p.URL))
	if resp, _ := do("POST", "/ui/logout", "", map[string]string{"X-CSRF-Token": csrf}); resp.StatusCode != 204 {
		t.Fatalf("log-out: %d", resp.StatusCode)
	}
	jar.SetCookies(mustURL(t, w.p.URL), old)
	if resp, _ := do("GET", "/v1/whoami", "", nil); resp.StatusCode != 401 {
		t.Fatalf("the cookie after log-out: %d", resp.StatusCode)
	}
	if resp, body := do("GET", "/ui", "", nil); resp.StatusCode != 200 || !strings.Contains(body, `action="/ui/login"`) {
		t.Fatalf("/ui after log-out: %d", resp.StatusCode)
	}
	var ui []string
	for _, op := range ct.missing() {
		if strings.Contains(op, " /ui") {
			ui = append(ui, op)
		}
	}
	if len(ui) > 0 {
		t.Fatalf("the UI's operations never exercised: %v", ui)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
