// Package apitest replays recorded API responses from loopback servers for
// the search provider tests.
package apitest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/web"
)

// Request is what a server received.
type Request struct {
	Method string
	Path   string
	Query  map[string][]string
	Header http.Header
	Body   []byte
}

// JSON decodes the request body.
func (r Request) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, r.Body)
	}
	return m
}

// Log records requests.
type Log struct {
	mu   sync.Mutex
	reqs []Request
}

// Last returns the latest request.
func (l *Log) Last(t *testing.T) Request {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.reqs) == 0 {
		t.Fatal("the server received no request")
	}
	return l.reqs[len(l.reqs)-1]
}

// Len is how many requests arrived.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs)
}

// Response is one canned answer.
type Response struct {
	Status int
	Header map[string]string
	Body   []byte
	// Hang makes the server wait until the client gives up.
	Hang bool
}

// Load reads testdata/name.
func Load(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// File is a 200 JSON response with testdata/name.
func File(t *testing.T, name string) Response {
	return Response{Status: 200, Header: map[string]string{"Content-Type": "application/json"}, Body: Load(t, name)}
}

// Server answers every request with resp and records it.
func Server(t *testing.T, resp Response) (*httptest.Server, *Log) {
	t.Helper()
	log := &Log{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		log.mu.Lock()
		log.reqs = append(log.reqs, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: body})
		log.mu.Unlock()
		if resp.Hang {
			<-r.Context().Done()
			return
		}
		for k, v := range resp.Header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(resp.Status)
		_, _ = w.Write(resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv, log
}

// WantCode asserts err is a WebError with code.
func WantCode(t *testing.T, err error, code string) *llm.Error {
	t.Helper()
	e, ok := llm.AsError(err)
	if !ok || e.Name != web.ErrorName || e.Code != code {
		t.Fatalf("want WebError %s, got %T %v", code, err, err)
	}
	return e
}

// Contains asserts substrings.
func Contains(t *testing.T, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("missing %q in %q", w, s)
		}
	}
}

// ErrorMapping runs the shared error cases against a provider built for a
// base URL: 401 → PROVIDER_UNAVAILABLE naming the credential, 429 →
// RATE_LIMITED with Retry-After, 503 → HTTP_STATUS, an unreadable body →
// PROVIDER_ERROR, a hung server → TIMEOUT, cancellation → ABORTED.
// files holds the recorded error bodies by status ("401", "429", "500").
func ErrorMapping(t *testing.T, credential string, files map[string]string,
	newProvider func(baseURL string, timeout time.Duration) web.SearchProvider) {
	t.Helper()
	search := func(base string, timeout time.Duration, ctx context.Context) error {
		_, err := newProvider(base, timeout).Search(ctx, web.SearchRequest{Query: "q", Count: 3})
		return err
	}
	bg := context.Background()
	body := func(status string) []byte {
		if files[status] == "" {
			return []byte(`{"error":"something went wrong"}`)
		}
		return Load(t, files[status])
	}
	json := map[string]string{"Content-Type": "application/json"}

	srv, _ := Server(t, Response{Status: 401, Header: json, Body: body("401")})
	e := WantCode(t, search(srv.URL, 0, bg), web.CodeProviderUnavailable)
	Contains(t, e.Message, "HTTP 401", credential)
	if e.Status != 401 {
		t.Errorf("status %d", e.Status)
	}

	srv, _ = Server(t, Response{Status: 429, Header: map[string]string{"Content-Type": "application/json", "Retry-After": "12"}, Body: body("429")})
	err := search(srv.URL, 0, bg)
	Contains(t, WantCode(t, err, web.CodeRateLimited).Message, "rate limit", "retry after 12s")
	if d, ok := web.RetryAfter(err); !ok || d != 12*time.Second {
		t.Errorf("RetryAfter = %v, %v", d, ok)
	}

	srv, _ = Server(t, Response{Status: 503, Header: json, Body: body("500")})
	if e := WantCode(t, search(srv.URL, 0, bg), web.CodeHTTPStatus); e.Status != 503 {
		t.Errorf("status %d", e.Status)
	}

	srv, _ = Server(t, Response{Status: 200, Header: json, Body: []byte(`{"results": 42, "web": 1, "choices": 1, "content": 7}`)})
	WantCode(t, search(srv.URL, 0, bg), web.CodeProviderError)

	srv, _ = Server(t, Response{Hang: true})
	start := time.Now()
	WantCode(t, search(srv.URL, 100*time.Millisecond, bg), web.CodeTimeout)
	if time.Since(start) > 5*time.Second {
		t.Error("timeout not honoured")
	}
	ctx, cancel := context.WithCancel(bg)
	time.AfterFunc(50*time.Millisecond, cancel)
	WantCode(t, search(srv.URL, 0, ctx), web.CodeAborted)

	srv.Close() // connection refused
	WantCode(t, search(srv.URL, 0, bg), web.CodeProviderError)
}
