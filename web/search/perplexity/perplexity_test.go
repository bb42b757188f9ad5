package perplexity

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
	srv, log := apitest.Server(t, apitest.File(t, "chat_completion.json"))
	p := New(Config{APIKey: "pplx-key", BaseURL: srv.URL, Recency: "week"})
	res, err := p.Search(context.Background(), web.SearchRequest{Query: "go context cancellation", Count: 8,
		AllowedDomains: []string{"go.dev"}, BlockedDomains: []string{"medium.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "Go's context package propagates cancellation and deadlines across API boundaries [1][2]. Always call the cancel function returned by WithCancel or WithTimeout [2]." {
		t.Errorf("answer %q", res.Answer)
	}
	want := []web.Source{
		{URL: "https://go.dev/blog/context", Title: "Go Concurrency Patterns: Context", Snippet: "In Go servers, each incoming request is handled in its own goroutine.", Published: "2014-07-29"},
		{URL: "https://pkg.go.dev/context", Title: "context package - context - Go Packages"},
	}
	if d := cmp.Diff(want, res.Sources); d != "" {
		t.Errorf("sources (-want +got):\n%s", d)
	}
	r := log.Last(t)
	if r.Method != http.MethodPost || r.Path != "/chat/completions" || r.Header.Get("Authorization") != "Bearer pplx-key" {
		t.Errorf("%s %s %v", r.Method, r.Path, r.Header)
	}
	wantBody := map[string]any{
		"model": "sonar", "max_tokens": 1024.0,
		"messages":              []any{map[string]any{"role": "user", "content": "go context cancellation"}},
		"search_recency_filter": "week",
		"search_domain_filter":  []any{"go.dev", "-medium.com"},
	}
	if d := cmp.Diff(wantBody, r.JSON(t)); d != "" {
		t.Errorf("request (-want +got):\n%s", d)
	}
}

func TestCitationsFallback(t *testing.T) {
	srv, _ := apitest.Server(t, apitest.File(t, "chat_completion_citations_only.json"))
	res, err := New(Config{APIKey: "k", BaseURL: srv.URL}).Search(context.Background(), web.SearchRequest{Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	want := []web.Source{{URL: "https://go.dev/blog/context"}, {URL: "https://pkg.go.dev/context"}}
	if d := cmp.Diff(want, res.Sources); d != "" || res.Answer != "" {
		t.Errorf("answer %q sources (-want +got):\n%s", res.Answer, d)
	}
	// A present but empty search_results list suppresses the citations.
	srv, _ = apitest.Server(t, apitest.Response{Status: 200, Body: []byte(`{"choices":[{"message":{"content":"x"}}],"search_results":[],"citations":["https://a.test"]}`)})
	res, err = New(Config{APIKey: "k", BaseURL: srv.URL}).Search(context.Background(), web.SearchRequest{Query: "q"})
	if err != nil || len(res.Sources) != 0 || res.Answer != "x" {
		t.Errorf("empty search_results: %+v %v", res, err)
	}
}

func TestAvailability(t *testing.T) {
	if err := New(Config{}).Available(); err == nil || err.Error() != "PERPLEXITY_API_KEY is not set" {
		t.Errorf("no key: %v", err)
	}
	if err := New(Config{APIKey: "k", Recency: "decade"}).Available(); err == nil {
		t.Error("bad recency accepted")
	}
}

func TestErrorMapping(t *testing.T) {
	apitest.ErrorMapping(t, "PERPLEXITY_API_KEY", map[string]string{"401": "error_401.json", "429": "error_429.json"},
		func(base string, timeout time.Duration) web.SearchProvider {
			return New(Config{APIKey: "k", BaseURL: base, Timeout: timeout})
		})
	srv, _ := apitest.Server(t, apitest.Response{Status: 401, Body: apitest.Load(t, "error_401.json")})
	_, err := New(Config{APIKey: "bad", BaseURL: srv.URL}).Search(context.Background(), web.SearchRequest{Query: "q"})
	apitest.Contains(t, apitest.WantCode(t, err, web.CodeProviderUnavailable).Message, "Invalid API key provided.")
	// An HTML error page (a proxy in front of the API) still maps by status.
	srv, _ = apitest.Server(t, apitest.Response{Status: 502, Header: map[string]string{"Content-Type": "text/html"}, Body: []byte("<html><body>Bad gateway</body></html>")})
	_, err = New(Config{APIKey: "k", BaseURL: srv.URL}).Search(context.Background(), web.SearchRequest{Query: "q"})
	apitest.Contains(t, apitest.WantCode(t, err, web.CodeHTTPStatus).Message, "Perplexity is failing (HTTP 502 Bad Gateway); try again later")
}
