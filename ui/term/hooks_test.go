package term

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/hooks"
	"github.com/dshq/dsh/session"
)

// TestRunClaudeHookFileApplies: a UserPromptSubmit command hook in the
// user's ~/.claude/settings.json runs for a prompt typed in the terminal,
// its output reaches the model's context, and the log records it.
func TestRunClaudeHookFileApplies(t *testing.T) {
	userHome := t.TempDir()
	marker := filepath.Join(userHome, "hook-ran.json")
	script := filepath.Join(userHome, "hook.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat > '"+marker+"'\necho HOOK-CONTEXT-42\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"hooks": map[string]any{
		"UserPromptSubmit": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "sh '" + script + "'"}}}},
	}}
	b, _ := json.Marshal(cfg)
	if err := os.MkdirAll(filepath.Join(userHome, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(userHome, ".claude", "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	h := startUIWith(t, func(o *app.Options) {
		o.Site.UserHome = userHome
	}, nil)
	h.send("hello hook\r")
	h.wait("› hello hook", "That was the whole loop", "✻ ")

	// The hook ran, with the prompt on its stdin.
	got, err := os.ReadFile(marker)
	if err != nil {
		t.Fatalf("the hook did not run: %v", err)
	}
	var in map[string]any
	if err := json.Unmarshal(got, &in); err != nil || in["prompt"] != "hello hook" || in["hook_event_name"] != "UserPromptSubmit" ||
		in["permission_mode"] != "bypassPermissions" {
		t.Fatalf("hook input %s (%v)", got, err)
	}
	// The log records the run and its outcome.
	var results []hooks.Result
	for _, e := range h.events(hooks.TypeResult) {
		r, err := session.Decode[hooks.Result](e)
		if err == nil {
			results = append(results, r)
		}
	}
	if len(results) == 0 || results[0].Point != "UserPromptSubmit" {
		t.Fatalf("hook/result events %+v", results)
	}
	if len(h.events(hooks.TypeInvoked)) == 0 {
		t.Fatal("no hook/invoked event")
	}
	// Its output became context for the model.
	var ctx bool
	h.mu.Lock()
	for _, e := range h.log {
		ctx = ctx || strings.Contains(string(e.Data), "HOOK-CONTEXT-42")
	}
	h.mu.Unlock()
	if !ctx {
		t.Fatal("the hook's output is not in the session log")
	}
	h.exit()
}
