//go:build linux

package cli_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// npmServer is the entry point of an npm MCP server from node_modules, or
// skips when node or the package is missing.
func npmServer(t *testing.T, pkg string) string {
	t.Helper()
	needTool(t, "node")
	p, err := filepath.Abs(filepath.Join("..", "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is not installed (run npm ci)", pkg)
	}
	return p
}

// toolMessage is the content of the tool message answering call id in a
// request, as the provider received it.
func toolMessage(t *testing.T, req map[string]any, id string) string {
	t.Helper()
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] == "tool" && mm["tool_call_id"] == id {
			s, _ := mm["content"].(string)
			return s
		}
	}
	b, _ := json.Marshal(msgs)
	t.Fatalf("no tool message for %s in %s", id, b)
	return ""
}

// MCP results reach the model once: a 21 KB file read through
// server-filesystem (which mirrors the text as structuredContent) costs
// about 21 KB in the request, not twice that; an image from server-everything
// to a text-only model is a short note naming the file it was saved to.
func TestMCPResultsReachTheModelOnce(t *testing.T) {
	fsSrv, everything := npmServer(t, "server-filesystem"), npmServer(t, "server-everything")
	dir, home, data := t.TempDir(), t.TempDir(), t.TempDir()
	var text strings.Builder
	for text.Len() < 21<<10 {
		text.WriteString("line of the file that the model reads through an MCP server\n")
	}
	file := filepath.Join(data, "big.txt")
	os.WriteFile(file, []byte(text.String()), 0o644)
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"fs": map[string]any{"command": "node", "args": []string{fsSrv, data}},
		"ev": map[string]any{"command": "node", "args": []string{everything, "stdio"}},
	}})
	os.WriteFile(filepath.Join(home, "settings.json"), cfg, 0o600)
	// A first listing caches the tool lists, as any earlier run would.
	if r := dsh(t, dir, home, "http://127.0.0.1:1", "", "mcp", "list"); r.code != 0 || !strings.Contains(r.stdout, "mcp__fs__read_text_file") {
		t.Fatalf("mcp list: %+v", r)
	}
	ds := &deepseek{replies: []string{
		toolReply("call_fs", "mcp__fs__read_text_file", map[string]string{"path": file}),
		toolReply("call_img", "mcp__ev__get-tiny-image", map[string]string{}),
		textReply("read both"),
	}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := dsh(t, dir, home, srv.URL, "", "-p", "--allowedTools", "mcp__fs", "--allowedTools", "mcp__ev", "--model", "deepseek/deepseek-chat", "read it")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if len(ds.requests) != 3 {
		t.Fatalf("%d requests", len(ds.requests))
	}
	got := toolMessage(t, ds.requests[1], "call_fs")
	if n, want := len(got), text.Len(); n < want || float64(n) > 1.1*float64(want) {
		t.Errorf("the %d-byte file reached the model as %d bytes (want within 10%%)", want, n)
	}
	img := toolMessage(t, ds.requests[2], "call_img")
	if len(img) >= 1024 {
		t.Errorf("the image added %d bytes to the request, want under 1 KB:\n%.300s", len(img), img)
	}
	m := regexp.MustCompile(`\[image: image/png, [0-9,]+ bytes, saved to (\S+)\]`).FindStringSubmatch(img)
	if m == nil {
		t.Fatalf("no image note in %q", img)
	}
	b, err := os.ReadFile(m[1])
	if err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
		t.Errorf("the saved image %s: %v", m[1], err)
	}
	if st, err := os.Stat(m[1]); err == nil && st.Mode().Perm() != 0o600 {
		t.Errorf("saved image mode %v", st.Mode().Perm())
	}
}

// An MCP server that cannot start is reported on stderr in a headless
// run, with the end of its stderr.
func TestMCPStartFailureOnStderr(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	cfg := `{"mcpServers":{"broken":{"command":"sh","args":["-c","echo database is locked >&2; exit 1"]}}}`
	os.WriteFile(filepath.Join(home, "settings.json"), []byte(cfg), 0o600)
	ds := &deepseek{replies: []string{toolReply("c1", "bash", map[string]string{"command": "sleep 2", "description": "wait"}), textReply("ok")}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := dsh(t, dir, home, srv.URL, "", "-p", "--permission-mode", "bypassPermissions", "--model", "deepseek/deepseek-chat", "go")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	if !strings.Contains(r.stderr, `mcp: server "broken" failed to start`) || !strings.Contains(r.stderr, "database is locked") {
		t.Fatalf("stderr %q", r.stderr)
	}
	_ = exec.Command
}
