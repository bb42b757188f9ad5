package permission

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/search"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
	"github.com/dshq/dsh/tools/searchtool"
)

// searchRig is the real search tools in a registry the checker is
// installed on, with SearchFilter as their Denied check, as the app wires
// them.
type searchRig struct {
	t   *testing.T
	c   *Checker
	reg *tool.Registry
	env env
}

func newSearchRig(t *testing.T, engine search.Engine, ruleSet ...Rule) *searchRig {
	t.Helper()
	e := newEnv(t)
	write := func(p, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(e.root, ".env"), "SECRET=hunter2\n")
	write(filepath.Join(e.root, "src", "main.go"), "package main // SECRET is read from .env at startup\n")
	write(filepath.Join(e.root, "src", "session.go"), "package main // SECRET session-only\n")
	write(filepath.Join(e.root, "docs", "private", "plan.md"), "SECRET grep-only\n")
	write(filepath.Join(e.home, ".ssh", "id_rsa"), "SECRET ssh-key\n")
	write(filepath.Join(e.home, "notes.txt"), "SECRET home notes\n")
	// A link to the denied file, under a name no rule mentions.
	if err := os.Symlink(".env", filepath.Join(e.root, "env.txt")); err != nil {
		t.Fatal(err)
	}
	c := mustNew(t, Config{Rules: ruleSet, Home: e.home, Cwd: e.root})
	reg := tool.NewRegistry()
	for _, tl := range searchtool.Tools(searchtool.Options{Engine: engine, Denied: c.SearchFilter}) {
		if _, err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	scope := kernel.NewScope("test")
	t.Cleanup(func() { _ = scope.Close() })
	if err := c.Install(scope, reg, nil, nil); err != nil {
		t.Fatal(err)
	}
	return &searchRig{t: t, c: c, reg: reg, env: e}
}

// run executes a call from session sid, approving any question, and
// returns what the model reads.
func (r *searchRig) run(sid, name string, args any) string {
	r.t.Helper()
	c := call(name, args)
	c.Host = &fakeHost{cwd: r.env.root, sid: sid, scope: kernel.NewScope("agent")}
	ap := tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.Approval, error) {
		return tool.Approval{Allow: true, By: "user"}, nil
	})
	out := r.reg.Execute(context.Background(), c, tool.ExecOptions{Approver: ap})
	text := llm.TextOf(out.Result.Content)
	if out.Result.IsError {
		r.t.Fatalf("%s %v: %s", name, args, text)
	}
	return text
}

func mustContain(t *testing.T, what, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, out)
		}
	}
}

func mustLack(t *testing.T, what, out string, bad ...string) {
	t.Helper()
	for _, b := range bad {
		if strings.Contains(out, b) {
			t.Errorf("%s shows %q:\n%s", what, b, out)
		}
	}
}

// TestSearchToolsWithholdDeniedFiles runs the search tools through the
// registry and the installed checker, with each grep backend (the Go
// walker checks files from several goroutines).
func TestSearchToolsWithholdDeniedFiles(t *testing.T) {
	for _, backend := range []search.Backend{search.Native, search.Ripgrep} {
		t.Run(string(backend), func(t *testing.T) {
			if _, err := exec.LookPath("rg"); err != nil && backend == search.Ripgrep {
				t.Skip("ripgrep (rg) is not installed")
			}
			testSearchToolsWithhold(t, &search.Searcher{Backend: backend})
		})
	}
}

func testSearchToolsWithhold(t *testing.T, engine search.Engine) {
	r := newSearchRig(t, engine, rules(Deny, "/p/.dsh/settings.json", "Read(./.env)", "Read(~/.ssh/**)", "Grep(docs/private/**)")...)

	for _, mode := range []string{"content", "files_with_matches", "count"} {
		out := r.run("s1", "grep", map[string]any{"pattern": "SECRET", "output_mode": mode})
		mustContain(t, "grep "+mode, out, "src/main.go", "src/session.go")
		// .env, and env.txt (a link to it, which grep does not follow
		// anyway), and docs/private (a Grep rule) are left out.
		mustLack(t, "grep "+mode, out, "hunter2", ".env:", "env.txt", "docs/private", "grep-only")
	}
	out := r.run("s1", "grep", map[string]any{"pattern": "SECRET", "output_mode": "content"})
	if want := "src/main.go:1:package main // SECRET is read from .env at startup\nsrc/session.go:1:package main // SECRET session-only"; out != want {
		t.Errorf("grep content = %q, want %q", out, want)
	}

	// glob lists files (and links to files); the denied ones are counted,
	// not named. A Grep rule does not hide files from glob.
	out = r.run("s1", "glob", map[string]any{"pattern": "**/*"})
	mustContain(t, "glob", out, "src/main.go", "src/session.go", "docs/private/plan.md", "(2 matching files withheld: permission rules deny reading them.)")
	mustLack(t, "glob", out, "env.txt", ".env\n")

	out = r.run("s1", "ls", map[string]any{})
	mustContain(t, "ls", out, "main.go", "plan.md", "(2 entries withheld: permission rules deny reading them.)")
	mustLack(t, "ls", out, ".env", "env.txt")

	// A search of the home directory asks (it contains ~/.ssh, which a
	// rule denies); approved, it still leaves the keys out.
	out = r.run("s1", "grep", map[string]any{"pattern": "SECRET", "path": r.env.home, "output_mode": "content"})
	mustContain(t, "grep ~", out, "notes.txt:1:SECRET home notes")
	mustLack(t, "grep ~", out, "id_rsa", "ssh-key")
	out = r.run("s1", "ls", map[string]any{"path": r.env.home})
	mustContain(t, "ls ~", out, "notes.txt", "(1 entry withheld")
	mustLack(t, "ls ~", out, ".ssh", "id_rsa")
	// A glob whose pattern names the denied directory is decided on that
	// directory (the glob searches there), so it is refused outright.
	gc := call("glob", map[string]any{"pattern": filepath.Join(r.env.home, ".ssh", "*")})
	gc.Host = &fakeHost{cwd: r.env.root, sid: "s1", scope: kernel.NewScope("agent")}
	res := r.reg.Execute(context.Background(), gc, tool.ExecOptions{})
	out = llm.TextOf(res.Result.Content)
	if !res.Result.IsError {
		t.Errorf("glob ~/.ssh/* was not refused: %s", out)
	}
	mustContain(t, "glob ~/.ssh/*", out, "denies read")
	mustLack(t, "glob ~/.ssh/*", out, "id_rsa")
}

