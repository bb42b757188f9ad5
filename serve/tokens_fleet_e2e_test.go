package serve_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshq/dsh/internal/dshtest"
	"github.com/dshq/dsh/internal/pgtest"
)

// TestTokensAcrossWorkers: with the PostgreSQL store the tokens live in
// the database, so two workers that share nothing but it (each its own
// DSH_HOME, no token file anywhere) both accept a token `dsh serve token
// create` made against the database, and both refuse it once it is
// revoked; the table holds its hash, never the token.
func TestTokensAcrossWorkers(t *testing.T) {
	dbURL, schema := pgtest.Schema(t)
	e := dshtest.New(t, "..", reply)
	root := t.TempDir()
	mkdirs(t, filepath.Join(root, "proj"))
	other := *e
	other.Home = t.TempDir()
	_ = os.Chmod(other.Home, 0o700)
	cfg := fmt.Sprintf(`{"sessionStore": "postgres", "postgres": {"schema": %q}}`, schema)
	for _, h := range []string{e.Home, other.Home} {
		if err := os.WriteFile(filepath.Join(h, "settings.json"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dbEnv := []string{"DSH_DATABASE_URL=" + dbURL}
	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(dshtest.Bin, append([]string{"serve", "token"}, args...)...)
		cmd.Dir = e.Dir
		cmd.Env = e.Environ(dbEnv...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("dsh serve token %v: %v %s", args, err, errb.String())
		}
		return strings.TrimSpace(out.String())
	}
	tok := cli("create", "fleet")
	readOnly := cli("create", "viewer", "--read-only")
	for _, h := range []string{e.Home, other.Home} {
		if _, err := os.Stat(filepath.Join(h, "serve", "tokens.json")); !os.IsNotExist(err) {
			t.Fatalf("a token file exists in %s (%v): tokens belong in the database", h, err)
		}
	}
	if list := cli("list"); !strings.Contains(list, "fleet") || !strings.Contains(list, "viewer") || strings.Contains(list, tok[13:]) {
		t.Fatalf("token list: %s", list)
	}
	a := startServe(t, e, dbEnv, "--root", root, "--worker", "wa", "--run-workers", "0")
	b := startServe(t, &other, dbEnv, "--root", root, "--worker", "wb", "--run-workers", "0")
	status := func(p *proc, raw, method, path string) int {
		t.Helper()
		req, _ := http.NewRequest(method, p.URL+path, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+raw)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, p := range []*proc{a, b} {
		if got := status(p, tok, "GET", "/v1/whoami"); got != http.StatusOK {
			t.Errorf("worker %s refused the token: %d", p.URL, got)
		}
		if got := status(p, readOnly, "GET", "/v1/sessions"); got != http.StatusOK {
			t.Errorf("worker %s refused the read-only token: %d", p.URL, got)
		}
		// The scope comes from the database too: read-only may not create.
		if got := status(p, readOnly, "POST", "/v1/sessions"); got != http.StatusForbidden {
			t.Errorf("worker %s let a read-only token create a session: %d", p.URL, got)
		}
		if got := status(p, "dsh_00000000_"+strings.Repeat("0", 64), "GET", "/v1/whoami"); got != http.StatusUnauthorized {
			t.Errorf("worker %s took an unknown token: %d", p.URL, got)
		}
	}
	cli("revoke", "fleet")
	for _, p := range []*proc{a, b} {
		if got := status(p, tok, "GET", "/v1/whoami"); got != http.StatusUnauthorized {
			t.Errorf("worker %s still takes the revoked token: %d", p.URL, got)
		}
		if got := status(p, readOnly, "GET", "/v1/whoami"); got != http.StatusOK {
			t.Errorf("worker %s refused the token that was not revoked: %d", p.URL, got)
		}
	}
}
