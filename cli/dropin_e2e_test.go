package cli_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// These tests are the drop-in for Claude Code and Codex users (issue 21):
// real files of those tools' formats in a temporary project and home,
// through the real binary, against a scripted model.

// user is a temporary user: a home directory (HOME, where ~/.claude and
// ~/.codex live) and a private $DSH_HOME inside it.
type user struct {
	home, dshHome string
}

func newUser(t *testing.T) user {
	t.Helper()
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	u := user{home: home, dshHome: filepath.Join(home, ".dsh")}
	if err := os.MkdirAll(u.dshHome, 0o700); err != nil {
		t.Fatal(err)
	}
	return u
}

// project makes a repository (a .git directory) with files.
func project(t *testing.T, files map[string]string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, files)
	return dir
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") || strings.HasSuffix(name, ".py") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// run is dsh in dir as this user, against the scripted server at url.
func (u user) run(t *testing.T, dir, url, stdin string, args ...string) run {
	t.Helper()
	return invocation{dir: dir, home: u.dshHome, baseURL: url, stdin: stdin, env: []string{"HOME=" + u.home, "CODEX_HOME="}}.run(t, args...)
}

// systemPrompt is the system message of the i-th request the server saw.
func (d *deepseek) systemPrompt(t *testing.T, i int) string {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if i >= len(d.requests) {
		t.Fatalf("only %d requests", len(d.requests))
	}
	msgs, _ := d.requests[i]["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] == "system" {
			s, _ := mm["content"].(string)
			return s
		}
	}
	return ""
}

// A CLAUDE.md rule reaches the system prompt, named by its file; an
// @import is followed and a cycle is refused and said so; the user's
// ~/.claude/CLAUDE.md and a Codex AGENTS.md come along; dsh doctor lists
// them.
func TestDropinMemory(t *testing.T) {
	u := newUser(t)
	writeFiles(t, u.home, map[string]string{
		".claude/CLAUDE.md": "Sign every answer with -- ok.",
		".codex/AGENTS.md":  "Prefer small commits.",
	})
	dir := project(t, map[string]string{
		"CLAUDE.md":              "# Rules\n\nNever edit generated files. See @docs/style.md.\n",
		"docs/style.md":          "Indent with tabs. Back to @../CLAUDE.md\n",
		"AGENTS.md":              "Run go vet before answering.\n",
		"services/api/a.go":      "package api\n",
		"services/api/CLAUDE.md": "API handlers return typed errors.\n",
	})
	ds := &deepseek{replies: []string{
		toolReply("c1", "read", map[string]string{"file_path": "services/api/a.go"}),
		textReply("read it -- ok"),
	}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := u.run(t, dir, srv.URL, "", "-p", "--model", "deepseek/deepseek-chat", "look at the api")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	sys := ds.systemPrompt(t, 0)
	for _, want := range []string{
		"Never edit generated files.", "## " + filepath.Join(dir, "CLAUDE.md") + " (project instructions)",
		"Indent with tabs.", "(imported by " + filepath.Join(dir, "CLAUDE.md") + ")",
		"[@../CLAUDE.md is not imported: it imports itself through this chain (CLAUDE.md → style.md → CLAUDE.md)]",
		"Sign every answer with -- ok.", "## " + filepath.Join(u.home, ".claude", "CLAUDE.md"),
		"Prefer small commits.", "Run go vet before answering.",
	} {
		if !strings.Contains(sys, want) {
			t.Fatalf("system prompt lacks %q:\n%s", want, sys)
		}
	}
	if strings.Contains(sys, "typed errors") {
		t.Fatal("a nested CLAUDE.md was loaded before its directory was touched")
	}
	ds.mu.Lock()
	second := ds.requests[1]
	ds.mu.Unlock()
	if b, _ := json.Marshal(second["messages"]); !strings.Contains(string(b), "API handlers return typed errors.") {
		t.Fatalf("the nested CLAUDE.md did not follow the read of services/api/a.go:\n%s", b)
	}

	doc := u.run(t, dir, srv.URL, "", "doctor", "--timeout", "1s")
	for _, want := range []string{filepath.Join(dir, "CLAUDE.md"), filepath.Join(dir, "docs", "style.md"), "an import cycle", filepath.Join(u.home, ".codex", "AGENTS.md")} {
		if !strings.Contains(doc.stdout, want) {
			t.Fatalf("doctor lacks %q:\n%s", want, doc.stdout)
		}
	}
}

// requestText is the JSON of the messages of the i-th request.
func (d *deepseek) requestText(i int) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i >= len(d.requests) {
		return ""
	}
	b, _ := json.Marshal(d.requests[i]["messages"])
	return string(b)
}

