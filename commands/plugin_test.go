package commands_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/commands"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
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

// Through the composed app: a project command's !`cmd` runs through the
// bash tool, its allowed tools hold for its own turn only, and its model
// answers that turn.
func TestCommandTurn(t *testing.T) {
	ctx := context.Background()
	cwd, _ := filepath.EvalSymlinks(t.TempDir())
	home, _ := filepath.EvalSymlinks(t.TempDir())
	write(t, filepath.Join(cwd, ".claude", "commands", "mark.md"), "---\ndescription: leave a mark\nallowed-tools: Bash(touch marked.txt), Bash(cat date.txt)\nmodel: fast\n---\nThe date file says !`cat date.txt`. Mark $1.")
	write(t, filepath.Join(cwd, "date.txt"), "2026-12-01\n")
	a, err := app.New(ctx, app.Options{Site: core.Site{Home: filepath.Join(home, ".dsh"), UserHome: home, Cwd: cwd, NoSync: true,
		Trusted: func(string) bool { return true }, Getenv: func(string) string { return "" }}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	touch := map[string]string{"command": "touch marked.txt", "description": "mark"}
	slow := scripted.New(scripted.Call("t2", "bash", touch, ""), scripted.Text("refused, as it should be"))
	fast := scripted.New(scripted.Call("t1", "bash", touch, ""), scripted.Text("marked"))
	if _, err := a.Host.LLM.RegisterModels([]string{"slow"}, slow); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Host.LLM.RegisterModels([]string{"fast"}, fast); err != nil {
		t.Fatal(err)
	}
	hd, err := a.Host.Agents.Create(ctx, agent.CreateOptions{AgentID: "a", SessionID: "s", Header: session.Header{Cwd: cwd}, Options: agent.Options{Model: "slow"}})
	if err != nil {
		t.Fatal(err)
	}
	ag := hd.Agent
	if _, err := a.Commands.Prepare(ctx, ag, "/nope x"); err != commands.ErrNotCommand {
		t.Fatalf("unknown command: %v", err)
	}
	p, err := a.Commands.Prepare(ctx, ag, "/mark twice")
	if err != nil {
		t.Fatal(err)
	}
	if got := llm.TextOf(p.Content); got != "The date file says 2026-12-01. Mark twice." {
		t.Fatalf("expansion %q", got)
	}
	send := func(content []llm.Block, src llm.Source) {
		t.Helper()
		if err := ag.Send(ctx, content, src); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := ag.WhenIdle(wctx); err != nil {
			t.Fatal(err)
		}
	}
	send(p.Content, p.Source)
	if fast.Calls() != 2 || slow.Calls() != 0 {
		t.Fatalf("the command's turn was answered by the wrong model: fast %d, slow %d", fast.Calls(), slow.Calls())
	}
	if _, err := os.Stat(filepath.Join(cwd, "marked.txt")); err != nil {
		t.Fatalf("the allowed tool did not run in the command's turn: %v", err)
	}
	_ = os.Remove(filepath.Join(cwd, "marked.txt"))
	send([]llm.Block{llm.Text("mark again")}, llm.Source{})
	if slow.Calls() != 2 {
		t.Fatalf("the next turn did not go back to the session's model: %d", slow.Calls())
	}
	if _, err := os.Stat(filepath.Join(cwd, "marked.txt")); err == nil {
		t.Fatal("the command's allowed tool outlived its turn")
	}
	var src llm.Source
	for _, e := range ag.Session().Events() {
		if e.Type == session.TypeUserMessage {
			m, _ := session.Decode[session.Prompt](e)
			if m.Source.Command != "" {
				src = m.Source
			}
		}
	}
	if src.Command != "/mark twice" {
		t.Fatalf("the log does not say the prompt came from /mark: %+v", src)
	}
}
