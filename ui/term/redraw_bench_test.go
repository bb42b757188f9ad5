package term

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/providers"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
)

// redrawSteps is the recorded session's length in tool steps.
const redrawSteps = 500

// recordLongSession runs a scripted 500-step turn through the real agent
// loop and returns its session's events as they were appended: each step
// streams a paragraph of text one character per chunk, then reads a
// 40-line file, so the transcript grows by a card and a paragraph a step.
func recordLongSession(b *testing.B) ([]session.Event, *app.App) {
	b.Helper()
	home, cwd := b.TempDir(), b.TempDir()
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf("line %d of the file the model reads at every step", i))
	}
	file := filepath.Join(cwd, "notes.txt")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	var script []scripted.Entry
	for i := range redrawSteps {
		prefix := fmt.Sprintf("Step %d: reading the notes again to check what changed since the last step, then carrying on with the task. ", i)
		script = append(script, scripted.Call(fmt.Sprintf("c%d", i), "read", map[string]string{"file_path": file}, prefix))
	}
	script = append(script, scripted.Text("all done"))
	ctx := context.Background()
	cfg, err := settings.From(app.Schema(), true, providers.ModelKey.Flag("--model", "demo"),
		permission.Key.Flag("--permission-mode", permission.Settings{DefaultMode: string(permission.ModeBypass)}))
	if err != nil {
		b.Fatal(err)
	}
	a, err := app.New(ctx, app.Options{Config: cfg, Site: core.Site{Home: home, Cwd: cwd, NoSync: true, Getenv: func(string) string { return "" }}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Close(ctx) })
	if _, err := a.Host.LLM.Register([]llm.ModelInfo{{ID: "script/m", ContextWindow: 1 << 30}}, scripted.New(script...)); err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var events []session.Event
	a.Host.Sessions.Appended.Listen(func(_ context.Context, ap session.Appended) error {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ap.Event)
		return nil
	})
	a.Host.Agents.Hub.Request.Use(func(ctx context.Context, in agent.RequestInput, next func(context.Context, agent.RequestInput) (*llm.Request, error)) (*llm.Request, error) {
		if in.Request != nil {
			in.Request.Model = "script/m"
		}
		return next(ctx, in)
	})
	h, err := a.Start(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Dispose(ctx)
	for _, err := range h.Agent.Prompt(ctx, "go") {
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := h.Dispose(ctx); err != nil {
		b.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(events), a
}

// BenchmarkRedrawLongSession replays a recorded 500-step session into the
// terminal UI as its loop does (each event applied to the transcript) and
// times, at every step, the frame that shows the step's last streamed
// chunk: applying that chunk and drawing the frame (live region, footer,
// committed output) to the terminal. The figures are the median and the
// worst frame at steps 10, 100, 250 and 500 over the iterations, and the
// worst frame of all steps;
// flat figures mean redraw does not grow with the session.
func BenchmarkRedrawLongSession(b *testing.B) {
	events, a := recordLongSession(b)
	// last[i] is the index of step i's last text chunk: the next event
	// ends the streamed block.
	var last []int
	for i, e := range events {
		if e.Type == session.TypeAssistantChunk && i+1 < len(events) && events[i+1].Type != session.TypeAssistantChunk {
			last = append(last, i)
		}
	}
	if len(last) < redrawSteps {
		b.Fatalf("the recorded session has %d streamed steps, want %d", len(last), redrawSteps)
	}
	marks := []int{10, 100, 250, 500}
	at := make([][]time.Duration, len(marks))
	var worst time.Duration
	b.ResetTimer()
	for range b.N {
		u := &ui{o: Options{Width: func() int { return 160 }, Height: func() int { return 48 }, Env: func(string) string { return "" }},
			app: a, out: io.Discard, st: NewStyles(false), md: newMarkdown(false, func(string) string { return "" }),
			q: newQueue(), done: make(chan struct{}), ctx: context.Background()}
		u.scr.Sync = true
		u.ed = NewEditor(nil)
		u.tr = u.newTranscript()
		step := 0
		for i, e := range events {
			if step < len(last) && i == last[step] {
				start := time.Now()
				u.tr.Apply(e)
				u.draw()
				d := time.Since(start)
				worst = max(worst, d)
				step++
				if j := slices.Index(marks, step); j >= 0 {
					at[j] = append(at[j], d)
				}
				continue
			}
			u.tr.Apply(e)
		}
		u.draw()
	}
	b.StopTimer()
	for j, m := range marks {
		slices.Sort(at[j])
		b.ReportMetric(float64(at[j][len(at[j])/2].Microseconds()), fmt.Sprintf("µs/frame@%d", m))
		b.ReportMetric(float64(at[j][len(at[j])-1].Microseconds()), fmt.Sprintf("µs/worst@%d", m))
	}
	b.ReportMetric(float64(worst.Microseconds()), "µs/worst-frame")
}
