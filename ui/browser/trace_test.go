package browser

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/dshq/dsh/internal/chrometest"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/tool"
)

// reply is one scripted model call: optional reasoning and text, then tool
// calls, with usage figures.
func reply(reasoning, text string, u llm.Usage, calls ...scripted.ToolCall) scripted.Entry {
	var out []llm.Chunk
	i := 0
	if reasoning != "" {
		out = append(out, llm.StartChunk(i, llm.BlockReasoning))
		for _, part := range strings.SplitAfter(reasoning, " ") {
			out = append(out, llm.ReasoningChunk(i, part))
		}
		out = append(out, llm.EndChunk(i, llm.Reasoning(reasoning)))
		i++
	}
	if text != "" {
		out = append(out, llm.StartChunk(i, llm.BlockText))
		for _, part := range strings.SplitAfter(text, " ") {
			out = append(out, llm.TextChunk(i, part))
		}
		out = append(out, llm.EndChunk(i, llm.Text(text)))
		i++
	}
	finish := llm.FinishStop
	if len(calls) > 0 {
		finish = llm.FinishToolCalls
		for _, c := range calls {
			cc := scripted.CallChunks("", scripted.ToolCall{ID: c.ID, Name: c.Name, Args: c.Args})
			for _, ch := range cc {
				if ch.Type == llm.ChunkUsage || ch.Type == llm.ChunkFinish {
					continue
				}
				ch.Index += i
				out = append(out, ch)
			}
			i++
		}
	}
	return scripted.Entry{Chunks: append(out, llm.UsageChunk(u), llm.FinishChunk(finish))}
}

const answer = "## Fixed\n\nThe greeting had a **typo** (`wrold`). What I did:\n\n" +
	"1. Read `hello.go`\n2. Fixed the string\n3. Ran `go vet`\n\n" +
	"- [x] typo fixed\n- [ ] tests added\n\n" +
	"```go\nfunc main() {\n\tfmt.Println(\"Hello, world\") // fixed\n}\n```\n\n" +
	"| check | result |\n|---|---:|\n| vet | ok |\n| build | ok |\n\n" +
	"> Note: see [the Go docs](https://go.dev/doc/) for more.\n"

// richSession records a session that uses every kind of card: reasoning,
// a read, a plan, an approved edit, a denied command, a command with
// coloured output, a subagent, a Markdown answer, and a second turn.
func richSession(t testing.TB) (*world, TraceSession, []TraceSession) {
	t.Helper()
	u := func(in, out, cr, cw int) llm.Usage {
		return llm.Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: cr, CacheWriteTokens: cw}
	}
	todos := []map[string]string{
		{"content": "Read hello.go", "status": "completed"},
		{"content": "Fix the typo", "status": "in_progress", "activeForm": "Fixing the typo"},
		{"content": "Check the build", "status": "pending"},
	}
	w := newWorld(t,
		reply("The user wants the typo fixed. I should read the file first.", "I'll look at the file first.", u(1200, 40, 0, 1100),
			scripted.ToolCall{ID: "c-read", Name: "read", Args: map[string]any{"file_path": "hello.go"}}),
		reply("", "", u(150, 60, 1150, 0), scripted.ToolCall{ID: "c-plan", Name: "todo_write", Args: map[string]any{"todos": todos}}),
		reply("", "Fixing the string.", u(180, 50, 1300, 0),
			scripted.ToolCall{ID: "c-edit", Name: "edit", Args: map[string]any{"file_path": "hello.go", "old_string": "Hello, wrold", "new_string": "Hello, world"}}),
		reply("", "", u(200, 30, 1400, 0), scripted.ToolCall{ID: "c-rm", Name: "bash", Args: map[string]any{"command": "rm -rf build && go vet ./...", "description": "Clean and vet"}}),
		reply("", "", u(220, 30, 1500, 0), scripted.ToolCall{ID: "c-vet", Name: "bash", Args: map[string]any{"command": "printf '\\033[32mok\\033[0m  hello\\n'; echo done", "description": "Vet the package"}}),
		reply("", "Let me ask a helper to check the docs.", u(240, 40, 1600, 0),
			scripted.ToolCall{ID: "c-task", Name: "task", Args: map[string]any{"description": "Check the docs", "prompt": "Look for a README and report whether it mentions the greeting."}}),
		// The child's two steps.
		reply("", "", u(300, 20, 0, 0), scripted.ToolCall{ID: "k-glob", Name: "glob", Args: map[string]any{"pattern": "*.md"}}),
		reply("", "There is no README in the workspace.", u(320, 12, 0, 0)),
		reply("", answer, u(260, 180, 1700, 0)),
		reply("", "All done: one typo fixed, nothing else changed.", u(90, 14, 1900, 0)),
	)
	w.file("hello.go", "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"Hello, wrold\")\n}\n")
	w.approve = func(req tool.ApprovalRequest) tool.Approval {
		if req.Call.Name == "bash" && strings.Contains(string(req.Call.Args), "rm -rf") {
			return tool.Approval{Allow: false, By: "user", Reason: "Do not delete build/; just run go vet."}
		}
		return tool.Approval{Allow: true, By: "user"}
	}
	id := w.run("Fix the typo in hello.go and check it builds", "Thanks! Summarize what changed.")
	root, kids := w.read(id)
	return w, root, kids
}

