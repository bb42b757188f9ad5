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

// MCP servers from ~/.claude.json (its user scope and its entry for this
// project) and from ~/.codex/config.toml start and their tools are
// called, in an untrusted project (these are the user's own files);
// another project's entry of ~/.claude.json does not start here. dsh mcp
// list and dsh doctor say where each came from, and a config.toml key dsh
// does not use is said, not skipped silently.
func TestDropinMCPServers(t *testing.T) {
	everything, fsSrv := npmServer(t, "server-everything"), npmServer(t, "server-filesystem")
	u := newUser(t)
	dir := project(t, nil)
	data := filepath.Join(u.home, "data")
	writeFiles(t, data, map[string]string{"codex.txt": "CODEX-SERVER-READ-THIS\n", "claude.txt": "CLAUDE-PROJECT-SERVER-READ-THIS\n"})
	claudeJSON, _ := json.Marshal(map[string]any{
		"numStartups": 12, "theme": "dark",
		"mcpServers": map[string]any{"everything": map[string]any{"type": "stdio", "command": "node", "args": []string{everything, "stdio"}, "env": map[string]string{},
			"headersHelper": "/bin/false"}},
		"projects": map[string]any{
			dir:          map[string]any{"allowedTools": []string{}, "mcpServers": map[string]any{"projfiles": map[string]any{"command": "node", "args": []string{fsSrv, data}}}},
			"/elsewhere": map[string]any{"mcpServers": map[string]any{"elsewhere": map[string]any{"command": "node", "args": []string{fsSrv, "/"}}}},
		},
	})
	writeFiles(t, u.home, map[string]string{
		".claude.json": string(claudeJSON),
		".codex/config.toml": "model = \"o4-mini\"\n\n[mcp_servers.codexfiles]\ncommand = \"node\"\nargs = [\"" + fsSrv + "\", \"" + data + "\"]\n" +
			"startup_timeout_sec = 20\nenabled_tools = [\"read_text_file\"]\n",
	})

	list := u.run(t, dir, "http://127.0.0.1:1", "", "mcp", "list")
	if list.code != 0 {
		t.Fatalf("mcp list: %+v", list)
	}
	for _, want := range []string{
		"everything  stdio", "(claude.json " + filepath.Join(u.home, ".claude.json") + ")", "mcp__everything__echo",
		"projfiles  stdio", "(claude.json project " + filepath.Join(u.home, ".claude.json") + ")",
		"codexfiles  stdio", "(codex config.toml " + filepath.Join(u.home, ".codex", "config.toml") + ")", "mcp__codexfiles__read_text_file",
	} {
		if !strings.Contains(list.stdout, want) {
			t.Fatalf("mcp list lacks %q:\n%s", want, list.stdout)
		}
	}
	if strings.Contains(list.stdout, "elsewhere") {
		t.Fatalf("another project's server is listed:\n%s", list.stdout)
	}
	if !strings.Contains(list.stderr, "enabled_tools") || !strings.Contains(list.stderr, "mcpServers.everything.headersHelper: not supported") {
		t.Fatalf("mcp list does not say which keys of config.toml and .claude.json are not used:\n%s", list.stderr)
	}

	ds := &deepseek{replies: []string{
		toolReply("c1", "mcp__everything__echo", map[string]string{"message": "ECHO-FROM-CLAUDE-JSON"}),
		toolReply("c2", "mcp__codexfiles__read_text_file", map[string]string{"path": filepath.Join(data, "codex.txt")}),
		toolReply("c3", "mcp__projfiles__read_text_file", map[string]string{"path": filepath.Join(data, "claude.txt")}),
		textReply("called all three"),
	}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := u.run(t, dir, srv.URL, "", "-p", "--allowedTools", "mcp__everything", "--allowedTools", "mcp__codexfiles", "--allowedTools", "mcp__projfiles",
		"--model", "deepseek/deepseek-chat", "call the servers")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if len(ds.requests) != 4 {
		t.Fatalf("%d requests\n%s", len(ds.requests), r.stderr)
	}
	ds.mu.Lock()
	echo, codex, proj := toolMessage(t, ds.requests[1], "c1"), toolMessage(t, ds.requests[2], "c2"), toolMessage(t, ds.requests[3], "c3")
	ds.mu.Unlock()
	if !strings.Contains(echo, "ECHO-FROM-CLAUDE-JSON") || !strings.Contains(codex, "CODEX-SERVER-READ-THIS") || !strings.Contains(proj, "CLAUDE-PROJECT-SERVER-READ-THIS") {
		t.Fatalf("tool results:\n%s\n%s\n%s", echo, codex, proj)
	}
	if !strings.Contains(r.stderr, "enabled_tools") {
		t.Fatalf("the run does not say a config.toml key is not used:\n%s", r.stderr)
	}

	doc := u.run(t, dir, srv.URL, "", "doctor", "--timeout", "5s")
	for _, want := range []string{
		"read: " + filepath.Join(u.home, ".claude.json"), "read: " + filepath.Join(u.home, ".codex", "config.toml"),
		"server everything", "server codexfiles", "server projfiles", "enabled_tools", "headersHelper",
	} {
		if !strings.Contains(doc.stdout, want) {
			t.Fatalf("doctor lacks %q:\n%s", want, doc.stdout)
		}
	}
	_ = os.Getenv
}