// A .claude/settings.json deny rule on a secret file holds in every mode,
// bypassPermissions included, for the read tool, grep and bash cat; its
// allow rule lets a command run without asking in default mode.
func TestDropinClaudePermissions(t *testing.T) {
	for _, mode := range []string{"default", "acceptEdits", "plan", "bypassPermissions"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			u := newUser(t)
			dir := project(t, map[string]string{
				".claude/settings.json": `{
  "permissions": {
    "allow": ["Bash(touch built.txt)", "Bash(printenv DROPIN_MARK)"],
    "deny": ["Read(./secrets/**)"]
  },
  "env": {"DROPIN_MARK": "from-claude-settings"},
  "spinnerTipsEnabled": false
}`,
				"secrets/api-key.txt": "TOPSECRET-1234\n",
				"README.md":           "hello\n",
			})
			replies := []string{
				toolReply("c1", "read", map[string]string{"file_path": "secrets/api-key.txt"}),
				toolReply("c2", "grep", map[string]any{"pattern": "TOPSECRET", "output_mode": "content"}),
				toolReply("c3", "bash", map[string]string{"command": "cat secrets/api-key.txt", "description": "show the key"}),
			}
			if mode == "default" {
				replies = append(replies, toolReply("c4", "bash", map[string]string{"command": "touch built.txt", "description": "build"}),
					toolReply("c5", "bash", map[string]string{"command": "printenv DROPIN_MARK", "description": "env"}))
			}
			ds := &deepseek{replies: append(replies, textReply("done"))}
			srv := httptest.NewServer(ds)
			defer srv.Close()
			r := u.run(t, dir, srv.URL, "", "-p", "--trust", "--model", "deepseek/deepseek-chat", "--permission-mode", mode, "--output-format", "json", "show me the key")
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			last := ds.requestText(len(replies))
			if strings.Contains(last, "TOPSECRET-1234") {
				t.Fatalf("the secret reached the model in %s mode:\n%s", mode, last)
			}
			if n := strings.Count(last, "Read(./secrets/**)"); n < 2 {
				t.Fatalf("the refusals do not name the rule (%d):\n%s", n, last)
			}
			if mode == "default" {
				if _, err := os.Stat(filepath.Join(dir, "built.txt")); err != nil {
					t.Fatalf("the allowed command did not run: %v\n%s", err, last)
				}
				if !strings.Contains(last, "from-claude-settings") {
					t.Fatalf("the settings' env did not reach the command:\n%s", last)
				}
			}
		})
	}
}

