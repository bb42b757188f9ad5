package permission

import (
	"context"
	"strings"
	"testing"
)

// A grant allows its rules for its session (and subagents) until
// released; deny and ask rules still beat it; other sessions never see it.
func TestGrant(t *testing.T) {
	e := newEnv(t)
	c := mustNew(t, Config{Home: e.home, Cwd: e.root, Rules: append(rules(Deny, "settings", "Bash(git push:*)"), rules(Ask, "settings", "Bash(git commit:*)")...)})
	ctx := context.Background()
	decide := func(sid, line string) Behavior {
		t.Helper()
		h := &fakeHost{cwd: e.root, sid: sid}
		call := bashCall(line)
		call.Host = h
		return c.Decide(ctx, call, e.root).Behavior
	}
	if b := decide("s1", "git add -A"); b != Ask {
		t.Fatalf("before the grant: %s", b)
	}
	release, err := c.Grant("s1", "command /commit", []string{"Bash(git add:*)", "Bash(git push:*)", "Bash(git commit:*)"})
	if err != nil {
		t.Fatal(err)
	}
	if b := decide("s1", "git add -A"); b != Allow {
		t.Fatalf("granted: %s", b)
	}
	if b := decide("s1", "git push origin main"); b != Deny {
		t.Fatalf("a grant beat a deny rule: %s", b)
	}
	if b := decide("s1", "git commit -m x"); b != Ask {
		t.Fatalf("a grant beat an ask rule: %s", b)
	}
	if b := decide("s2", "git add -A"); b != Ask {
		t.Fatalf("another session saw the grant: %s", b)
	}
	var listed bool
	for _, r := range c.Rules("s1") {
		if r.Text == "Bash(git add:*)" && r.Source == "command /commit" {
			listed = true
		}
	}
	if !listed {
		t.Fatalf("grant not listed: %v", c.Rules("s1"))
	}
	release()
	release()
	if b := decide("s1", "git add -A"); b != Ask {
		t.Fatalf("after release: %s", b)
	}
	if _, err := c.Grant("s1", "x", []string{"Bash(git * main)"}); err == nil || !strings.Contains(err.Error(), "git * main") {
		t.Fatalf("a bad rule was granted: %v", err)
	}
}

// disableBypassPermissionsMode keeps bypassPermissions from being chosen.
func TestNoBypass(t *testing.T) {
	e := newEnv(t)
	c := mustNew(t, Config{Home: e.home, Cwd: e.root, Mode: ModeBypass, NoBypass: "/home/u/.claude/settings.json"})
	if c.Mode() != ModeDefault || len(c.Warnings()) != 1 {
		t.Fatalf("mode %s warnings %v", c.Mode(), c.Warnings())
	}
	if err := c.SetMode(ModeBypass); err == nil || !strings.Contains(err.Error(), "disableBypassPermissionsMode") {
		t.Fatalf("SetMode: %v", err)
	}
	if err := c.SetSessionMode("s", ModeBypass); err == nil {
		t.Fatal("SetSessionMode allowed bypass")
	}
	if err := c.SetMode(ModeAcceptEdits); err != nil {
		t.Fatal(err)
	}
}
