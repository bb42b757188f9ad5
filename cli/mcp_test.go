package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dshq/dsh/permission/trust"
)

// `dsh mcp list` shows configured servers (user settings and .mcp.json),
// their state and tools; project servers wait for trust.
func TestMCPList(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "gotest", Version: "1"}, nil)
	type args struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "add", Description: "Add two integers.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *sdk.CallToolRequest, args) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()

	home, proj := t.TempDir(), t.TempDir()
	write := func(path, body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, "settings.json"), fmt.Sprintf(`{"mcpServers": {"gotest": {"type": "http", "url": %q, "headers": {"Authorization": "Bearer ${MCP_TOKEN}"}}}}`, hs.URL))
	write(filepath.Join(proj, ".mcp.json"), `{"mcpServers": {"proj": {"command": "/nonexistent/server"}}}`)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(dshBin, append([]string{"mcp", "list"}, args...)...)
		cmd.Dir = proj
		cmd.Env = append(os.Environ(), "DSH_HOME="+home, "MCP_TOKEN=tok")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("dsh mcp list %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	var sts []struct {
		Name, State, Source, Error string
		Tools                      []struct {
			Name     string
			ReadOnly bool
		}
	}
	if err := json.Unmarshal([]byte(run("--json")), &sts); err != nil {
		t.Fatal(err)
	}
	if len(sts) != 2 || sts[0].Name != "gotest" || sts[1].Name != "proj" {
		t.Fatalf("servers = %+v", sts)
	}
	if g := sts[0]; g.State != "connected" || len(g.Tools) != 1 || g.Tools[0].Name != "mcp__gotest__add" || !g.Tools[0].ReadOnly || g.Source != "user" {
		t.Errorf("gotest = %+v", g)
	}
	if p := sts[1]; p.State != "untrusted" || !strings.Contains(p.Error, "not trusted") || p.Source != "mcp.json" {
		t.Errorf("proj = %+v", p)
	}

	// The first run cached the tool list: without connecting, the lazy
	// server still shows its tools.
	out := run("--no-connect")
	for _, want := range []string{"gotest  http " + hs.URL, "idle, starts on first use · 1 tool", "mcp__gotest__add [read-only]  Add two integers.", "proj  stdio /nonexistent/server", "untrusted"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// --trust trusts the project (as for a run): its server is started
	// (and fails here), now and in later listings.
	for _, args := range [][]string{{"--trust"}, nil} {
		out = run(args...)
		if !strings.Contains(out, "failed · 0 tools · gave up after 1 failed attempt: starting: fork/exec /nonexistent/server") {
			t.Errorf("trusted project server (%v):\n%s", args, out)
		}
	}
	st := &trust.Store{Path: filepath.Join(home, trust.DefaultFile)}
	if ok, err := st.IsTrusted(proj, trust.ProjectFiles(proj)...); err != nil || !ok {
		t.Errorf("--trust did not record the trust: %v %v", ok, err)
	}
}
