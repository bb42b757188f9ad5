package exa

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
	srv, log := apitest.Server(t, apitest.File(t, "search.json"))
	p := New(Config{APIKey: "exa-key", BaseURL: srv.URL + "/"})
	res, err := p.Search(context.Background(), web.SearchRequest{
		Query: "go context cancellation", Count: 5,
		AllowedDomains: []string{"go.dev", "pkg.go.dev"}, BlockedDomains: []string{"spam.test"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []web.Source{
		{URL: "https://go.dev/blog/context", Title: "Go Concurrency Patterns: Context - The Go Programming Language",
			Snippet:   "In Go servers, each incoming request is handled in its own goroutine. Request handlers often start additional goroutines to access backends such as databases and RPC services.",
			Published: "2014-07-29"},
		{URL: "https://pkg.go.dev/context", Title: "context package - context - Go Packages",
			Snippet: "Package context defines the Context type, which carries deadlines, cancellation signals, and other request-scoped values across API boundaries and between processes."},
		{URL: "https://example.org/no-highlights"},
	}
	if d := cmp.Diff(want, res.Sources); d != "" {
		t.Errorf("sources (-want +got):\n%s", d)
	}
	if res.Provider != ID || res.Answer != "" {
		t.Errorf("result %+v", res)
	}
	r := log.Last(t)
	if r.Method != http.MethodPost || r.Path != "/search" {
		t.Errorf("%s %s", r.Method, r.Path)
	}
	if r.Header.Get("x-api-key") != "exa-key" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", r.Header)
	}
	wantBody := map[string]any{
		"query": "go context cancellation", "type": "auto", "numResults": 5.0,
		"includeDomains": []any{"go.dev", "pkg.go.dev"}, "excludeDomains": []any{"spam.test"},
		"contents": map[string]any{"highlights": map[string]any{"numSentences": 3.0, "highlightsPerUrl": 1.0}},
	}
	if d := cmp.Diff(wantBody, r.JSON(t)); d != "" {
		t.Errorf("request body (-want +got):\n%s", d)
	}
}

func TestAvailability(t *testing.T) {
	if err := New(Config{}).Available(); err == nil || err.Error() != "EXA_API_KEY is not set" {
		t.Errorf("no key: %v", err)
	}
	if err := New(Config{APIKey: "k", BaseURL: "api.exa.ai"}).Available(); err == nil {
		t.Error("relative base URL accepted")
	}
	if err := New(Config{APIKey: "k"}).Available(); err != nil {
		t.Error(err)
	}
}

func TestErrorMapping(t *testing.T) {
	apitest.ErrorMapping(t, "EXA_API_KEY", map[string]string{"401": "error_401.json", "429": "error_429.json", "500": "error_500.json"},
		func(base string, timeout time.Duration) web.SearchProvider {
			return New(Config{APIKey: "k", BaseURL: base, Timeout: timeout})
		})
	srv, _ := apitest.Server(t, apitest.Response{Status: 401, Body: apitest.Load(t, "error_401.json")})
	_, err := New(Config{APIKey: "bad", BaseURL: srv.URL}).Search(context.Background(), web.SearchRequest{Query: "q"})
	apitest.Contains(t, apitest.WantCode(t, err, web.CodeProviderUnavailable).Message,
		"Exa rejected the request (HTTP 401 Unauthorized: Invalid API key); check EXA_API_KEY")
}
