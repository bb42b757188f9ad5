package browser

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dshq/dsh/internal/chrometest"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
)

// longSession records a 200-step session as agents make them: ten turns of
// twenty steps, mostly reads of source files, an edit every fifth step and
// a test run every tenth, a sentence of text before most calls.
func longSession(t testing.TB) (TraceSession, []TraceSession) {
	t.Helper()
	var src strings.Builder
	src.WriteString("package demo\n\n")
	for i := range 120 {
		fmt.Fprintf(&src, "// Step%d does step %d of the work.\nfunc Step%d(x int) int { return x + %d }\n\n", i, i, i, i)
	}
	var entries []scripted.Entry
	var prompts []string
	u := llm.Usage{InputTokens: 400, OutputTokens: 120, CacheReadTokens: 9000}
	for turn := range 10 {
		prompts = append(prompts, fmt.Sprintf("Turn %d: keep improving the demo package", turn+1))
		for step := range 20 {
			n := turn*20 + step
			file := fmt.Sprintf("f%d.go", n%8)
			var call scripted.ToolCall
			switch {
			case step == 19:
				entries = append(entries, reply("", fmt.Sprintf("Turn %d is done: **%d** functions adjusted, `go test` passes.", turn+1, 4), u))
				continue
			case step%10 == 9:
				call = scripted.ToolCall{ID: fmt.Sprintf("c%d", n), Name: "bash", Args: map[string]any{"command": "seq 1 300", "description": "Run the tests"}}
			case step%5 == 4:
				call = scripted.ToolCall{ID: fmt.Sprintf("c%d", n), Name: "edit", Args: map[string]any{"file_path": file, "old_string": fmt.Sprintf("return x + %d }", n%120), "new_string": fmt.Sprintf("return x + %d + 1 }", n%120)}}
			default:
				call = scripted.ToolCall{ID: fmt.Sprintf("c%d", n), Name: "read", Args: map[string]any{"file_path": file}}
			}
			text := ""
			if step%2 == 0 {
				text = fmt.Sprintf("Looking at %s next, step %d.", file, n)
			}
			entries = append(entries, reply("", text, u, call))
		}
	}
	w := newWorld(t, entries...)
	for i := range 8 {
		w.file(fmt.Sprintf("f%d.go", i), src.String())
	}
	id := w.run(prompts...)
	return w.read(id)
}

// A long session's trace stays a file one can mail and shows every step.
func TestLongTrace(t *testing.T) {
	root, kids := longSession(t)
	path, page := writeTrace(t, root, kids, TraceOptions{})
	t.Logf("200-step trace: %d bytes", len(page))
	if len(page) >= 2<<20 {
		t.Errorf("the trace of a 200-step session is %d bytes, over 2 MB", len(page))
	}
	p := chrometest.New(t, 1280, 800)
	openFile(p, path)
	if n := p.Count(".card"); n != 190 {
		t.Errorf("tool cards = %d, want 190", n)
	}
	if n := p.Count(".turn"); n != 10 {
		t.Errorf("turns = %d, want 10", n)
	}
	p.NoErrors()

	_, small := writeTrace(t, root, kids, TraceOptions{OmitToolOutput: true})
	if len(small) >= len(page) || strings.Contains(string(small), "Step117 does step 117") {
		t.Errorf("--no-tool-output: %d bytes (with outputs %d), a file's content still present: %v", len(small), len(page), strings.Contains(string(small), "Step117 does step 117"))
	}
}

// BenchmarkTraceOpen measures how long Chromium takes from navigation to a
// laid-out view of a 200-step session's trace: ms/open as the page records
// it (wall time, so it grows with the machine's load) and cpu-ms/open, the
// CPU time all of the test's Chromium processes spent per open (steadier
// on a shared machine); and it reports the file's size.
func BenchmarkTraceOpen(b *testing.B) {
	root, kids := longSession(b)
	path, page := writeTrace(b, root, kids, TraceOptions{})
	p := chrometest.New(b, 1280, 800)
	var wall int
	cpu0 := chromeCPU(b)
	for b.Loop() {
		p.Run(chromedp.Navigate("file://" + path))
		p.WaitFor(`document.documentElement.dataset.ready === "1"`)
		wall += chrometest.Eval[int](p, `+document.documentElement.dataset.readyMs`)
	}
	cpu := chromeCPU(b) - cpu0
	p.NoErrors()
	b.ReportMetric(float64(wall)/float64(b.N), "ms/open")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/open")
	b.ReportMetric(float64(len(page)), "bytes")
}

// chromeCPU is the user and system CPU time of the processes of the test's
// Chromium (those whose command line names its profile directory).
func chromeCPU(t testing.TB) time.Duration {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var ticks int64
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cmd), chrometest.ProfileDir()) {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis; utime and stime
		// are the 14th and 15th of the line.
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		if len(f) > 12 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			s, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += u + s
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}
