//go:build linux

package cli_test

import (
	"encoding/json"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// sandbox.mcp through the real binary: a stdio MCP server built on the npm
// SDK (testdata/mcp/probe.mjs) is asked by a scripted model to write a file
// in the workspace and one outside it, to read ~/.ssh/id_rsa and to
// connect to a port on the host's loopback. Sandboxed, its ordinary tool
// works and the kernel refuses the rest; with sandbox.mcp off the same
// calls succeed, so the refusals are the sandbox's and not the server's.
// dsh sandbox status and dsh doctor say which of the two it is.
func TestSandboxedMCPServer(t *testing.T) {
	needTool(t, "node")
	probe, err := filepath.Abs(filepath.Join("testdata", "mcp", "probe.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Skip("the npm MCP SDK is not installed (run npm ci)")
	}
	const secret = "mcp-sandbox-secret-51c3"
	for _, sandboxed := range []bool{true, false} {
		name := "sandbox.mcp"
		if !sandboxed {
			name = "unsandboxed"
		}
		t.Run(name, func(t *testing.T) {
			// outside is in the home, which stays visible in the sandbox
			// (the host's /tmp does not: a write there meets ENOENT).
			base := t.TempDir()
			ws, home, dshHome, outside := filepath.Join(base, "ws"), filepath.Join(base, "home"), filepath.Join(base, "dsh"), filepath.Join(base, "home", "outside")
			for _, d := range []string{ws, filepath.Join(home, ".ssh"), dshHome, outside} {
				if err := os.MkdirAll(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte(secret+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			var accepted atomic.Int32
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					accepted.Add(1)
					_, _ = c.Write([]byte("hello-from-the-host\n"))
					_ = c.Close()
				}
			}()
			// The probe and its node_modules live in this checkout, which
			// may itself be under the host's /tmp (a CI clone) and so be
			// hidden in the sandbox like the rest of /tmp: name it as an
			// additional directory, as a user would a server kept beside
			// the project. outside stays outside it.
			cfg, _ := json.Marshal(map[string]any{
				"sandbox":     map[string]any{"mcp": sandboxed},
				"permissions": map[string]any{"additionalDirectories": []string{repo}},
				"mcpServers":  map[string]any{"probe": map[string]any{"command": "node", "args": []string{probe}}},
			})
			if err := os.WriteFile(filepath.Join(dshHome, "settings.json"), cfg, 0o600); err != nil {
				t.Fatal(err)
			}
			iv := invocation{dir: ws, home: dshHome, baseURL: "http://127.0.0.1:1", env: []string{"HOME=" + home}}

			want := "stdio MCP servers: sandboxed (workspace-write)"
			if !sandboxed {
				want = "stdio MCP servers: not sandboxed (sandbox.mcp is off)"
			}
			if r := iv.run(t, "sandbox", "status"); r.code != 0 || !strings.Contains(r.stdout, want) {
				t.Fatalf("sandbox status does not say %q: %+v", want, r)
			}
			// The listing starts the server (in the sandbox too) and
			// caches its tools for the run below.
			if r := iv.run(t, "mcp", "list"); r.code != 0 || !strings.Contains(r.stdout, "mcp__probe__connect") {
				t.Fatalf("mcp list: %+v", r)
			}
			port := l.Addr().(*net.TCPAddr).Port
			ds := &deepseek{replies: []string{
				toolReply("c_in", "mcp__probe__write", map[string]any{"path": filepath.Join(ws, "inside.txt"), "text": "in"}),
				toolReply("c_out", "mcp__probe__write", map[string]any{"path": filepath.Join(outside, "escape.txt"), "text": "out"}),
				toolReply("c_key", "mcp__probe__read", map[string]any{"path": filepath.Join(home, ".ssh", "id_rsa")}),
				toolReply("c_net", "mcp__probe__connect", map[string]any{"host": "127.0.0.1", "port": port}),
				textReply("done"),
			}}
			srv := httptest.NewServer(ds)
			defer srv.Close()
			iv.baseURL = srv.URL
			r := iv.run(t, "-p", "--allowedTools", "mcp__probe", "--model", "deepseek/deepseek-chat", "probe")
			if r.code != 0 {
				t.Fatalf("%+v", r)
			}
			ds.mu.Lock()
			last := ds.requests[len(ds.requests)-1]
			ds.mu.Unlock()
			in, out, key, nett := toolMessage(t, last, "c_in"), toolMessage(t, last, "c_out"), toolMessage(t, last, "c_key"), toolMessage(t, last, "c_net")
			if !strings.Contains(in, "wrote") {
				t.Errorf("the server's ordinary write in the workspace failed: %s", in)
			}
			if b, err := os.ReadFile(filepath.Join(ws, "inside.txt")); err != nil || string(b) != "in" {
				t.Errorf("inside.txt = %q, %v", b, err)
			}
			_, escErr := os.Stat(filepath.Join(outside, "escape.txt"))
			if sandboxed {
				if escErr == nil || !strings.Contains(out, "EACCES") {
					t.Errorf("the write outside the workspace was not refused by the kernel (%v): %s", escErr, out)
				}
				if strings.Contains(key, secret) {
					t.Errorf("the server read ~/.ssh/id_rsa: %s", key)
				}
				if n := accepted.Load(); n != 0 || !strings.Contains(nett, "error") {
					t.Errorf("the server reached the host's loopback (%d connections): %s", n, nett)
				}
				if r := iv.run(t, "doctor"); !strings.Contains(r.stdout+r.stderr, "sandboxed (workspace-write)") {
					t.Errorf("dsh doctor does not say the server is sandboxed: %s%s", r.stdout, r.stderr)
				}
				return
			}
			if escErr != nil || !strings.Contains(out, "wrote") {
				t.Errorf("unsandboxed, the write outside failed (%v): %s", escErr, out)
			}
			if !strings.Contains(key, secret) {
				t.Errorf("unsandboxed, the key was not read: %s", key)
			}
			if !strings.Contains(nett, "hello-from-the-host") {
				t.Errorf("unsandboxed, the connection failed: %s", nett)
			}
		})
	}
}