// gitRepo makes dir a git repository with one commit and returns the short
// hash of HEAD.
func gitRepo(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	_ = os.RemoveAll(filepath.Join(dir, ".git"))
	for _, args := range [][]string{
		{"init", "-q"}, {"add", "-A"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	cmd := exec.Command("git", "rev-parse", "--short", "HEAD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// shipCommand is a Claude Code command using every expansion.
const shipCommand = `---
description: Ship a component
argument-hint: [component]
allowed-tools: Bash(git rev-parse --short HEAD), Read
---
Ship $ARGUMENTS (first word: $1) at commit !` + "`git rev-parse --short HEAD`" + `.
Release notes: @notes.md
`

// A custom command with $ARGUMENTS, @file and !`git rev-parse --short
// HEAD` runs from dsh -p "/ship x": the model receives the expansion and
// the log names the command.
func TestDropinCommandHeadless(t *testing.T) {
	u := newUser(t)
	dir := project(t, map[string]string{
		".claude/commands/release/ship.md": shipCommand,
		"notes.md":                         "Fixed the flux capacitor.\n",
	})
	head := gitRepo(t, dir)
	ds := &deepseek{replies: []string{textReply("shipped")}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := u.run(t, dir, srv.URL, "", "-p", "--trust", "--model", "deepseek/deepseek-chat", "/ship button now")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	msgs := ds.requestText(0)
	for _, want := range []string{"Ship button now (first word: button) at commit " + head + ".", "Fixed the flux capacitor."} {
		if !strings.Contains(msgs, want) {
			t.Fatalf("the model did not get %q:\n%s", want, msgs)
		}
	}
	if strings.Contains(msgs, "$ARGUMENTS") || strings.Contains(msgs, "!`") {
		t.Fatalf("unexpanded template:\n%s", msgs)
	}
	// The full name works too, and an unknown /word is an ordinary prompt.
	ds.setReplies(textReply("again"), textReply("plain"))
	if r := u.run(t, dir, srv.URL, "", "-p", "--model", "deepseek/deepseek-chat", "/release:ship lever"); r.code != 0 || !strings.Contains(ds.requestText(1), "Ship lever") {
		t.Fatalf("full name: exit %d %s\n%s", r.code, r.stderr, ds.requestText(1))
	}
	if r := u.run(t, dir, srv.URL, "", "-p", "--model", "deepseek/deepseek-chat", "/tmp/x is a path"); r.code != 0 || !strings.Contains(ds.requestText(2), "/tmp/x is a path") {
		t.Fatalf("plain prompt: exit %d %s", r.code, r.stderr)
	}
}

// dsh init runs the built-in /init headless: the agent may read and write
// AGENTS.md without asking (the command's allowed tools), and is told to
// carry CLAUDE.md over with --import-claude; writing any other file asks,
// so it is refused.
func TestDropinInit(t *testing.T) {
	u := newUser(t)
	dir := project(t, map[string]string{"CLAUDE.md": "Use pnpm, never npm.\n", "package.json": `{"scripts":{"test":"vitest"}}`})
	ds := &deepseek{replies: []string{
		toolReply("c1", "read", map[string]string{"file_path": "CLAUDE.md"}),
		toolReply("c2", "write", map[string]string{"file_path": "AGENTS.md", "content": "# Agents\n\nUse pnpm, never npm. Test with pnpm test.\n"}),
		toolReply("c3", "write", map[string]string{"file_path": "OTHER.md", "content": "not allowed"}),
		textReply("Wrote AGENTS.md."),
	}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := u.run(t, dir, srv.URL, "", "init", "--import-claude", "--model", "deepseek/deepseek-chat")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "AGENTS.md"))
	if err != nil || !strings.Contains(string(b), "Use pnpm") {
		t.Fatalf("AGENTS.md: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "OTHER.md")); err == nil {
		t.Fatal("/init wrote a file other than AGENTS.md")
	}
	first := ds.requestText(0)
	if !strings.Contains(first, "Write or update AGENTS.md") || !strings.Contains(first, "ARGUMENTS: import-claude") {
		t.Fatalf("the /init prompt:\n%s", first)
	}
}

// skillFile is a Claude Code skill with a supporting file and an allowed
// tool.
const skillFile = `---
name: release-notes
description: Write release notes from the changelog. Use when the user asks for release notes.
allowed-tools: Bash(touch notes-written.txt)
---
# Release notes

SKILL-BODY-MARKER: read CHANGELOG.md, then run touch notes-written.txt.
`

// A skill's name and description are in the system prompt, its body only
// once the model calls the skill tool; its allowed-tools let a command run
// without asking while it is active, and not when the skill was not
// called.
func TestDropinSkill(t *testing.T) {
	u := newUser(t)
	dir := project(t, map[string]string{
		".claude/skills/release-notes/SKILL.md":    skillFile,
		".claude/skills/release-notes/template.md": "## Changes\n",
		".claude/skills/broken/SKILL.md":           "no front matter at all",
		"CHANGELOG.md":                             "- fixed things\n",
	})
	touch := toolReply("c2", "bash", map[string]string{"command": "touch notes-written.txt", "description": "mark"})

	// Not called: the body never reaches the model and the command asks
	// (refused headless).
	ds := &deepseek{replies: []string{touch, textReply("no")}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	if r := u.run(t, dir, srv.URL, "", "-p", "--trust", "--sandbox", "danger-full-access", "--model", "deepseek/deepseek-chat", "write notes"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	sys := ds.systemPrompt(t, 0)
	if !strings.Contains(sys, "- release-notes: Write release notes from the changelog.") {
		t.Fatalf("the skill index is not in the system prompt:\n%s", sys)
	}
	for i := 0; i < 2; i++ {
		if b, _ := json.Marshal(ds.requests[i]); strings.Contains(string(b), "SKILL-BODY-MARKER") {
			t.Fatalf("request %d carries the skill's body before it was called", i)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "notes-written.txt")); err == nil {
		t.Fatal("the skill's allowed tool applied while the skill was not active")
	}

	// Called: the body comes back as the tool's result, and the allowed
	// command runs.
	ds.setReplies(toolReply("c1", "skill", map[string]string{"skill": "release-notes"}), touch, textReply("done"))
	if r := u.run(t, dir, srv.URL, "", "-p", "--sandbox", "danger-full-access", "--model", "deepseek/deepseek-chat", "write notes"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	after := ds.requestText(3)
	if !strings.Contains(after, "SKILL-BODY-MARKER") || !strings.Contains(after, filepath.Join(dir, ".claude", "skills", "release-notes")) {
		t.Fatalf("the skill's body and folder did not reach the model:\n%s", after)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes-written.txt")); err != nil {
		t.Fatalf("the skill's allowed tool did not apply: %v\n%s", err, ds.requestText(4))
	}

	doc := u.run(t, dir, srv.URL, "", "doctor", "--timeout", "1s")
	for _, want := range []string{"used: skill release-notes", filepath.Join(dir, ".claude", "skills", "broken", "SKILL.md"), "no front matter"} {
		if !strings.Contains(doc.stdout, want) {
			t.Fatalf("doctor lacks %q:\n%s", want, doc.stdout)
		}
	}
}
