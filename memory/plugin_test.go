package memory_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/doctor"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/memory"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

func write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The plugin puts the memory of the agent's directory into every request's
// system prompt and attaches a subdirectory's memory to the first result
// of a read there, once per session, also after a resume.
func TestPluginPromptAndNested(t *testing.T) {
	ctx := context.Background()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	home, _ := filepath.EvalSymlinks(t.TempDir())
	write(t, filepath.Join(dir, "CLAUDE.md"), "Always answer in French.")
	write(t, filepath.Join(dir, "pkg", "CLAUDE.md"), "In pkg, use table tests.")
	write(t, filepath.Join(dir, "pkg", "a.go"), "package pkg")
	write(t, filepath.Join(dir, "pkg", "b.go"), "package pkg")

	h, err := core.New(core.Options{Invariants: true, Site: core.Site{Cwd: dir, UserHome: home, Home: filepath.Join(home, ".dsh"),
		Trusted: func(string) bool { return true }}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	model := scripted.New(
		scripted.Call("r1", "read", map[string]string{"file_path": "pkg/a.go"}, ""),
		scripted.Call("r2", "read", map[string]string{"file_path": filepath.Join(dir, "pkg", "b.go")}, ""),
		scripted.Text("done"),
		scripted.Call("r3", "read", map[string]string{"file_path": "pkg/a.go"}, ""),
		scripted.Text("done again"),
	)
	if _, err := h.LLM.RegisterModels([]string{"mock"}, model); err != nil {
		t.Fatal(err)
	}
	read := tool.Func(tool.Info{Name: "read", Kind: tool.KindRead, ReadOnly: true}, func(_ context.Context, _ tool.Call, args map[string]any) (tool.Result, error) {
		return tool.TextResult("contents of " + args["file_path"].(string)), nil
	})
	if err := h.Tools.RegisterAll(h.Scope, read); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Use(ctx, "doctor", doctor.Plugin()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Use(ctx, "memory", memory.Plugin(memory.Config{})); err != nil {
		t.Fatal(err)
	}
	hd, err := h.Agents.Create(ctx, agent.CreateOptions{AgentID: "a", SessionID: "s1", Header: session.Header{Cwd: dir}, Options: agent.Options{Model: "mock"}})
	if err != nil {
		t.Fatal(err)
	}
	send(t, hd.Agent, "look at pkg")
	reqs := model.Requests()
	if !strings.Contains(reqs[0].System, "Always answer in French.") || !strings.Contains(reqs[0].System, "## "+filepath.Join(dir, "CLAUDE.md")+" (project instructions)") {
		t.Fatalf("system prompt:\n%s", reqs[0].System)
	}
	if strings.Contains(reqs[0].System, "table tests") {
		t.Fatal("a nested file was loaded before its directory was touched")
	}
	if n := strings.Count(history(reqs[2]), "In pkg, use table tests."); n != 1 {
		t.Fatalf("nested memory given %d times:\n%s", n, history(reqs[2]))
	}
	var recorded int
	for _, e := range hd.Agent.Session().Events() {
		if e.Type == memory.EventNested {
			recorded++
		}
	}
	if recorded != 1 {
		t.Fatalf("%d memory/nested events", recorded)
	}

	// A session seeded from this log (resume) is not given pkg's file again.
	hd2, err := h.Agents.Create(ctx, agent.CreateOptions{AgentID: "b", SessionID: "s2", Header: session.Header{Cwd: dir},
		Seed: session.CompletedPrefix(hd.Agent.Session().Events()), Options: agent.Options{Model: "mock"}})
	if err != nil {
		t.Fatal(err)
	}
	send(t, hd2.Agent, "again")
	if n := strings.Count(history(model.Requests()[4]), "In pkg, use table tests."); n != 1 {
		t.Fatalf("after resume, nested memory appears %d times", n)
	}
}

func send(t *testing.T, a agent.Agent, text string) {
	t.Helper()
	if err := a.Send(context.Background(), []llm.Block{llm.Text(text)}, llm.Source{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.WhenIdle(ctx); err != nil {
		t.Fatal(err)
	}
}

func history(r llm.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		for _, c := range m.Content {
			b.WriteString(c.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}
