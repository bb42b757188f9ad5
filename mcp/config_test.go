package mcp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/settings"
)

func TestConfiguredLayersAndProjectFile(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, "settings.json"), `{"mcpServers": {
		"github": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}},
		"shared": {"command": "user-version"}
	}}`)
	write(filepath.Join(proj, ".mcp.json"), `{"mcpServers": {
		"shared": {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}},
		"files": {"command": "node", "args": ["fs.js", "."], "startup": "eager", "timeout": 1500, "toolSearch": true},
		"broken": {"type": "http"}
	}}`)
	write(filepath.Join(proj, ".dsh", "settings.local.json"), `{"mcpServers": {"local": {"type": "sse", "url": "http://127.0.0.1:9/sse"}}}`)
	cfg, err := settings.Load(settings.Input{Paths: settings.Paths{Home: home, Project: proj}, Schema: settings.Schema{mcp.Key},
		Trust: func(string) (bool, error) { return true, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if s := mcp.Key.Get(cfg); len(s) != 3 {
		t.Fatalf("merged settings servers = %v", s)
	}
	got, err := mcp.Configured(cfg, proj, mcp.Homes{})
	if err == nil || !strings.Contains(err.Error(), "mcpServers.broken") || !strings.Contains(err.Error(), `http server needs "url"`) {
		t.Errorf("err = %v", err)
	}
	by := map[string]mcp.ServerConfig{}
	var names []string
	for _, c := range got {
		by[c.Name] = c
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "files,github,local,shared" {
		t.Fatalf("servers = %v", names)
	}
	gh := by["github"]
	if gh.Transport() != mcp.TransportHTTP || gh.Source != mcp.SourceUser || gh.Dir != "" || gh.Headers["Authorization"] != "Bearer ${GH_TOKEN}" {
		t.Errorf("github = %+v", gh)
	}
	sh := by["shared"]
	if sh.Command != "npx" || sh.Source != mcp.SourceMCPJSON || sh.Dir != proj || sh.Env["K"] != "v" || sh.Path != filepath.Join(proj, ".mcp.json") {
		t.Errorf(".mcp.json must override the user's server and need trust: %+v", sh)
	}
	f := by["files"]
	if f.Lazy() || f.Timeout().Milliseconds() != 1500 || f.ToolSearch == nil || !*f.ToolSearch || f.Transport() != mcp.TransportStdio {
		t.Errorf("files = %+v", f)
	}
	if l := by["local"]; l.Transport() != mcp.TransportSSE || l.Source != mcp.SourceLocal || l.Dir != proj {
		t.Errorf("local = %+v", l)
	}
}

func TestParseServersValidation(t *testing.T) {
	raw := map[string]json.RawMessage{
		"ok":      json.RawMessage(`{"command":"x","unknownKey":1}`),
		"bad":     json.RawMessage(`{"type":"websocket","url":"ws://x"}`),
		"types":   json.RawMessage(`{"command":"x","args":"not-a-list"}`),
		"startup": json.RawMessage(`{"command":"x","startup":"soon"}`),
		"http":    json.RawMessage(`{"url":"http://x"}`),
		"%%":      json.RawMessage(`{"command":"x"}`),
	}
	got, err := mcp.ParseServers(raw, mcp.SourceUser, "settings.json", "")
	if len(got) != 2 || got[0].Name != "http" || got[0].Transport() != mcp.TransportHTTP || got[1].Name != "ok" {
		t.Errorf("servers = %+v", got)
	}
	for _, want := range []string{`unknown type "websocket"`, "mcpServers.types: args: expected []string", `unknown startup "soon"`, `server name "%%"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestToolName(t *testing.T) {
	for _, c := range [][3]string{
		{"github", "create_issue", "mcp__github__create_issue"},
		{"my server", "get-sum", "mcp__my_server__get-sum"},
		{"a.b", "x/y:z", "mcp__a_b__x_y_z"},
	} {
		if got := mcp.ToolName(c[0], c[1]); got != c[2] {
			t.Errorf("ToolName(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}

// A server name whose tool part holds "__" or ends in "_" would make tool
// names (and permission rules) ambiguous: validation refuses it.
func TestServerNameCannotSplitToolNames(t *testing.T) {
	for _, name := range []string{"github__evil", "github_", "a..b", "x: y", "a___b"} {
		err := mcp.ServerConfig{Name: name, Command: "x"}.Validate()
		if err == nil || !strings.Contains(err.Error(), `server name "`+name+`" is not allowed`) || !strings.Contains(err.Error(), "ambiguous") {
			t.Errorf("Validate(%q) = %v", name, err)
		}
	}
	for _, name := range []string{"github", "my server", "a_b", "a-b", "_private", "a.b"} {
		if err := (mcp.ServerConfig{Name: name, Command: "x"}).Validate(); err != nil {
			t.Errorf("Validate(%q) = %v", name, err)
		}
	}
	got, err := mcp.ParseServers(map[string]json.RawMessage{
		"github__evil": json.RawMessage(`{"command":"x"}`),
		"github":       json.RawMessage(`{"command":"x"}`),
	}, mcp.SourceUser, "settings.json", "")
	if len(got) != 1 || got[0].Name != "github" || err == nil || !strings.Contains(err.Error(), "mcpServers.github__evil") {
		t.Errorf("ParseServers = %+v, %v", got, err)
	}
}
