package browser

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/providers"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/tool"
)

// world is a real dsh application in a temporary workspace whose model is
// a script: the sessions it records are the log a user's session would
// have, tools, permission decisions, approvals and subagents included.
type world struct {
	t     testing.TB
	app   *app.App
	dir   string
	model *scripted.Adapter
	// approve answers the permission layer's questions (nil: allow).
	approve func(tool.ApprovalRequest) tool.Approval
	mu      sync.Mutex
}

func newWorld(t testing.TB, entries ...scripted.Entry) *world {
	t.Helper()
	home, dir := t.TempDir(), t.TempDir()
	cfg, err := settings.From(app.Schema(), true, providers.ModelKey.Flag("--model", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := app.New(ctx, app.Options{Config: cfg, Site: core.Site{Home: home, Cwd: dir, NoSync: true, Getenv: func(string) string { return "" }}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	w := &world{t: t, app: a, dir: dir, model: scripted.New(entries...)}
	if _, err := a.Host.LLM.Register([]llm.ModelInfo{{ID: "script/m", ContextWindow: 200000}}, w.model); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) file(name, content string) {
	w.t.Helper()
	p := filepath.Join(w.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// run starts a session, sends each prompt as a turn and returns the
// session's id once the last turn ended.
func (w *world) run(prompts ...string) session.ID {
	w.t.Helper()
	ctx := context.Background()
	approver := tool.ApproverFunc(func(_ context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
		w.mu.Lock()
		f := w.approve
		w.mu.Unlock()
		if f == nil {
			return tool.Approval{Allow: true, By: "user"}, nil
		}
		return f(req), nil
	})
	opts := w.app.AgentOptions(approver)
	opts.Model = "script/m"
	h, err := w.app.Host.Agents.Create(ctx, agent.CreateOptions{AgentID: agent.ID(fmt.Sprintf("main-%p", w)), Header: session.Header{Cwd: w.dir}, Options: opts})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, p := range prompts {
		for _, err := range h.Agent.Prompt(ctx, p) {
			if err != nil {
				w.t.Fatal(err)
			}
		}
	}
	id := h.Agent.Session().ID()
	if err := h.Dispose(ctx); err != nil {
		w.t.Fatal(err)
	}
	return id
}

// read returns a stored session as the trace command reads it.
func (w *world) read(id session.ID) (TraceSession, []TraceSession) {
	w.t.Helper()
	root, kids, err := ReadTrace(context.Background(), w.app.Coordinator, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return root, kids
}

// usage is a usage chunk with cache figures, so the usage panel has
// something to chart.
func usage(in, out, cacheRead, cacheWrite int) llm.Chunk {
	return llm.UsageChunk(llm.Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: cacheRead, CacheWriteTokens: cacheWrite})
}

// withUsage replaces an entry's usage chunk.
func withUsage(e scripted.Entry, u llm.Chunk) scripted.Entry {
	out := make([]llm.Chunk, 0, len(e.Chunks))
	for _, c := range e.Chunks {
		if c.Type == llm.ChunkUsage {
			c = u
		}
		out = append(out, c)
	}
	e.Chunks = out
	return e
}
