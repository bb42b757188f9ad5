package serve_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dshq/dsh/internal/chrometest"
	"github.com/dshq/dsh/serve/client"
	"github.com/dshq/dsh/session"
)

// longAnswer is a long Markdown answer: paragraphs, a code block, a list
// and a table, streamed in many chunks.
var longAnswer = func() string {
	var b strings.Builder
	b.WriteString("# A long answer\n\n")
	for i := range 6 {
		b.WriteString("Paragraph " + string(rune('A'+i)) + " explains one more thing at some length, so that it wraps over more than one line in a 1280 pixel wide window and moves nothing above it.\n\n")
	}
	b.WriteString("```go\npackage main\n\nimport \"fmt\"\n\nfunc main() {\n\tfor i := 0; i < 3; i++ {\n\t\tfmt.Println(i)\n\t}\n}\n```\n\n")
	b.WriteString("- the first item\n- the second item, a little longer\n- the third item\n\n")
	b.WriteString("| name | value |\n|------|-------|\n| alpha | 1 |\n| beta | 22 |\n| gamma | 333 |\n\n")
	b.WriteString("All done: LONG-END.")
	return b.String()
}()

// layoutProbe records, at every change of the timeline, where each
// element that was already there sits in the scrolled content (so
// scrolling does not count, moving does), and collects Chromium's
// layout-shift entries not caused by input.
const layoutProbe = `(() => {
  const sc = document.querySelector('#scroller');
  const pos = (n) => n.getBoundingClientRect().top - sc.getBoundingClientRect().top + sc.scrollTop;
  window.__probe = {shifts: [], moved: [], mutations: 0, unpinned: 0};
  new PerformanceObserver((l) => { for (const e of l.getEntries()) if (!e.hadRecentInput) window.__probe.shifts.push(e.value); })
    .observe({type: 'layout-shift', buffered: false});
  const known = new Map();
  const note = () => {
    for (const n of document.querySelectorAll('#timeline > *, #timeline .msg.assistant .md > *')) {
      const y = pos(n);
      if (!known.has(n)) { known.set(n, y); continue; }
      if (Math.abs(known.get(n) - y) > 0.5 && n.isConnected) window.__probe.moved.push((n.className || n.tagName) + ' ' + known.get(n) + ' -> ' + y);
      known.set(n, y);
    }
  };
  note();
  new MutationObserver(() => {
    window.__probe.mutations++;
    requestAnimationFrame(() => {
      note();
      if (window.__probe.pin && sc.scrollHeight - sc.scrollTop - sc.clientHeight > 2) window.__probe.unpinned++;
    });
  }).observe(document.querySelector('#timeline'), {subtree: true, childList: true, characterData: true});
  return true;
})()`

type layoutReport struct {
	Shifts    []float64 `json:"shifts"`
	Moved     []string  `json:"moved"`
	Mutations int       `json:"mutations"`
	Unpinned  int       `json:"unpinned"`
}

// TestWebStreamNoLayoutShift: while a long Markdown answer streams, what is
// already on the page stays where it is (no layout-shift entries, no
// earlier element moving in the scrolled content), a reader at the bottom
// stays at the bottom, and a reader who scrolled up is not moved while
// the next answer streams.
func TestWebStreamNoLayoutShift(t *testing.T) {
	w := startWeb(t)
	p, id := w.openSession(t, "")
	// Earlier content above the streaming point.
	for i := range 3 {
		send(p, "hello there")
		p.WaitFor(fmt.Sprintf(`document.querySelectorAll("#timeline .msg.assistant").length === %d && document.querySelector("#view-status").dataset.status !== "running"`, i+1))
	}

	// At the bottom: the view follows the answer.
	chrometest.Eval[bool](p, layoutProbe)
	chrometest.Eval[bool](p, `window.__probe.pin = true`)
	send(p, "please stream long")
	p.WaitFor(`document.querySelectorAll("#timeline .msg.assistant").length === 4`)
	w.model.release(&w.model.stream)
	p.WaitFor(`document.querySelectorAll("#timeline .msg.assistant")[3].textContent.includes("LONG-END") && document.querySelector("#view-status").dataset.status !== "running"`)
	chrometest.Eval[bool](p, `window.__probe.settled = false; requestAnimationFrame(() => requestAnimationFrame(() => { window.__probe.settled = true; })); true`)
	p.WaitFor(`window.__probe.settled`)
	r := chrometest.Eval[layoutReport](p, `window.__probe`)
	p.Shot("long-streamed")
	t.Logf("%d timeline changes, %d layout-shift entries, %d moves", r.Mutations, len(r.Shifts), len(r.Moved))
	// The page renders streamed text once per frame, and the model holds
	// the second half back until released: at least two separate renders.
	if r.Mutations < 2 {
		t.Fatalf("the answer arrived in %d changes, too few to watch it stream", r.Mutations)
	}
	var cls float64
	for _, v := range r.Shifts {
		cls += v
	}
	if cls > 0.001 {
		t.Errorf("layout shift while streaming: cumulative %.4f over %d entries", cls, len(r.Shifts))
	}
	if len(r.Moved) > 0 {
		t.Errorf("elements already shown moved while the answer streamed: %v", r.Moved)
	}
	if r.Unpinned > 0 {
		t.Errorf("the view left the bottom %d times while the reader was there", r.Unpinned)
	}
	if n := p.Count(`#timeline .msg.assistant .codeblock, #timeline .msg.assistant table, #timeline .msg.assistant ul`); n < 3 {
		t.Fatalf("the long answer's code block, table and list are not all rendered (%d)", n)
	}

	// Scrolled up: another answer streams (sent from elsewhere, over the
	// API) and the reader's place does not move.
	chrometest.Eval[bool](p, `(() => { const sc = document.querySelector('#scroller'); sc.scrollTop = 200; sc.dispatchEvent(new Event('scroll'));
	  window.__probe.pin = false; window.__probe.tops = [];
	  new MutationObserver(() => requestAnimationFrame(() => window.__probe.tops.push(sc.scrollTop)))
	    .observe(document.querySelector('#timeline'), {subtree: true, childList: true, characterData: true});
	  return true; })()`)
	if _, err := client.New(w.p.URL, w.token).Send(context.Background(), session.ID(id), "please stream long again"); err != nil {
		t.Fatal(err)
	}
	p.WaitFor(`document.querySelectorAll("#timeline .msg.assistant").length === 5 && document.querySelectorAll("#timeline .msg.assistant")[4].textContent.includes("LONG-END") && document.querySelector("#view-status").dataset.status !== "running"`)
	chrometest.Eval[bool](p, `window.__probe.settled = false; requestAnimationFrame(() => requestAnimationFrame(() => { window.__probe.settled = true; })); true`)
	p.WaitFor(`window.__probe.settled`)
	tops := chrometest.Eval[[]float64](p, `window.__probe.tops`)
	if len(tops) == 0 {
		t.Fatal("no change of the timeline was seen while the second answer streamed")
	}
	for _, top := range tops {
		if top < 199 || top > 201 {
			t.Fatalf("the view moved from 200 while the reader was scrolled up: %v", tops)
		}
	}
	if r := chrometest.Eval[layoutReport](p, `window.__probe`); len(r.Moved) > 0 {
		t.Errorf("elements already shown moved while the second answer streamed: %v", r.Moved)
	}
}
