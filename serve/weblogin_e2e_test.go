package serve_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dshq/dsh/internal/dshtest"
	"github.com/dshq/dsh/internal/pgtest"
)

// TestWebLoginAcrossWorkers: two dsh serve workers on one PostgreSQL share
// the web UI's log-ins. A cookie made on worker A opens the UI on worker B
// with the same CSRF token and makes a session there (a state-changing
// request, CSRF checked); a log-out on B is refused on A at once; a
// revoked token ends a log-in on both. The database keeps neither the
// cookie nor the CSRF token nor the bearer token.
func TestWebLoginAcrossWorkers(t *testing.T) {
	dbURL, schema := pgtest.Schema(t)
	e := dshtest.New(t, "..", reply)
	root := t.TempDir()
	ws := filepath.Join(root, "proj")
	mkdirs(t, ws)
	ws, _ = filepath.EvalSymlinks(ws)
	cfg := fmt.Sprintf(`{"sessionStore": "postgres", "postgres": {"url": %q, "schema": %q}}`, dbURL, schema)
	if err := os.WriteFile(filepath.Join(e.Home, "settings.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := token(t, e, "alice")
	a := startServe(t, e, []string{"DSH_DATABASE_URL=" + dbURL}, "--root", root, "--worker", "wa", "--run-workers", "0")
	b := startServe(t, e, []string{"DSH_DATABASE_URL=" + dbURL}, "--root", root, "--worker", "wb", "--run-workers", "0")
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(p *proc, method, path, body, cookie string, hdr map[string]string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, p.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: "dsh_ui", Value: cookie})
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := newContract(t, p.URL).client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		bb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(bb)
	}
	login := func(p *proc) string {
		t.Helper()
		req, _ := http.NewRequest("POST", p.URL+"/ui/login", strings.NewReader("token="+url.QueryEscape(tok)))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for _, c := range resp.Cookies() {
			if c.Name == "dsh_ui" && c.Value != "" && resp.StatusCode == http.StatusSeeOther {
				return c.Value
			}
		}
		t.Fatalf("log-in on %s: %d %v", p.URL, resp.StatusCode, resp.Cookies())
		return ""
	}
	csrfOf := func(p *proc, cookie string) string {
		t.Helper()
		resp, body := do(p, "GET", "/ui", "", cookie, nil)
		m := regexp.MustCompile(`"csrf":"([^"]+)"`).FindStringSubmatch(body)
		if resp.StatusCode != 200 || m == nil {
			t.Fatalf("GET /ui on %s with the cookie: %d, no UI (%.200s)", p.URL, resp.StatusCode, body)
		}
		return m[1]
	}
	changing := func(p *proc, csrf string) map[string]string {
		return map[string]string{"Content-Type": "application/json", "X-CSRF-Token": csrf, "Origin": p.URL, "Sec-Fetch-Site": "same-origin"}
	}

	cookie := login(a)
	csrf := csrfOf(a, cookie)
	if got := csrfOf(b, cookie); got != csrf {
		t.Fatalf("worker B gives the log-in the CSRF token %q, A %q", got, csrf)
	}
	create := `{"workspace":` + js(ws) + `}`
	if resp, _ := do(b, "POST", "/v1/sessions", create, cookie, map[string]string{"Content-Type": "application/json", "Origin": b.URL, "Sec-Fetch-Site": "same-origin"}); resp.StatusCode != 403 {
		t.Fatalf("worker B took a change without the CSRF token: %d", resp.StatusCode)
	}
	if resp, body := do(b, "POST", "/v1/sessions", create, cookie, changing(b, csrf)); resp.StatusCode != 201 {
		t.Fatalf("worker B refused A's log-in for a change: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(a, "GET", "/v1/whoami", "", cookie, nil); resp.StatusCode != 200 || !strings.Contains(body, `"alice"`) {
		t.Fatalf("whoami on A: %d %s", resp.StatusCode, body)
	}

	// The database holds the log-in under a hash, naming the token by id
	// and hash: no cookie, CSRF token or bearer token in it.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var dump string
	if err := conn.QueryRow(ctx, `SELECT coalesce(string_agg(key || ' ' || token_id || ' ' || token_hash || ' ' || expires_at, E'\n'), '') FROM `+
		pgx.Identifier{schema, "web_logins"}.Sanitize()).Scan(&dump); err != nil {
		t.Fatal(err)
	}
	if strings.Count(dump, "\n") != 0 || dump == "" {
		t.Fatalf("web_logins holds %q, want one row", dump)
	}
	for what, secret := range map[string]string{"cookie": cookie, "CSRF token": csrf, "bearer token": tok, "token's secret": tok[13:]} {
		if strings.Contains(dump, secret) {
			t.Errorf("web_logins holds the %s", what)
		}
	}

	// Logging out on B ends the log-in on A.
	if resp, _ := do(b, "POST", "/ui/logout", "", cookie, changing(b, csrf)); resp.StatusCode != 204 {
		t.Fatalf("log-out on B: %d", resp.StatusCode)
	}
	if resp, _ := do(a, "GET", "/v1/whoami", "", cookie, nil); resp.StatusCode != 401 {
		t.Fatalf("A after the log-out on B: %d", resp.StatusCode)
	}
	if resp, _ := do(a, "POST", "/v1/sessions", create, cookie, changing(a, csrf)); resp.StatusCode != 401 {
		t.Fatalf("a change on A after the log-out on B: %d", resp.StatusCode)
	}
	if resp, body := do(a, "GET", "/ui", "", cookie, nil); resp.StatusCode != 200 || !strings.Contains(body, `action="/ui/login"`) {
		t.Fatalf("/ui on A after the log-out on B: %d", resp.StatusCode)
	}

	// Revoking the token ends a log-in made with it on every worker.
	cookie = login(b)
	if resp, _ := do(a, "GET", "/v1/whoami", "", cookie, nil); resp.StatusCode != 200 {
		t.Fatalf("B's new log-in on A: %d", resp.StatusCode)
	}
	if r := e.Run("", "serve", "token", "revoke", "alice"); r.Code != 0 {
		t.Fatalf("token revoke: %d %s", r.Code, r.Stderr)
	}
	for _, p := range []*proc{a, b} {
		if resp, _ := do(p, "GET", "/v1/whoami", "", cookie, nil); resp.StatusCode != 401 {
			t.Fatalf("%s after the token was revoked: %d", p.URL, resp.StatusCode)
		}
	}
}