func TestSearchToolsFollowSessionRules(t *testing.T) {
	r := newSearchRig(t, nil)
	ctx := context.Background()
	s1, err := session.New("s1", session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.c.AddSessionRule(ctx, s1, Rule{Text: "Read(src/session.go)", Behavior: Deny}); err != nil {
		t.Fatal(err)
	}
	// A subagent of s1 inherits its rules.
	if err := r.c.RestoreSession("child", "s1", nil); err != nil {
		t.Fatal(err)
	}
	for _, sid := range []string{"s1", "child"} {
		out := r.run(sid, "grep", map[string]any{"pattern": "SECRET", "output_mode": "content"})
		mustContain(t, sid+" grep", out, "src/main.go:1:", ".env:1:SECRET=hunter2")
		mustLack(t, sid+" grep", out, "session.go", "session-only")
		out = r.run(sid, "glob", map[string]any{"pattern": "src/*.go"})
		if want := "src/main.go\n(1 matching file withheld: permission rules deny reading it.)"; out != want {
			t.Errorf("%s glob = %q, want %q", sid, out, want)
		}
		out = r.run(sid, "ls", map[string]any{"path": "src"})
		mustLack(t, sid+" ls", out, "session.go")
	}
	// Another session is not bound by s1's rule.
	out := r.run("s2", "grep", map[string]any{"pattern": "SECRET", "output_mode": "content"})
	mustContain(t, "s2 grep", out, "src/session.go:1:package main // SECRET session-only")
	if out := r.run("s2", "glob", map[string]any{"pattern": "src/*.go"}); strings.Contains(out, "withheld") || !strings.Contains(out, "src/session.go") {
		t.Errorf("s2 glob = %q", out)
	}
}

func TestReadDeniedSessions(t *testing.T) {
	e := newEnv(t)
	c := mustNew(t, Config{Rules: rules(Deny, "p", "Read(./.env)", "Grep(docs/**)"), Home: e.home, Cwd: e.root})
	if err := os.WriteFile(filepath.Join(e.root, ".env"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".env", filepath.Join(e.root, "env.txt")); err != nil {
		t.Fatal(err)
	}
	// The project reached through a symlinked directory.
	via := filepath.Join(e.outside, "proj")
	if err := os.Symlink(e.root, via); err != nil {
		t.Fatal(err)
	}
	s1, err := session.New("s1", session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddSessionRule(context.Background(), s1, Rule{Text: "Read(src/**)", Behavior: Deny}); err != nil {
		t.Fatal(err)
	}
	if err := c.RestoreSession("child", "s1", nil); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		sid, cwd, path string
		want           bool
	}{
		{"", e.root, ".env", true},
		{"", "", ".env", true}, // Config.Cwd
		{"", e.root, "env.txt", true},
		{"", e.root, filepath.Join(via, ".env"), true},
		{"", e.root, filepath.Join(via, "env.txt"), true},
		{"", e.root, "src/main.go", false},
		{"s1", e.root, "src/main.go", true},
		{"child", e.root, "src/main.go", true},
		{"s2", e.root, "src/main.go", false},
		{"s1", e.root, "README.md", false},
		{"", e.root, "docs/x.md", false}, // a Grep rule: not a read
	} {
		if got := c.ReadDenied(tt.sid, tt.cwd, tt.path); got != tt.want {
			t.Errorf("ReadDenied(%q, %q, %q) = %v, want %v", tt.sid, tt.cwd, tt.path, got, tt.want)
		}
	}
	if f := c.ReadFilter("", e.root, "grep"); f == nil || !f("docs/x.md") || !f(".env") || f("src/main.go") {
		t.Error("ReadFilter for grep: Grep and Read rules")
	}
	if f := c.ReadFilter("", e.root, "Glob"); f == nil || f("docs/x.md") || !f(".env") {
		t.Error("ReadFilter for Glob: Read rules only")
	}
	// No deny rule: no check at all.
	if f := mustNew(t, Config{Rules: rules(Ask, "p", "Read(./.env)"), Home: e.home, Cwd: e.root}).ReadFilter("s1", e.root, "grep"); f != nil {
		t.Error("a filter without deny rules")
	}
}

// BenchmarkReadFilter checks one search's worth of files in a few
// directories: rules and directories are resolved once per filter.
func BenchmarkReadFilter(b *testing.B) {
	e := newEnv(b)
	c := mustNew(b, Config{Rules: rules(Deny, "p", "Read(./.env)", "Read(~/.ssh/**)", "Read(**/*.pem)"), Home: e.home, Cwd: e.root})
	var paths []string
	for d := range 10 {
		dir := filepath.Join(e.root, "src", fmt.Sprint("pkg", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			p := filepath.Join(dir, fmt.Sprintf("f%d.go", f))
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				b.Fatal(err)
			}
			paths = append(paths, p)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		f := c.ReadFilter("s1", e.root, "grep")
		for _, p := range paths {
			if f(p) {
				b.Fatal(p)
			}
		}
	}
}
