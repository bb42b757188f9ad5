package browser

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/dshq/dsh/internal/chrometest"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
)

// hostile is what a model or a tool could print to take over the page: each
// active part would set window.__pwned if it ran.
const hostile = "<script>window.__pwned='script'</script>\n\n" +
	"<img src=x onerror=\"window.__pwned='img'\">\n\n" +
	"[click me](javascript:window.__pwned='link') and <a href=\"javascript:window.__pwned='a'\">raw</a>\n\n" +
	"![pic](javascript:window.__pwned='pic') ![remote](http://127.0.0.1:9/x.png)\n\n" +
	"<iframe srcdoc=\"<script>parent.__pwned='frame'</script>\"></iframe> <style>body{display:none}</style>\n\n" +
	"\x1b[31mred\x1b[0m \x1b]0;title\x07 \x1b]8;;javascript:window.__pwned='osc8'\x07osc link\x1b]8;;\x07\n\n" +
	"```html\n<script>window.__pwned='code'</script>\n```\n"

func TestHostileContentIsInert(t *testing.T) {
	u := llm.Usage{InputTokens: 10, OutputTokens: 10}
	out := strings.ReplaceAll(hostile, "'", `'"'"'`)
	w := newWorld(t,
		reply("", "", u, scripted.ToolCall{ID: "c-evil", Name: "bash", Args: map[string]any{"command": "printf '%s' '" + out + "'", "description": "<b onmouseover=alert(1)>evil</b>"}}),
		reply("<script>window.__pwned='reasoning'</script>", hostile, u),
	)
	id := w.run("<img src=x onerror=\"window.__pwned='prompt'\"> please")
	root, kids := w.read(id)
	path, _ := writeTrace(t, root, kids, TraceOptions{})
	p := chrometest.New(t, 1280, 800)
	openFile(p, path)
	p.Run(chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("details").forEach(d => d.open = true); document.querySelectorAll(".card .card-head").forEach(h => h.click())`, chromedp.EvalAwaitPromise))
	// Clicking every link in the page would run a javascript: one.
	p.Run(chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("main a").forEach(a => { if (!a.href.startsWith("http")) a.click(); })`))
	p.Shot("hostile")

	if got := chrometest.Eval[string](p, `String(window.__pwned)`); got != "undefined" {
		t.Fatalf("a hostile string ran: window.__pwned = %q", got)
	}
	for _, sel := range []string{"main script", "main img", "main iframe", "main style", "a[href^='javascript']", "[onerror]", "[onmouseover]"} {
		if n := p.Count(sel); n != 0 {
			t.Errorf("%d elements match %s", n, sel)
		}
	}
	body := chrometest.Eval[string](p, `document.querySelector("main").textContent`)
	for _, want := range []string{"<script>window.__pwned='script'</script>", `<img src=x onerror="window.__pwned='img'">`, "click me", "please"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not show %q as text", want)
		}
	}
	if strings.ContainsRune(body, 0x1b) || strings.ContainsRune(body, 0x07) {
		t.Error("raw escape or bell characters reached the page")
	}
	if n := p.Count(".card[data-call='c-evil'] pre.out .ansi-fg1"); n == 0 {
		t.Error("the tool output's ANSI colour is not rendered as a span")
	}
	if got := chrometest.Eval[string](p, `document.title`); !strings.Contains(got, "<img") {
		t.Errorf("the title should show the prompt as text: %q", got)
	}
	p.NoErrors()
}
