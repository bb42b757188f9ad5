package serve_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/dshq/dsh/internal/dshtest"
	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/client"
)

// TestServeRefusals: what TestServeAPI's client cannot send. Every route
// but /healthz wants the token, unknown paths included (401 before 404);
// the query-string token is taken only by the two stream routes; headers
// over 64 KiB and bodies over --max-request are refused even without a
// Content-Length; session ids that are paths lead nowhere.
func TestServeRefusals(t *testing.T) {
	e := dshtest.New(t, "..", reply)
	admin := token(t, e, "admin")
	p := startServe(t, e, nil, "--root", e.Dir, "--max-request", "4KiB")
	ctx := context.Background()
	c := client.New(p.URL, admin)
	s, err := c.CreateSession(ctx, api.CreateSession{Workspace: e.Dir, Prompt: "say hello"})
	if err != nil {
		t.Fatal(err)
	}
	collectTurn(t, c, s.ID, 0)

	do := func(method, path, tok string, body io.Reader, header http.Header) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, p.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			return resp.StatusCode, ""
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	stream := "/v1/sessions/" + string(s.ID) + "/stream"
	for _, tc := range []struct {
		name, method, path, tok string
		want                    int
	}{
		{"unknown path, no token", "GET", "/no/such/route", "", 401},
		{"unknown path", "GET", "/no/such/route", admin, 404},
		{"stream, no token", "GET", stream, "", 401},
		{"websocket, no token", "GET", "/v1/sessions/" + string(s.ID) + "/ws", "", 401},
		{"stream, query token", "GET", stream + "?access_token=" + admin, "", 200},
		{"list, query token", "GET", "/v1/sessions?access_token=" + admin, "", 401},
		{"send, query token", "POST", "/v1/sessions/" + string(s.ID) + "/messages?access_token=" + admin, "", 401},
		{"a path as the id", "GET", "/v1/sessions/..%2F..%2Fetc%2Fpasswd", admin, 404},
		{"a dot-dot id", "GET", "/v1/sessions/%2e%2e/events", admin, 404},
		{"a path as the stream id", "GET", "/v1/sessions/..%2F" + string(s.ID) + "/stream", admin, 404},
	} {
		if got, body := do(tc.method, tc.path, tc.tok, nil, nil); got != tc.want {
			t.Errorf("%s: %s %s answered %d, want %d: %s", tc.name, tc.method, tc.path, got, tc.want, body)
		}
	}

	// Oversized: a body streamed without a Content-Length, and headers.
	big := io.MultiReader(strings.NewReader(`{"text":"`), strings.NewReader(strings.Repeat("x", 8<<10)), strings.NewReader(`"}`))
	if got, body := do("POST", "/v1/sessions/"+string(s.ID)+"/messages", admin, io.NopCloser(big), http.Header{"Content-Type": {"application/json"}}); got != http.StatusRequestEntityTooLarge || !strings.Contains(body, api.CodeTooLarge) {
		t.Errorf("a chunked body over --max-request: %d %s", got, body)
	}
	if got, _ := do("GET", "/v1/sessions", admin, nil, http.Header{"X-Padding": {strings.Repeat("p", 80<<10)}}); got != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("80 KiB of headers: %d", got)
	}
	if got, body := do("POST", "/v1/sessions", admin, strings.NewReader(`{"workspace":`), nil); got != http.StatusBadRequest {
		t.Errorf("malformed JSON: %d %s", got, body)
	}
	// Nothing of the refused requests reached the session.
	page, err := c.Events(ctx, s.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range page.Events {
		if strings.Contains(string(ev.Data), "xxxxxxxx") {
			t.Fatal("the oversized message reached the log")
		}
	}
}
