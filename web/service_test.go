package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/dshq/dsh/llm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeSearch struct {
	id      string
	unavail error
	sources []Source
	calls   atomic.Int32
	last    SearchRequest
}

func (f *fakeSearch) ID() string       { return f.id }
func (f *fakeSearch) Available() error { return f.unavail }
func (f *fakeSearch) Search(_ context.Context, req SearchRequest) (*SearchResult, error) {
	f.calls.Add(1)
	f.last = req
	return &SearchResult{Sources: append([]Source(nil), f.sources...)}, nil
}

type fakeFetch struct {
	id     string
	calls  atomic.Int32
	closed atomic.Int32
}

func (f *fakeFetch) ID() string       { return f.id }
func (f *fakeFetch) Available() error { return nil }
func (f *fakeFetch) Close() error     { f.closed.Add(1); return nil }
func (f *fakeFetch) Fetch(_ context.Context, req FetchRequest) (*FetchResult, error) {
	n := f.calls.Add(1)
	return &FetchResult{URL: req.URL, FinalURL: req.URL, Content: fmt.Sprintf("page %s #%d", req.URL, n), Format: FormatText}, nil
}

func code(t *testing.T, err error, want string) string {
	t.Helper()
	e, ok := llm.AsError(err)
	if !ok || e.Name != ErrorName || e.Code != want {
		t.Fatalf("want %s, got %v", want, err)
	}
	return e.Message
}

