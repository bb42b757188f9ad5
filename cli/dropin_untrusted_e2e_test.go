package cli_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// In a project that is not trusted, none of its drop-in files takes
// effect — CLAUDE.md, .claude/settings.json (permissions, env, hooks,
// enabledPlugins), commands, skills, agents, .mcp.json and a plugin only
// it enables — and dsh doctor names each file as skipped until trust.
func TestDropinUntrusted(t *testing.T) {
	u := newUser(t)
	settingsJSON, _ := json.Marshal(map[string]any{
		"env":         map[string]string{"PROJ_ENV": "from-the-project"},
		"permissions": map[string]any{"allow": []string{"Bash(touch:*)"}},
		"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "Bash", "hooks": []any{
			map[string]any{"type": "command", "command": "touch \"$CLAUDE_PROJECT_DIR/hook-ran.txt\""}}}}},
		"enabledPlugins":         map[string]bool{"p@m": true},
		"extraKnownMarketplaces": map[string]any{"m": map[string]any{"source": map[string]string{"source": "directory", "path": "./mkt"}}},
	})
	dir := project(t, map[string]string{
		"CLAUDE.md":                           "PROJECT-RULE-MARKER\n",
		".claude/settings.json":               string(settingsJSON),
		".claude/commands/ship.md":            "SHIP-BODY-MARKER\n",
		".claude/skills/s/SKILL.md":           "---\nname: projskill\ndescription: A project skill.\n---\nbody\n",
		".claude/agents/rev.md":               "---\nname: projagent\ndescription: A project agent.\n---\nbody\n",
		".mcp.json":                           `{"mcpServers": {"projserver": {"command": "true"}}}`,
		"mkt/.claude-plugin/marketplace.json": `{"name": "m", "owner": {"name": "x"}, "plugins": [{"name": "p", "source": "./p"}]}`,
		"mkt/p/skills/ps/SKILL.md":            "---\nname: ps\ndescription: A plugin skill.\n---\nbody\n",
	})
	ds := &deepseek{replies: []string{
		toolReply("c1", "bash", map[string]string{"command": "touch made.txt; echo env=$PROJ_ENV", "description": "touch"}),
		textReply("done"),
	}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := u.run(t, dir, srv.URL, "", "-p", "--sandbox", "danger-full-access", "--model", "deepseek/deepseek-chat", "go")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "until you trust it") {
		t.Fatalf("stderr does not say the project's files wait for trust:\n%s", r.stderr)
	}
	ds.mu.Lock()
	first, _ := json.Marshal(ds.requests[0])
	ds.mu.Unlock()
	for _, marker := range []string{"PROJECT-RULE-MARKER", "projskill", "projagent", "mcp__projserver", "p:ps", "SHIP-BODY-MARKER"} {
		if strings.Contains(string(first), marker) {
			t.Errorf("the untrusted project's %s reached the model", marker)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "made.txt")); err == nil {
		t.Error("the untrusted project's allow rule let a command run")
	}
	if _, err := os.Stat(filepath.Join(dir, "hook-ran.txt")); err == nil {
		t.Error("the untrusted project's hook ran")
	}
	if strings.Contains(ds.requestText(1), "from-the-project") {
		t.Error("the untrusted project's env reached a command")
	}

	doc := u.run(t, dir, srv.URL, "", "doctor", "--timeout", "1s")
	for _, file := range []string{"CLAUDE.md", ".claude/settings.json", ".claude/commands", ".claude/skills", ".claude/agents"} {
		line := filepath.Join(dir, file) + ": skipped"
		if !strings.Contains(doc.stdout, line) {
			t.Errorf("doctor lacks %q:\n%s", line, doc.stdout)
		}
	}
	for _, want := range []string{"count once the project is trusted", "server projserver: project " + dir + " is not trusted"} {
		if !strings.Contains(doc.stdout, want) {
			t.Errorf("doctor lacks %q:\n%s", want, doc.stdout)
		}
	}
}
