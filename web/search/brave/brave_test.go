package brave

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/dshq/dsh/web"
	"github.com/dshq/dsh/web/search/internal/apitest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSearchReplaysRecordedResponse(t *testing.T) {
	srv, log := apitest.Server(t, apitest.File(t, "web_search.json"))
	p := New(Config{APIKey: "brave-token", BaseURL: srv.URL + "/res/v1"})
	res, err := p.Search(context.Background(), web.SearchRequest{Query: "go context cancellation", Count: 50, BlockedDomains: []string{"w3schools.com"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []web.Source{
		{URL: "https://go.dev/blog/context", Title: "Go Concurrency Patterns: Context - The Go Programming Language",
			Snippet:   "In Go servers, each incoming request is handled in its own goroutine. Context makes it easy to pass request-scoped values, cancellation signals, and deadlines & more.",
			Published: "2014-07-29"},
		{URL: "https://pkg.go.dev/context", Title: "context package - context - Go Packages",
			Snippet:   "Package context defines the Context type, which carries deadlines, cancellation signals, and other request-scoped values across API boundaries and between processes.",
			Published: "3 days ago"},
		{URL: "https://stackoverflow.com/questions/44393995/what-is-context-in-go", Title: "How to use context cancellation in Go - Stack Overflow", Published: "2017-06-06"},
	}
	if d := cmp.Diff(want, res.Sources); d != "" {
		t.Errorf("sources (-want +got):\n%s", d)
	}
	r := log.Last(t)
	if r.Method != http.MethodGet || r.Path != "/res/v1/web/search" {
		t.Errorf("%s %s", r.Method, r.Path)
	}
	if r.Header.Get("X-Subscription-Token") != "brave-token" || r.Header.Get("Accept") != "application/json" {
		t.Errorf("headers %v", r.Header)
	}
	if q := r.Query["q"]; len(q) != 1 || q[0] != "go context cancellation -site:w3schools.com" {
		t.Errorf("q = %q", q)
	}
	if c := r.Query["count"]; len(c) != 1 || c[0] != "20" { // capped at the API's maximum
		t.Errorf("count = %q", c)
	}
}

func TestAvailability(t *testing.T) {
	if err := New(Config{}).Available(); err == nil || err.Error() != "BRAVE_API_KEY is not set" {
		t.Errorf("no key: %v", err)
	}
	if err := New(Config{APIKey: "k"}).Available(); err != nil {
		t.Error(err)
	}
}

func TestErrorMapping(t *testing.T) {
	apitest.ErrorMapping(t, "BRAVE_API_KEY", map[string]string{"401": "error_401.json", "429": "error_429.json"},
		func(base string, timeout time.Duration) web.SearchProvider {
			return New(Config{APIKey: "k", BaseURL: base, Timeout: timeout})
		})
	// Brave reports an invalid token as 422; that is a rejected credential.
	srv, _ := apitest.Server(t, apitest.Response{Status: 422, Body: apitest.Load(t, "error_422_token.json")})
	_, err := New(Config{APIKey: "bad", BaseURL: srv.URL}).Search(context.Background(), web.SearchRequest{Query: "q"})
	e := apitest.WantCode(t, err, web.CodeProviderUnavailable)
	apitest.Contains(t, e.Message, "HTTP 422 Unprocessable Entity: The provided subscription token is invalid.", "BRAVE_API_KEY")
	if e.Status != 422 {
		t.Errorf("status %d", e.Status)
	}
	// Brave's rate-limit reset header stands in for Retry-After.
	srv, _ = apitest.Server(t, apitest.Response{Status: 429, Header: map[string]string{"X-RateLimit-Reset": "1, 1419704"}, Body: apitest.Load(t, "error_429.json")})
	_, err = New(Config{APIKey: "k", BaseURL: srv.URL}).Search(context.Background(), web.SearchRequest{Query: "q"})
	apitest.Contains(t, apitest.WantCode(t, err, web.CodeRateLimited).Message, "Request rate limit exceeded for plan.", "retry after 1s")
}