func TestSelectionIsIndependentOfRegistrationOrder(t *testing.T) {
	mk := func() []SearchProvider {
		return []SearchProvider{
			&fakeSearch{id: "deepseek"},
			&fakeSearch{id: "zeta"},
			&fakeSearch{id: "exa", unavail: errors.New("EXA_API_KEY is not set")},
			&fakeSearch{id: "perplexity"},
			&fakeSearch{id: "alpha"},
		}
	}
	for _, order := range [][]int{{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {2, 4, 0, 3, 1}} {
		s := NewService(Options{})
		ps := mk()
		for _, i := range order {
			if _, err := s.RegisterSearch(ps[i]); err != nil {
				t.Fatal(err)
			}
		}
		// exa is preferred but unavailable; perplexity comes next in
		// DefaultSearchOrder, before deepseek and the unlisted ones.
		p, err := s.SearchProvider()
		if err != nil || p.ID() != "perplexity" {
			t.Fatalf("order %v: got %v, %v", order, p, err)
		}
	}
	// Unlisted providers are ranked by id.
	s := NewService(Options{})
	_, _ = s.RegisterSearch(&fakeSearch{id: "zeta"})
	_, _ = s.RegisterSearch(&fakeSearch{id: "alpha"})
	if p, _ := s.SearchProvider(); p.ID() != "alpha" {
		t.Errorf("got %s", p.ID())
	}
}

func TestPinnedProvider(t *testing.T) {
	s := NewService(Options{SearchProvider: "deepseek"})
	_, _ = s.RegisterSearch(&fakeSearch{id: "exa"})
	_, err := s.SearchProvider()
	msg := code(t, err, CodeProviderUnavailable)
	if !strings.Contains(msg, `"deepseek" is not registered (registered: exa)`) {
		t.Error(msg)
	}
	dispose, _ := s.RegisterSearch(&fakeSearch{id: "deepseek", unavail: errors.New("DEEPSEEK_API_KEY is not set")})
	_, err = s.SearchProvider()
	msg = code(t, err, CodeProviderUnavailable)
	if !strings.Contains(msg, `"deepseek" is not available: DEEPSEEK_API_KEY is not set`) {
		t.Error(msg) // no silent fallback to exa
	}
	dispose()
	dispose() // idempotent
	ds := &fakeSearch{id: "deepseek"}
	_, _ = s.RegisterSearch(ds)
	if p, _ := s.SearchProvider(); p != ds {
		t.Errorf("pinned provider not chosen: %v", p)
	}
}

func TestNoProvider(t *testing.T) {
	s := NewService(Options{})
	_, err := s.Search(context.Background(), SearchRequest{Query: "q"})
	if msg := code(t, err, CodeProviderUnavailable); msg != "no web search provider is registered" {
		t.Error(msg)
	}
	_, _ = s.RegisterSearch(&fakeSearch{id: "exa", unavail: errors.New("EXA_API_KEY is not set")})
	_, _ = s.RegisterSearch(&fakeSearch{id: "brave", unavail: errors.New("BRAVE_API_KEY is not set")})
	_, err = s.Search(context.Background(), SearchRequest{Query: "q"})
	if msg := code(t, err, CodeProviderUnavailable); msg != "no web search provider is available (exa: EXA_API_KEY is not set; brave: BRAVE_API_KEY is not set)" {
		t.Error(msg)
	}
	_, err = s.Fetch(context.Background(), FetchRequest{URL: "https://a.test"})
	code(t, err, CodeProviderUnavailable)
}

func TestDuplicateProvider(t *testing.T) {
	s := NewService(Options{})
	if _, err := s.RegisterSearch(&fakeSearch{id: "exa"}); err != nil {
		t.Fatal(err)
	}
	_, err := s.RegisterSearch(&fakeSearch{id: "exa"})
	code(t, err, CodeDuplicateProvider)
	// Separate namespaces per kind.
	if _, err := s.RegisterFetch(&fakeFetch{id: "exa"}); err != nil {
		t.Error(err)
	}
}

func TestSearchFiltersDedupesAndCaps(t *testing.T) {
	p := &fakeSearch{id: "exa", sources: []Source{
		{URL: "https://go.dev/a", Title: "A"},
		{URL: "https://blog.go.dev/b"},
		{URL: "https://go.dev/a", Title: "duplicate"},
		{URL: "https://evil.go.dev/c"},
		{URL: "https://notgo.dev/d"},
		{URL: "https://pkg.go.dev/e"},
		{URL: ""},
		{URL: "::not a url"},
	}}
	s := NewService(Options{})
	_, _ = s.RegisterSearch(p)
	res, err := s.Search(context.Background(), SearchRequest{
		Query: "q", Count: 2,
		AllowedDomains: []string{"https://GO.dev/path", "*.go.dev"},
		BlockedDomains: []string{"evil.go.dev:443"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]Source{{URL: "https://go.dev/a", Title: "A"}, {URL: "https://blog.go.dev/b"}}, res.Sources); d != "" {
		t.Error(d)
	}
	if !res.Truncated || res.Provider != "exa" || res.Query != "q" {
		t.Errorf("%+v", res)
	}
	if d := cmp.Diff([]string{"go.dev"}, p.last.AllowedDomains); d != "" {
		t.Errorf("normalized allowed domains: %s", d)
	}
	if d := cmp.Diff([]string{"evil.go.dev"}, p.last.BlockedDomains); d != "" {
		t.Errorf("normalized blocked domains: %s", d)
	}
	res, _ = s.Search(context.Background(), SearchRequest{Query: "q", Count: 10})
	if len(res.Sources) != 6 || res.Truncated {
		t.Errorf("no filter: %d sources, truncated %v", len(res.Sources), res.Truncated)
	}
	if _, err := s.Search(context.Background(), SearchRequest{Query: "  "}); err == nil {
		t.Error("empty query accepted")
	}
}

func TestFetchCacheIsPerSessionAndExpires(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	f := &fakeFetch{id: "local"}
	s := NewService(Options{CacheTTL: 5 * time.Minute, Now: func() time.Time { return now }})
	_, _ = s.RegisterFetch(f)
	ctx := context.Background()
	get := func(session, u string) *FetchResult {
		t.Helper()
		r, err := s.Fetch(ctx, FetchRequest{URL: u, SessionID: session})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a1 := get("s1", "https://a.test/")
	a2 := get("s1", "https://a.test/")
	if a1.Cached || !a2.Cached || a2.Content != a1.Content || f.calls.Load() != 1 {
		t.Fatalf("second fetch in the session: cached=%v calls=%d", a2.Cached, f.calls.Load())
	}
	if b := get("s2", "https://a.test/"); b.Cached || f.calls.Load() != 2 {
		t.Errorf("another session shares the cache")
	}
	if r, _ := s.Fetch(ctx, FetchRequest{URL: "https://a.test/", SessionID: "s1", NoCache: true}); r.Cached || f.calls.Load() != 3 {
		t.Error("NoCache served from cache")
	}
	now = now.Add(5*time.Minute + time.Second)
	if r := get("s1", "https://a.test/"); r.Cached || f.calls.Load() != 4 {
		t.Error("expired entry served")
	}
	if s.Close() != nil || f.closed.Load() != 1 {
		t.Error("Close did not reach the provider")
	}
}

func TestCacheBounds(t *testing.T) {
	now := time.Unix(0, 0)
	c := newCache(time.Minute, 3, 1000, func() time.Time { return now })
	for i := range 5 {
		c.put(cacheKey{url: fmt.Sprint(i)}, &FetchResult{Content: "x"})
	}
	if c.len() != 3 {
		t.Errorf("entries %d", c.len())
	}
	if _, ok := c.get(cacheKey{url: "0"}); ok {
		t.Error("oldest entry kept")
	}
	c.put(cacheKey{url: "big"}, &FetchResult{Content: strings.Repeat("x", 1001)})
	if _, ok := c.get(cacheKey{url: "big"}); ok {
		t.Error("entry larger than the cache stored")
	}
	c.put(cacheKey{url: "half1"}, &FetchResult{Content: strings.Repeat("x", 600)})
	c.put(cacheKey{url: "half2"}, &FetchResult{Content: strings.Repeat("x", 600)})
	if _, ok := c.get(cacheKey{url: "half1"}); ok {
		t.Error("byte bound not enforced")
	}
}

func TestErrorHelpers(t *testing.T) {
	h := http.Header{}
	h.Set("Retry-After", "30")
	err := StatusError("Exa", 429, h, `  too   many
	requests `, "EXA_API_KEY")
	if err.Message != "Exa rate limit reached (HTTP 429 Too Many Requests: too many requests); retry after 30s" {
		t.Error(err.Message)
	}
	if d, ok := RetryAfter(fmt.Errorf("wrapped: %w", err)); !ok || d != 30*time.Second {
		t.Errorf("RetryAfter %v %v", d, ok)
	}
	h.Set("Retry-After", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
	if d := ParseRetryAfter(h, time.Now()); d < 85*time.Second || d > 91*time.Second {
		t.Errorf("date form: %v", d)
	}
	if e := StatusError("Exa", 403, nil, "", "EXA_API_KEY"); e.Code != CodeProviderUnavailable || e.Message != "Exa rejected the request (HTTP 403 Forbidden); check EXA_API_KEY" {
		t.Error(e.Code, e.Message)
	}
	if e := StatusError("Exa", 400, nil, "bad query", ""); e.Code != CodeHTTPStatus || e.Status != 400 {
		t.Error(e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if ContextError(ctx, "x") != nil {
		t.Error("live context reported")
	}
	cancel()
	if e := ContextError(ctx, "the search"); e.Code != CodeAborted || e.Message != "the search was cancelled" {
		t.Error(e)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 0)
	defer cancel()
	if e := ContextError(ctx, "the search"); e.Code != CodeTimeout {
		t.Error(e)
	}
}
