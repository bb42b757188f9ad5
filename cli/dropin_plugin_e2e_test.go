//go:build linux

package cli_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A local Claude Code plugin directory, enabled in ~/.claude/settings.json
// through a directory marketplace, works unchanged: its command runs as
// /fmt:hello from dsh -p, its skill is in the index as fmt:tidy and loads
// on demand, its agent is a choice of the task tool, its PreToolUse hook
// runs with CLAUDE_PLUGIN_ROOT, and its .mcp.json server starts (with
// ${CLAUDE_PLUGIN_ROOT} in its arguments) and is called. What dsh does not
// run of it is said on stderr and in doctor. A plugin only the untrusted
// project enables does nothing, and doctor says why.
func TestDropinPlugin(t *testing.T) {
	fsSrv := npmServer(t, "server-filesystem")
	u := newUser(t)
	mkt := filepath.Join(u.home, "src", "my-marketplace")
	marketplace, _ := json.Marshal(map[string]any{
		"name": "local", "owner": map[string]string{"name": "Test"},
		"plugins": []any{
			map[string]any{"name": "fmt", "source": "./plugins/fmt", "description": "formatting helpers"},
			map[string]any{"name": "proj", "source": "./plugins/proj"},
		},
	})
	mcpJSON, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"files": map[string]any{"command": "node", "args": []string{fsSrv, "${CLAUDE_PLUGIN_ROOT}/data"}},
	}})
	writeFiles(t, mkt, map[string]string{
		".claude-plugin/marketplace.json": string(marketplace),
		"plugins/fmt/.claude-plugin/plugin.json": `{"name": "fmt", "version": "1.2.0", "description": "formatting helpers",
			"author": {"name": "Test"}, "outputStyles": "./styles"}`,
		"plugins/fmt/commands/hello.md":           "---\ndescription: Greet someone\nargument-hint: NAME\n---\nHELLO-CMD-MARKER greet $ARGUMENTS\n",
		"plugins/fmt/skills/tidy/SKILL.md":        "---\nname: tidy\ndescription: Tidy up imports.\n---\nTIDY-BODY-MARKER sort the imports.\n",
		"plugins/fmt/agents/checker.md":           "---\nname: checker\ndescription: Checks formatting.\ntools: Read\n---\nCHECKER-PROMPT\n",
		"plugins/fmt/hooks/hooks.json":            `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "\"${CLAUDE_PLUGIN_ROOT}\"/scripts/pre.sh"}]}]}}`,
		"plugins/fmt/scripts/pre.sh":              "#!/bin/sh\ncat > \"$CLAUDE_PROJECT_DIR/hook-payload.json\"\nprintf %s \"$CLAUDE_PLUGIN_ROOT\" > \"$CLAUDE_PROJECT_DIR/hook-root.txt\"\n",
		"plugins/fmt/.mcp.json":                   string(mcpJSON),
		"plugins/fmt/data/notes.txt":              "PLUGIN-DATA-MARKER\n",
		"plugins/proj/commands/secret.md":         "PROJ-CMD\n",
		"plugins/proj/.claude-plugin/plugin.json": `{"name": "proj"}`,
	})
	settingsJSON, _ := json.Marshal(map[string]any{
		"enabledPlugins":         map[string]bool{"fmt@local": true},
		"extraKnownMarketplaces": map[string]any{"local": map[string]any{"source": map[string]string{"source": "directory", "path": mkt}}},
	})
	writeFiles(t, u.home, map[string]string{".claude/settings.json": string(settingsJSON)})
	dir := project(t, map[string]string{
		".claude/settings.json": `{"enabledPlugins": {"proj@local": true}}`,
	})
	root := filepath.Join(mkt, "plugins", "fmt")

	list := u.run(t, dir, "http://127.0.0.1:1", "", "mcp", "list")
	if list.code != 0 || !strings.Contains(list.stdout, "plugin:fmt:files") || !strings.Contains(list.stdout, "mcp__plugin_fmt_files__read_text_file") ||
		!strings.Contains(list.stdout, "plugin fmt") {
		t.Fatalf("mcp list does not show the plugin's server and where it came from: %+v", list)
	}

	ds := &deepseek{replies: []string{
		toolReply("c1", "bash", map[string]string{"command": "echo hi", "description": "say hi"}),
		toolReply("c2", "skill", map[string]string{"skill": "fmt:tidy"}),
		toolReply("c3", "mcp__plugin_fmt_files__read_text_file", map[string]string{"path": filepath.Join(root, "data", "notes.txt")}),
		textReply("greeted"),
	}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := u.run(t, dir, srv.URL, "", "-p", "--permission-mode", "bypassPermissions", "--sandbox", "danger-full-access", "--model", "deepseek/deepseek-chat", "/fmt:hello world")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if first := ds.requestText(0); !strings.Contains(first, "HELLO-CMD-MARKER greet world") {
		t.Fatalf("the plugin's command did not make the prompt: %s", first)
	}
	sys := ds.systemPrompt(t, 0)
	if !strings.Contains(sys, "- fmt:tidy: Tidy up imports.") {
		t.Fatalf("the plugin's skill is not in the index:\n%s", sys)
	}
	if strings.Contains(ds.requestText(0), "TIDY-BODY-MARKER") || !strings.Contains(ds.requestText(2), "TIDY-BODY-MARKER") {
		t.Fatal("the plugin's skill body was not loaded on demand")
	}
	ds.mu.Lock()
	tools, _ := json.Marshal(ds.requests[0]["tools"])
	ds.mu.Unlock()
	if !strings.Contains(string(tools), "- fmt:checker: Checks formatting.") {
		t.Fatalf("the plugin's agent is not a choice of the task tool: %s", tools)
	}
	got, err := os.ReadFile(filepath.Join(dir, "hook-root.txt"))
	if err != nil || string(got) != root {
		t.Fatalf("the plugin's hook did not run with CLAUDE_PLUGIN_ROOT=%s: %q, %v", root, got, err)
	}
	if p, _ := os.ReadFile(filepath.Join(dir, "hook-payload.json")); !strings.Contains(string(p), `"tool_name":"Bash"`) || !strings.Contains(string(p), "echo hi") {
		t.Fatalf("the hook's payload: %s", p)
	}
	ds.mu.Lock()
	mcpOut := toolMessage(t, ds.requests[3], "c3")
	ds.mu.Unlock()
	if !strings.Contains(mcpOut, "PLUGIN-DATA-MARKER") {
		t.Fatalf("the plugin's MCP server did not answer with the file under ${CLAUDE_PLUGIN_ROOT}/data: %s", mcpOut)
	}
	if !strings.Contains(r.stderr, `"outputStyles" is not supported`) {
		t.Fatalf("stderr does not say what of the plugin is not used:\n%s", r.stderr)
	}
	if strings.Contains(ds.requestText(0), "PROJ-CMD") {
		t.Fatal("the untrusted project's plugin took effect")
	}

	// The untrusted project's plugin: its command is unknown, and doctor
	// lists the user's plugin as used and the project's file as skipped.
	doc := u.run(t, dir, srv.URL, "", "doctor", "--timeout", "1s")
	for _, want := range []string{
		"used: plugin fmt (fmt@local, enabled by " + filepath.Join(u.home, ".claude", "settings.json"),
		"1 command file(s)", "1 skill(s)", "1 agent(s)", "MCP server(s) files",
		filepath.Join(dir, ".claude", "settings.json"), "count once the project is trusted",
		`"outputStyles" is not supported`,
		"used: /fmt:hello (plugin fmt)",
	} {
		if !strings.Contains(doc.stdout, want) {
			t.Fatalf("doctor lacks %q:\n%s", want, doc.stdout)
		}
	}
	if strings.Contains(doc.stdout, "/proj:secret") {
		t.Fatalf("doctor lists the untrusted project's plugin command:\n%s", doc.stdout)
	}

	// Trusted, the project's plugin counts too.
	ds.setReplies(textReply("ok"))
	if r := u.run(t, dir, srv.URL, "", "-p", "--trust", "--model", "deepseek/deepseek-chat", "/proj:secret"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if last := ds.requestText(len(ds.requests) - 1); !strings.Contains(last, "PROJ-CMD") {
		t.Fatalf("the trusted project's plugin command did not run: %s", last)
	}

	// --plugin-dir enables one directly.
	ds.setReplies(textReply("ok"))
	other := project(t, nil)
	if r := u.run(t, other, srv.URL, "", "-p", "--plugin-dir", filepath.Join(mkt, "plugins", "proj"), "--model", "deepseek/deepseek-chat", "/proj:secret"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if last := ds.requestText(len(ds.requests) - 1); !strings.Contains(last, "PROJ-CMD") {
		t.Fatalf("--plugin-dir's command did not run: %s", last)
	}
}
