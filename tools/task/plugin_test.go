package task_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/tools/task"
)

// Custom agents come from ~/.claude/agents, $DSH_HOME/agents and, once the
// project is trusted, its .claude/agents and .dsh/agents (later wins); a
// Claude Code model of "inherit", or one that does not resolve, is the
// parent's.
func TestAgentFiles(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		user, dshHome, proj := t.TempDir(), t.TempDir(), t.TempDir()
		put := func(p, s string) {
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		put(filepath.Join(user, ".claude", "agents", "reviewer.md"), "---\nname: reviewer\ndescription: user reviewer\nmodel: sonnet\n---\nuser prompt")
		put(filepath.Join(user, ".claude", "agents", "writer.md"), "---\ndescription: writes\nmodel: inherit\ntools: Read, Write\n---\nwrite")
		put(filepath.Join(proj, ".claude", "agents", "reviewer.md"), "---\nname: reviewer\ndescription: project reviewer\n---\nproject prompt")
		put(filepath.Join(proj, ".dsh", "agents", "tester.md"), "---\ndescription: tests\n---\ntest")
		h, err := core.New(core.Options{Site: core.Site{UserHome: user, Home: dshHome, Cwd: proj, Trusted: func(string) bool { return trusted }}})
		if err != nil {
			t.Fatal(err)
		}
		if err := task.Plugin()(context.Background(), h, h.Scope); err != nil {
			t.Fatal(err)
		}
		cat, _ := core.Lookup[*task.Catalog](h)
		got := map[string]string{}
		for _, d := range cat.Definitions() {
			got[d.Name] = d.Description + "|" + d.Model
		}
		want := map[string]string{"reviewer": "user reviewer|", "writer": "writes|"}
		if trusted {
			want = map[string]string{"reviewer": "project reviewer|", "writer": "writes|", "tester": "tests|"}
		}
		if len(got) != len(want) {
			t.Fatalf("trusted=%v: agents %v, want %v", trusted, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("trusted=%v: %s is %q, want %q (all: %v)", trusted, k, got[k], v, got)
			}
		}
		h.Close(context.Background())
	}
}
