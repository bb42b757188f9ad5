package cli_test

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// toolNames are the names of the tools a request offered the model.
func (d *deepseek) toolNames(t *testing.T, i int) []string {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if i >= len(d.requests) {
		t.Fatalf("only %d requests", len(d.requests))
	}
	var names []string
	tools, _ := d.requests[i]["tools"].([]any)
	for _, x := range tools {
		m, _ := x.(map[string]any)
		f, _ := m["function"].(map[string]any)
		if n, _ := f["name"].(string); n != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

const reviewerAgent = `---
name: reviewer
description: Reviews a change for bugs; use after editing code.
tools: Read, Grep, Glob
disallowedTools: Glob
model: inherit
color: blue
---
REVIEWER-PROMPT-MARKER: you are a careful code reviewer. Report bugs only.
`

// A .claude/agents agent is a choice of the task tool; the child the task
// tool starts for it gets the agent's body as its system prompt and only
// the agent's tools (Claude Code's Read, Grep are dsh's read, grep). The
// user's agent of the same name is shadowed by the project's, and dsh
// doctor says so.
func TestDropinAgent(t *testing.T) {
	u := newUser(t)
	writeFiles(t, u.home, map[string]string{
		".claude/agents/reviewer.md": "---\nname: reviewer\ndescription: the user's older reviewer\n---\nUSER-REVIEWER-MARKER\n",
	})
	dir := project(t, map[string]string{".claude/agents/reviewer.md": reviewerAgent, "main.go": "package main\n"})
	ds := &deepseek{replies: []string{
		toolReply("c1", "task", map[string]string{"description": "review", "prompt": "CHILD-TASK: review main.go", "subagent_type": "reviewer"}),
		textReply("no bugs found"),
		textReply("the reviewer found no bugs"),
	}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := u.run(t, dir, srv.URL, "", "-p", "--trust", "--allowedTools", "task", "--model", "deepseek/deepseek-chat", "review my change")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if len(ds.requests) != 3 {
		t.Fatalf("%d requests, want 3 (parent, child, parent)", len(ds.requests))
	}
	// The parent sees the agent among the task tool's choices.
	ds.mu.Lock()
	var taskDesc string
	for _, x := range ds.requests[0]["tools"].([]any) {
		f := x.(map[string]any)["function"].(map[string]any)
		if f["name"] == "task" {
			taskDesc, _ = f["description"].(string)
		}
	}
	ds.mu.Unlock()
	if !strings.Contains(taskDesc, "- reviewer: Reviews a change for bugs; use after editing code.") {
		t.Fatalf("the task tool does not offer the project's reviewer:\n%s", taskDesc)
	}
	if strings.Contains(ds.systemPrompt(t, 0), "REVIEWER-PROMPT-MARKER") {
		t.Fatal("the agent's prompt reached the parent's system prompt")
	}
	child := ds.systemPrompt(t, 1)
	if !strings.Contains(child, "REVIEWER-PROMPT-MARKER: you are a careful code reviewer.") {
		t.Fatalf("the child's system prompt lacks the agent's body:\n%s", child)
	}
	if strings.Contains(child, "USER-REVIEWER-MARKER") {
		t.Fatal("the shadowed user agent's body reached the child")
	}
	if !strings.Contains(ds.requestText(1), "CHILD-TASK: review main.go") {
		t.Fatalf("the child did not get the task's prompt: %s", ds.requestText(1))
	}
	if got := ds.toolNames(t, 1); !slices.Equal(got, []string{"grep", "read"}) {
		t.Fatalf("the child was offered %v, want only [grep read] (tools less disallowedTools)", got)
	}
	if !strings.Contains(r.stderr, "color: not used by dsh") {
		t.Fatalf("stderr does not say the agent's color key is not used:\n%s", r.stderr)
	}
	if got := ds.toolNames(t, 0); !slices.Contains(got, "bash") || !slices.Contains(got, "task") {
		t.Fatalf("the parent lost tools: %v", got)
	}

	doc := u.run(t, dir, srv.URL, "", "doctor", "--timeout", "1s")
	for _, want := range []string{
		"used: agent reviewer",
		filepath.Join(dir, ".claude", "agents", "reviewer.md"),
		"shadowed: agent reviewer",
		"agent reviewer: color: not used by dsh",
		filepath.Join(u.home, ".claude", "agents", "reviewer.md"),
	} {
		if !strings.Contains(doc.stdout, want) {
			t.Fatalf("doctor lacks %q:\n%s", want, doc.stdout)
		}
	}

	// Before trust the project's agent is not a choice (the user's is),
	// and doctor says why.
	other := project(t, map[string]string{".claude/agents/reviewer.md": reviewerAgent})
	doc = u.run(t, other, srv.URL, "", "doctor", "--timeout", "1s")
	if !strings.Contains(doc.stdout, filepath.Join(other, ".claude", "agents")) || !strings.Contains(doc.stdout, "not trusted") {
		t.Fatalf("doctor does not say the untrusted project's agents are skipped:\n%s", doc.stdout)
	}
	_ = os.Remove
}
