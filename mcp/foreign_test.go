package mcp_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/settings"
)

// Claude Code's ~/.claude.json and Codex's config.toml contribute servers
// in dsh's shape, below dsh's own settings and .mcp.json, with the
// project's ~/.claude.json entry above .mcp.json.
func TestForeignServers(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".claude.json"), `{"mcpServers":{"a":{"command":"claude-a"},"shared":{"command":"from-claude-user"}},
"projects":{"`+proj+`":{"mcpServers":{"p":{"type":"http","url":"https://example.invalid/mcp"},"shared":{"command":"from-claude-project"}}},"/elsewhere":{"mcpServers":{"x":{"command":"x"}}}}}`)
	write(filepath.Join(home, ".codex", "config.toml"), `
[mcp_servers.figma]
url = "https://mcp.figma.example/mcp"
bearer_token_env_var = "FIGMA_TOKEN"
http_headers = { "X-Region" = "us" }
env_http_headers = { "X-Org" = "FIGMA_ORG" }
tool_timeout_sec = 12.5

[mcp_servers.docs]
command = "docs-server"
args = ["--port", "4000"]
env = { "API_KEY" = "k" }
enabled = false

[mcp_servers.shared]
command = "from-codex"
`)
	write(filepath.Join(proj, ".mcp.json"), `{"mcpServers":{"shared":{"command":"from-mcp-json"}}}`)
	cfg, err := settings.Load(settings.Input{Paths: settings.Paths{Home: t.TempDir(), Project: proj}, Trust: func(string) (bool, error) { return true, nil },
		Schema: settings.Schema{mcp.Key, mcp.StrictKey}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := mcp.Configured(cfg, proj, mcp.Homes{User: home})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]mcp.ServerConfig{}
	for _, s := range got {
		by[s.Name] = s
	}
	if len(by) != 5 || by["x"].Name != "" {
		t.Fatalf("servers %v", by)
	}
	if s := by["a"]; s.Source != mcp.SourceClaudeUser || s.Path != filepath.Join(home, ".claude.json") || s.Dir != "" {
		t.Fatalf("a %+v", s)
	}
	if s := by["p"]; s.Source != mcp.SourceClaudeProject || s.Transport() != mcp.TransportHTTP {
		t.Fatalf("p %+v", s)
	}
	if s := by["shared"]; s.Command != "from-claude-project" {
		t.Fatalf("shared comes from %+v, want ~/.claude.json's project entry over .mcp.json over the user scopes", s)
	}
	f := by["figma"]
	if f.Source != mcp.SourceCodex || f.Transport() != mcp.TransportHTTP || f.Headers["Authorization"] != "Bearer ${FIGMA_TOKEN}" ||
		f.Headers["X-Region"] != "us" || f.Headers["X-Org"] != "${FIGMA_ORG}" || f.TimeoutMs != 12500 {
		t.Fatalf("figma %+v", f)
	}
	if d := by["docs"]; !d.Disabled || d.Command != "docs-server" || len(d.Args) != 2 || d.Env["API_KEY"] != "k" {
		t.Fatalf("docs %+v", d)
	}

	write(filepath.Join(home, ".codex", "config.toml"), "[mcp_servers.bad\n")
	if _, err := mcp.Configured(cfg, proj, mcp.Homes{User: home}); err == nil {
		t.Fatal("a malformed config.toml is not reported")
	}
}
