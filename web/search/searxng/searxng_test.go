package searxng

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
	res, err := New(Config{BaseURL: srv.URL + "/searx/"}).Search(context.Background(), web.SearchRequest{Query: "go context cancellation"})
	if err != nil {
		t.Fatal(err)
	}
	want := []web.Source{
		{URL: "https://go.dev/blog/context", Title: "Go Concurrency Patterns: Context - The Go Programming Language",
			Snippet: "In Go servers, each incoming request is handled in its own goroutine.", Published: "2014-07-29"},
		{URL: "https://pkg.go.dev/context", Title: "context package - context - Go Packages",
			Snippet: "Package context defines the Context type, which carries deadlines, cancellation signals, and other request-scoped values."},
	}
	if d := cmp.Diff(want, res.Sources); d != "" {
		t.Errorf("sources (-want +got):\n%s", d)
	}
	r := log.Last(t)
	if r.Method != http.MethodGet || r.Path != "/searx/search" || r.Query["format"][0] != "json" || r.Query["q"][0] != "go context cancellation" {
		t.Errorf("%s %s %v", r.Method, r.Path, r.Query)
	}
}

func TestAvailability(t *testing.T) {
	if err := New(Config{}).Available(); err == nil || err.Error() != "SEARXNG_URL is not set" {
		t.Errorf("no URL: %v", err)
	}
}

func TestErrorMapping(t *testing.T) {
	apitest.ErrorMapping(t, "SEARXNG_URL", nil, func(base string, timeout time.Duration) web.SearchProvider {
		return New(Config{BaseURL: base, Timeout: timeout})
	})
	// An instance without the json format answers 403.
	srv, _ := apitest.Server(t, apitest.Response{Status: 403, Header: map[string]string{"Content-Type": "text/html"}, Body: []byte("<html>Forbidden</html>")})
	_, err := New(Config{BaseURL: srv.URL}).Search(context.Background(), web.SearchRequest{Query: "q"})
	apitest.WantCode(t, err, web.CodeProviderUnavailable)
}
