package deepseek

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
	srv, log := apitest.Server(t, apitest.File(t, "messages.json"))
	p := New(Config{APIKey: "sk-ds", BaseURL: srv.URL + "/anthropic/v1"})
	res, err := p.Search(context.Background(), web.SearchRequest{Query: "go context cancellation", Count: 8, BlockedDomains: []string{"spam.test"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []web.Source{
		{URL: "https://go.dev/blog/context", Title: "Go Concurrency Patterns: Context",
			Snippet: "In Go servers, each incoming request is handled in its own goroutine.", Published: "July 29, 2014"},
		{URL: "https://pkg.go.dev/context", Title: "context package - context - Go Packages"},
	}
	if d := cmp.Diff(want, res.Sources); d != "" {
		t.Errorf("sources (-want +got):\n%s", d)
	}
	if res.Answer != "" {
		t.Errorf("answer %q", res.Answer)
	}
	r := log.Last(t)
	if r.Method != http.MethodPost || r.Path != "/anthropic/v1/messages" {
		t.Errorf("%s %s", r.Method, r.Path)
	}
	if r.Header.Get("x-api-key") != "sk-ds" || r.Header.Get("Authorization") != "Bearer sk-ds" || r.Header.Get("anthropic-version") != "2023-06-01" {
		t.Errorf("headers %v", r.Header)
	}
	wantBody := map[string]any{
		"model": "deepseek-v4-flash", "max_tokens": 4096.0,
		"messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "Perform a web search for the query: go context cancellation"}}}},
		"tools": []any{map[string]any{"type": "web_search_20250305", "name": "web_search", "max_uses": 5.0, "blocked_domains": []any{"spam.test"}}},
	}
	if d := cmp.Diff(wantBody, r.JSON(t)); d != "" {
		t.Errorf("request (-want +got):\n%s", d)
	}
}

func TestNoSearchIsAnError(t *testing.T) {
	srv, _ := apitest.Server(t, apitest.File(t, "messages_prose_only.json"))
	_, err := New(Config{APIKey: "k", BaseURL: srv.URL}).Search(context.Background(), web.SearchRequest{Query: "q"})
	apitest.Contains(t, apitest.WantCode(t, err, web.CodeProviderError).Message, "without running a web search")

	srv, _ = apitest.Server(t, apitest.File(t, "messages_tool_error.json"))
	_, err = New(Config{APIKey: "k", BaseURL: srv.URL}).Search(context.Background(), web.SearchRequest{Query: "q"})
	apitest.WantCode(t, err, web.CodeRateLimited)
}

func TestAvailability(t *testing.T) {
	if err := New(Config{}).Available(); err == nil || err.Error() != "DEEPSEEK_API_KEY is not set" {
		t.Errorf("no key: %v", err)
	}
	if err := New(Config{APIKey: "k"}).Available(); err != nil {
		t.Error(err)
	}
}

func TestErrorMapping(t *testing.T) {
	apitest.ErrorMapping(t, "DEEPSEEK_API_KEY", map[string]string{"401": "error_401.json", "429": "error_429.json", "500": "error_500.json"},
		func(base string, timeout time.Duration) web.SearchProvider {
			return New(Config{APIKey: "k", BaseURL: base, Timeout: timeout})
		})
	srv, _ := apitest.Server(t, apitest.Response{Status: 401, Body: apitest.Load(t, "error_401.json")})
	_, err := New(Config{APIKey: "bad", BaseURL: srv.URL}).Search(context.Background(), web.SearchRequest{Query: "q"})
	apitest.Contains(t, apitest.WantCode(t, err, web.CodeProviderUnavailable).Message, "Authentication Fails")
}
