package commands

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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

func names(s *Set) []string {
	var out []string
	for _, c := range s.All() {
		out = append(out, c.Name)
	}
	return out
}

// Names follow subdirectories; later directories win; a namespaced
// command is reachable by its last part while that is unambiguous.
func TestLoad(t *testing.T) {
	user, proj, codex := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, filepath.Join(user, "review.md"), "---\ndescription: user review\n---\nReview it.")
	write(t, filepath.Join(user, "frontend", "component.md"), "Make a component $1.")
	write(t, filepath.Join(proj, "review.md"), "---\ndescription: project review\nargument-hint: [focus]\nallowed-tools: Bash(git diff:*), Read\nmodel: haiku\n---\nReview $ARGUMENTS.")
	write(t, filepath.Join(proj, "backend", "deploy.md"), "Deploy.")
	write(t, filepath.Join(proj, "ops", "deploy.md"), "Deploy ops.")
	write(t, filepath.Join(proj, "broken.md"), "---\nname: x\nnever closed")
	write(t, filepath.Join(proj, "notes.txt"), "not a command")
	write(t, filepath.Join(codex, "explain.md"), "Explain $1 in detail.")
	write(t, filepath.Join(codex, "sub", "deep.md"), "Codex prompts are flat.")
	s := Load(Builtins(), []Dir{
		{Path: codex, Source: "Codex prompts", Prefix: "prompts:", Flat: true},
		{Path: user, Source: "user"}, {Path: proj, Source: "project"}, {Path: filepath.Join(proj, "missing"), Source: "project"},
	})
	want := []string{"backend:deploy", "frontend:component", "init", "ops:deploy", "prompts:explain", "review"}
	if got := names(s); !slices.Equal(got, want) {
		t.Fatalf("names %v", got)
	}
	r, _ := s.Lookup("review")
	if r.Description != "project review" || r.ArgumentHint != "[focus]" || r.Model != "haiku" || !slices.Equal(r.AllowedTools, []string{"Bash(git diff:*)", "Read"}) {
		t.Fatalf("review %+v", r)
	}
	if len(s.Shadowed) != 1 || s.Shadowed[0].Name != "review" || !strings.HasPrefix(s.Shadowed[0].Path, user) {
		t.Fatalf("shadowed %+v", s.Shadowed)
	}
	if c, ok := s.Lookup("component"); !ok || c.Name != "frontend:component" {
		t.Fatal("alias of a namespaced command")
	}
	if _, ok := s.Lookup("deploy"); ok {
		t.Fatal("an ambiguous short name resolved")
	}
	if c, ok := s.Lookup("explain"); !ok || c.Name != "prompts:explain" {
		t.Fatal("Codex prompt alias")
	}
	if len(s.Problems) != 1 || !strings.HasSuffix(s.Problems[0].Path, "broken.md") {
		t.Fatalf("problems %+v", s.Problems)
	}
	if i, _ := s.Lookup("init"); i.Source != "built-in" || i.Description == "" || len(i.AllowedTools) == 0 {
		t.Fatalf("built-in init %+v", i)
	}
}

// fakeRunner answers !`cmd` and @file from maps.
type fakeRunner struct {
	shell map[string]string
	files map[string]string
	ran   []string
}

func (f *fakeRunner) Shell(_ context.Context, line string) (string, error) {
	f.ran = append(f.ran, line)
	out, ok := f.shell[line]
	if !ok {
		return "", errors.New("denied by rule Bash")
	}
	return out, nil
}

func (f *fakeRunner) Read(_ context.Context, path string) (string, bool, error) {
	if path == "secret.txt" {
		return "", true, errors.New("denied by Read(secret.txt)")
	}
	t, ok := f.files[path]
	return t, ok, nil
}

func TestExpand(t *testing.T) {
	c, err := Parse("---\ndescription: d\n---\nFix issue $1 (priority $2): $ARGUMENTS\nBranch: !`git rev-parse --abbrev-ref HEAD`\nSee @src/main.go and @nobody, not `@src/main.go`.\nLog: !`git log -1 --format=%an $1`", "fix", "", "project")
	if err != nil {
		t.Fatal(err)
	}
	r := &fakeRunner{
		shell: map[string]string{"git rev-parse --abbrev-ref HEAD": "main\n", "git log -1 --format=%an 123": "Ada @src/main.go\n"},
		files: map[string]string{"src/main.go": "package main"},
	}
	got, err := c.Expand(context.Background(), `123 "very high"`, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Fix issue 123 (priority very high): 123 \"very high\"", "Branch: main\n", "See @src/main.go\n\n<file path=\"src/main.go\">\npackage main\n</file>\n and @nobody, not `@src/main.go`.",
		"Log: Ada @src/main.go",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Count(got, "<file") != 1 {
		t.Fatalf("a command's output was read for @references:\n%s", got)
	}
	// Without $ARGUMENTS the arguments are appended.
	plain, _ := Parse("Summarise the diff.", "sum", "", "user")
	if got, _ := plain.Expand(context.Background(), "briefly", r); got != "Summarise the diff.\n\nARGUMENTS: briefly" {
		t.Fatalf("plain %q", got)
	}
	// A refused command or file stops the expansion.
	bad, _ := Parse("!`rm -rf /`", "bad", "", "project")
	if _, err := bad.Expand(context.Background(), "", r); err == nil || !strings.Contains(err.Error(), "rm -rf /") {
		t.Fatalf("refused command: %v", err)
	}
	sec, _ := Parse("Show @secret.txt", "sec", "", "project")
	if _, err := sec.Expand(context.Background(), "", r); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("refused file: %v", err)
	}
}

func TestSplitArgs(t *testing.T) {
	got := SplitArgs(`fix "the bug" 'x y' a\ b "" z`)
	if !slices.Equal(got, []string{"fix", "the bug", "x y", "a b", "", "z"}) {
		t.Fatalf("%q", got)
	}
	if n, a, ok := Split("  /frontend:component  Button red "); !ok || n != "frontend:component" || a != "Button red" {
		t.Fatalf("split %q %q %v", n, a, ok)
	}
	if _, _, ok := Split("//literal"); ok {
		t.Fatal("// is a literal slash")
	}
}