func writeTrace(t testing.TB, root TraceSession, kids []TraceSession, o TraceOptions) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteTrace(&buf, root, kids, o); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "trace.html")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, buf.Bytes()
}

func openFile(p *chrometest.Page, path string) {
	p.T.Helper()
	p.Run(chromedp.Navigate("file://" + path))
	p.WaitFor(`document.documentElement.dataset.ready === "1"`)
}

func TestTraceShowsTheSession(t *testing.T) {
	_, root, kids := richSession(t)
	if len(kids) != 1 {
		t.Fatalf("want one child session, got %d", len(kids))
	}
	path, _ := writeTrace(t, root, kids, TraceOptions{})
	p := chrometest.New(t, 1280, 800)
	openFile(p, path)

	// The prompts, the reasoning (collapsed) and the answer as Markdown.
	if got := p.Text(".turn[data-turn='1'] .msg.user .bubble"); got != "Fix the typo in hello.go and check it builds" {
		t.Errorf("first prompt = %q", got)
	}
	if n := p.Count("details.reasoning:not([open])"); n != 1 {
		t.Errorf("collapsed reasoning blocks = %d, want 1", n)
	}
	if got := p.Text(".msg.assistant .md h2"); got != "Fixed" {
		t.Errorf("answer heading = %q", got)
	}
	for sel, want := range map[string]int{
		".md ol > li": 3, ".md li.task input[type=checkbox]": 2, ".md table tbody tr": 2,
		".codeblock code.lang-go .tok-kw": 1, ".md blockquote a[href='https://go.dev/doc/']": 1,
	} {
		if n := p.Count(sel); n < want {
			t.Errorf("%s: %d elements, want at least %d", sel, n, want)
		}
	}
	// Tool cards: read (collapsed), plan, edit with its diff, the denied
	// command with the reason, the command with coloured output.
	if n := p.Count(".card[data-tool='read'] .card-body[hidden]"); n != 1 {
		t.Errorf("the read card should start collapsed (%d)", n)
	}
	if got := p.Text(".card[data-tool='todo_write'] .todo.doing .todo-text"); got != "Fixing the typo" {
		t.Errorf("plan in progress = %q", got)
	}
	if got := p.Text(".card[data-call='c-edit'] table.diff tr.d-del .d-text"); !strings.Contains(got, "Hello, wrold") {
		t.Errorf("deleted line = %q", got)
	}
	if got := p.Text(".card[data-call='c-edit'] table.diff tr.d-ins .d-text"); !strings.Contains(got, "Hello, world") {
		t.Errorf("inserted line = %q", got)
	}
	if got := p.Text(".card[data-call='c-edit'] .gate-answer"); !strings.Contains(got, "Allowed once") {
		t.Errorf("edit approval = %q", got)
	}
	if got := p.Text(".card[data-call='c-rm'] .gate-answer.deny"); !strings.Contains(got, "Do not delete build/; just run go vet.") {
		t.Errorf("denial = %q", got)
	}
	if got := p.Text(".card[data-call='c-vet'] pre.out .ansi-fg2"); got != "ok" {
		t.Errorf("coloured output = %q", got)
	}
	if got := p.Text(".card[data-call='c-vet'] .badge.ok"); got != "exit 0" {
		t.Errorf("exit badge = %q", got)
	}
	p.Shot("trace-1280")

	// Side by side diff.
	p.Run(chromedp.Click(`.card[data-call='c-edit'] button[data-mode='split']`))
	if n := p.Count(".card[data-call='c-edit'] table.diff.split"); n != 1 {
		t.Errorf("side-by-side tables = %d", n)
	}
	p.Run(chromedp.ScrollIntoView(`.card[data-call='c-edit']`))
	p.Shot("trace-diff-split")

	// The subagent under its task call, and its own view.
	if got := p.Text(".card[data-call='c-task'] .sub-text"); got != "There is no README in the workspace." {
		t.Errorf("child summary = %q", got)
	}
	p.Run(chromedp.Click(`.card[data-call='c-task'] a.sub-open`))
	p.WaitFor(fmt.Sprintf(`location.hash === "#%s" && document.querySelector(".crumbs a.crumb")`, kids[0].Header.ID))
	if got := p.Text(".crumb.current"); got != "Look for a README and report whether it mentions the greeting." {
		t.Errorf("child title = %q", got)
	}
	if n := p.Count(".card[data-tool='glob']"); n != 1 {
		t.Errorf("child view glob cards = %d", n)
	}
	p.Shot("trace-child")
	p.Run(chromedp.NavigateBack())
	p.WaitFor(`document.querySelector(".card[data-call='c-task']")`)

	// The usage panel: two turns charted, the cost at list prices unknown
	// for the scripted model.
	p.Run(chromedp.Click(`#usage-toggle`))
	p.WaitFor(`!document.getElementById("usage-panel").hidden`)
	if n := p.Count("#usage-panel svg.usage-chart g.bar"); n != 2 {
		t.Errorf("chart bars = %d, want 2 (one per turn)", n)
	}
	if got := p.Text("#usage-panel .usage-table tbody tr[data-turn='1'] td:nth-child(3)"); got != "7" {
		t.Errorf("turn 1 steps = %q, want 7", got)
	}
	p.Shot("trace-usage")
	p.NoErrors()
}
