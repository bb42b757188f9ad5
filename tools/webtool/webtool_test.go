package webtool

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/tool"
	"github.com/dshq/dsh/web"
	"github.com/dshq/dsh/web/fetch"
	"github.com/dshq/dsh/web/providers"
	"github.com/dshq/dsh/web/search/exa"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeHost struct{ session string }

func (h fakeHost) AgentID() string                                       { return "agent-1" }
func (h fakeHost) SessionID() string                                     { return h.session }
func (h fakeHost) Cwd() string                                           { return "/" }
func (h fakeHost) Append(context.Context, string, any) error             { return nil }
func (h fakeHost) Inject(context.Context, []llm.Block, llm.Source) error { return nil }
func (h fakeHost) Scope() *kernel.Scope                                  { return kernel.NewScope("test") }

// site serves the pages the tests fetch and counts requests per path.
type site struct {
	srv  *httptest.Server
	hits map[string]*atomic.Int32
}

func newSite(t *testing.T, pages map[string]string) *site {
	t.Helper()
	s := &site{hits: map[string]*atomic.Int32{}}
	for p := range pages {
		s.hits[p] = &atomic.Int32{}
	}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		s.hits[r.URL.Path].Add(1)
		ct := "text/html; charset=utf-8"
		if strings.HasSuffix(r.URL.Path, ".txt") {
			ct = "text/plain; charset=utf-8"
		} else if strings.HasSuffix(r.URL.Path, ".json") {
			ct = "application/json"
		}
		w.Header().Set("Content-Type", ct)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *site) addr() netip.AddrPort { return s.srv.Listener.Addr().(*net.TCPAddr).AddrPort() }

// service builds the default service against loopback servers: the
// fetcher may reach exactly the site; env supplies API keys.
func service(t *testing.T, s *site, env map[string]string, cfg providers.Config) *web.Service {
	t.Helper()
	if s != nil {
		cfg.Fetch = fetch.Options{Allow: []netip.AddrPort{s.addr()}}
	}
	svc, err := providers.New(cfg, func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	return svc
}

func registry(t *testing.T, tools []tool.Tool) *tool.Registry {
	t.Helper()
	r := tool.NewRegistry()
	scope := kernel.NewScope("test")
	t.Cleanup(func() { _ = scope.Close() })
	if err := r.RegisterAll(scope, tools...); err != nil {
		t.Fatal(err)
	}
	return r
}

func run(t *testing.T, r *tool.Registry, name, args, session string) tool.Outcome {
	t.Helper()
	return r.Execute(context.Background(), tool.NewCall("call-1", name, args, fakeHost{session: session}), tool.ExecOptions{})
}

func text(o tool.Outcome) string {
	var b strings.Builder
	for _, c := range o.Result.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func names(ts []tool.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Info().Name)
	}
	return out
}

func contains(t *testing.T, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("missing %q in:\n%s", w, s)
		}
	}
}

func TestWebSearchAbsentWithoutProvider(t *testing.T) {
	svc := service(t, nil, nil, providers.Config{})
	if got := names(Tools(svc, Options{})); fmt.Sprint(got) != "[web_fetch]" {
		t.Errorf("tools = %v", got)
	}
	// A pinned provider without its key does not make web_search appear either.
	svc = service(t, nil, map[string]string{"DEEPSEEK_API_KEY": "k"}, providers.Config{SearchProvider: "exa"})
	if got := names(Tools(svc, Options{})); fmt.Sprint(got) != "[web_fetch]" {
		t.Errorf("pinned exa without key: tools = %v", got)
	}
	if Tools(nil, Options{}) != nil {
		t.Error("tools without a service")
	}
	if _, err := providers.New(providers.Config{SearchProvider: "exaa"}, nil, nil); err == nil || !strings.Contains(err.Error(), `unknown search provider "exaa"`) {
		t.Errorf("typo in the pinned provider: %v", err)
	}
}

func TestToolInfo(t *testing.T) {
	svc := service(t, nil, map[string]string{"EXA_API_KEY": "k"}, providers.Config{})
	ts := Tools(svc, Options{})
	if got := names(ts); fmt.Sprint(got) != "[web_search web_fetch]" {
		t.Fatalf("tools = %v", got)
	}
	kinds := map[string]tool.Kind{SearchName: tool.KindSearch, FetchName: tool.KindFetch}
	for _, tl := range ts {
		in := tl.Info()
		if in.Kind != kinds[in.Name] || !in.ReadOnly || !in.Concurrent {
			t.Errorf("%s: %+v", in.Name, in)
		}
		if strings.Contains(in.Description, "{") {
			t.Errorf("%s: unfilled placeholder in %q", in.Name, in.Description)
		}
		if _, ok := tl.(tool.CallPresenter); !ok {
			t.Errorf("%s has no call presenter", in.Name)
		}
		if _, ok := tl.(tool.ResultPresenter); !ok {
			t.Errorf("%s has no result presenter", in.Name)
		}
	}
	contains(t, ts[0].Info().Description, "default 8, at most 20", "markdown links")
	contains(t, ts[1].Info().Description, "default 50000, at most 200000")
}

func TestWebFetchArticle(t *testing.T) {
	page, err := os.ReadFile("../../web/fetch/testdata/article.html") // one fixture, shared with web/fetch
	if err != nil {
		t.Fatal(err)
	}
	s := newSite(t, map[string]string{"/post": string(page), "/old": ""})
	s.srv.Config.Handler = redirectOld(s.srv.Config.Handler)
	r := registry(t, Tools(service(t, s, nil, providers.Config{}), Options{}))
	out := run(t, r, FetchName, fmt.Sprintf(`{"url": %q}`, s.srv.URL+"/old"), "s1")
	if out.Result.IsError {
		t.Fatal(text(out))
	}
	got := text(out)
	wantHead := fmt.Sprintf("URL: %s/post\nTitle: Understanding Go Contexts | The Example Blog\nRedirected from: %s/old\n\n", s.srv.URL, s.srv.URL)
	if !strings.HasPrefix(got, wantHead) {
		t.Errorf("header:\n%s", got[:min(len(got), 300)])
	}
	contains(t, got, "## Why cancellation matters", "```go\nfunc fetch(", "[context package documentation](https://pkg.go.dev/context)")
	if strings.Contains(got, "Subscribe to the newsletter") || strings.Contains(got, "truncated") {
		t.Error("navigation kept or a truncation note on a short page")
	}
	var m fetchMeta
	if err := json.Unmarshal(out.Result.Meta, &m); err != nil || m.FinalURL != s.srv.URL+"/post" || m.Shown != m.Chars || m.Cached {
		t.Errorf("meta %s", out.Result.Meta)
	}
	ft := Tools(service(t, nil, nil, providers.Config{}), Options{})[0].(*fetchTool)
	if v := ft.PresentResult(nil, out.Result); v == nil || v.Title != "Fetched Understanding Go Contexts | The Example Blog" || v.Kind != tool.KindFetch {
		t.Errorf("result view %+v", v)
	}
	if v := ft.PresentCall(json.RawMessage(`{"url":"https://a.test/x","prompt":"pricing"}`)); v == nil || v.Title != "Fetch https://a.test/x" || v.Kind != tool.KindFetch || v.Text != "pricing" {
		t.Errorf("call view %+v", v)
	}
	if ft.PresentCall(json.RawMessage(`{"url":""}`)) != nil || ft.PresentCall(json.RawMessage(`[`)) != nil {
		t.Error("presenter accepted bad arguments")
	}
	if ft.PresentResult(nil, tool.Result{IsError: true}) != nil {
		t.Error("error result presented")
	}

	// Same session: served from the cache. Another session: fetched again.
	out = run(t, r, FetchName, fmt.Sprintf(`{"url": %q}`, s.srv.URL+"/post"), "s1")
	out = run(t, r, FetchName, fmt.Sprintf(`{"url": %q}`, s.srv.URL+"/post"), "s1")
	if n := s.hits["/post"].Load(); n != 2 { // the redirect's landing + the first direct fetch
		t.Errorf("server hits = %d", n)
	}
	if json.Unmarshal(out.Result.Meta, &m); !m.Cached {
		t.Error("second fetch in the session not cached")
	}
	run(t, r, FetchName, fmt.Sprintf(`{"url": %q}`, s.srv.URL+"/post"), "s2")
	if n := s.hits["/post"].Load(); n != 3 {
		t.Errorf("other session: server hits = %d", n)
	}
}

func redirectOld(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/post", http.StatusMovedPermanently)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// longDoc is a Markdown-friendly page of many sections.
func longDoc(sections int) string {
	var b strings.Builder
	b.WriteString("<html><head><title>Manual</title></head><body><main><article><h1>Manual</h1><p>Intro paragraph.</p>")
	for i := range sections {
		fmt.Fprintf(&b, "<h2>Chapter %d</h2>", i)
		for range 6 {
			fmt.Fprintf(&b, "<p>Chapter %d explains ordinary things at length so that the page is long enough to need cutting. ", i)
			if i == sections-3 {
				b.WriteString("The retry budget and exponential backoff settings live here. ")
			}
			b.WriteString("More filler text follows to pad the paragraph out.</p>")
		}
		if i == 2 {
			b.WriteString("<pre><code class=\"language-sh\">")
			for l := range 80 {
				fmt.Fprintf(&b, "echo line %d\n", l)
			}
			b.WriteString("</code></pre>")
		}
	}
	b.WriteString("</article></main></body></html>")
	return b.String()
}

func TestWebFetchTruncatesAndFocuses(t *testing.T) {
	s := newSite(t, map[string]string{"/manual": longDoc(40), "/plain.txt": strings.Repeat("é", 5000)})
	r := registry(t, Tools(service(t, s, nil, providers.Config{}), Options{}))

	out := run(t, r, FetchName, fmt.Sprintf(`{"url": %q, "max_length": 1200}`, s.srv.URL+"/manual"), "s")
	got := text(out)
	contains(t, got, "[Content truncated: showing the first ", "call web_fetch again with a larger max_length (up to 200000)")
	var m fetchMeta
	_ = json.Unmarshal(out.Result.Meta, &m)
	if m.Shown > 1200 || m.Shown < 900 || m.Chars < 20000 {
		t.Errorf("shown %d of %d", m.Shown, m.Chars)
	}
	body := got[strings.Index(got, "\n\n")+2 : strings.LastIndex(got, "\n\n[Content truncated")]
	if openFence(body) {
		t.Errorf("cut inside a code fence:\n%s", body)
	}

	out = run(t, r, FetchName, fmt.Sprintf(`{"url": %q, "max_length": 2000, "prompt": "how do I configure retry backoff?"}`, s.srv.URL+"/manual"), "s")
	got = text(out)
	contains(t, got, "## Chapter 37", "retry budget and exponential backoff", "most relevant to the prompt", "Omitted: ")
	if strings.Contains(got, "## Chapter 20") {
		t.Error("an irrelevant chapter was kept")
	}
	if json.Unmarshal(out.Result.Meta, &m); !m.Focused || m.Shown > 2100 {
		t.Errorf("meta %+v", m)
	}

	// A prompt that matches nothing falls back to the beginning.
	out = run(t, r, FetchName, fmt.Sprintf(`{"url": %q, "max_length": 1000, "prompt": "zebra quantum"}`, s.srv.URL+"/manual"), "s")
	contains(t, text(out), "[Content truncated")

	// Lengths count characters, not bytes.
	out = run(t, r, FetchName, fmt.Sprintf(`{"url": %q, "max_length": 1000}`, s.srv.URL+"/plain.txt"), "s")
	got = text(out)
	body = got[strings.Index(got, "\n\n")+2 : strings.LastIndex(got, "\n\n[Content truncated")]
	if n := utf8.RuneCountInString(body); n != 1000 {
		t.Errorf("kept %d characters", n)
	}
	contains(t, got, "Content-Type: text/plain")
}

func TestWebFetchErrors(t *testing.T) {
	s := newSite(t, map[string]string{})
	r := registry(t, Tools(service(t, s, nil, providers.Config{}), Options{}))
	for _, tc := range []struct{ args, code, text string }{
		{`{"url": "http://10.0.0.1/admin"}`, web.CodeBlocked, "Error: refusing to connect to 10.0.0.1"},
		{`{"url": "http://169.254.169.254/latest/meta-data/"}`, web.CodeBlocked, "cloud metadata"},
		{`{"url": "ftp://example.com/x"}`, web.CodeInvalidURL, `unsupported URL scheme "ftp"`},
		{fmt.Sprintf(`{"url": %q}`, s.srv.URL+"/missing"), web.CodeHTTPStatus, "HTTP 404 Not Found"},
	} {
		out := run(t, r, FetchName, tc.args, "s")
		if !out.Result.IsError || out.Error == nil || out.Error.Name != web.ErrorName || out.Error.Code != tc.code {
			t.Errorf("%s: error %+v, text %q", tc.args, out.Error, text(out))
			continue
		}
		contains(t, text(out), tc.text)
	}
	out := run(t, r, FetchName, `{"url": "   "}`, "s")
	if !out.Result.IsError || !strings.Contains(text(out), "url must be a non-empty string") {
		t.Errorf("blank url: %q", text(out))
	}
	out = run(t, r, FetchName, `{"url": "https://a.test", "max_length": 10}`, "s")
	if !out.Result.IsError || out.Error == nil || out.Error.Code != "INVALID_ARGS" {
		t.Errorf("max_length below the minimum: %+v %q", out.Error, text(out))
	}
}

// exaServer replays a recorded Exa response.
func exaServer(t *testing.T) (*httptest.Server, *atomic.Value) {
	t.Helper()
	body, err := os.ReadFile("testdata/exa_search.json")
	if err != nil {
		t.Fatal(err)
	}
	var last atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		last.Store(string(b))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &last
}

func TestWebSearch(t *testing.T) {
	srv, last := exaServer(t)
	svc := service(t, nil, map[string]string{"EXA_API_KEY": "k"}, providers.Config{Exa: exa.Config{BaseURL: srv.URL}})
	ts := Tools(svc, Options{})
	r := registry(t, ts)
	out := run(t, r, SearchName, `{"query": " go context ", "count": 5, "blocked_domains": ["medium.example"]}`, "s")
	if out.Result.IsError {
		t.Fatal(text(out))
	}
	want := `Web search results for "go context" (via exa):

1. [Go Concurrency Patterns: Context](https://go.dev/blog/context)
   In Go servers, each incoming request is handled in its own goroutine. (2014-07-29)
2. [pkg.go.dev](https://pkg.go.dev/context)

` + CitationHint
	if got := text(out); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	var req map[string]any
	_ = json.Unmarshal([]byte(last.Load().(string)), &req)
	if req["numResults"] != 5.0 || fmt.Sprint(req["excludeDomains"]) != "[medium.example]" {
		t.Errorf("request %v", req)
	}
	st := ts[0].(*searchTool)
	if v := st.PresentResult(nil, out.Result); v == nil || v.Title != `2 results for "go context"` || v.Kind != tool.KindSearch ||
		v.Text != "Go Concurrency Patterns: Context — https://go.dev/blog/context\nhttps://pkg.go.dev/context" {
		t.Errorf("result view %+v", v)
	}
	if v := st.PresentCall(json.RawMessage(`{"query":"go context","allowed_domains":["go.dev"]}`)); v == nil || v.Title != `Search "go context"` || v.Text != "only go.dev" {
		t.Errorf("call view %+v", v)
	}

	out = run(t, r, SearchName, `{"query": "go", "count": 0}`, "s")
	if out.Error == nil || out.Error.Code != "INVALID_ARGS" {
		t.Errorf("count 0: %+v", out.Error)
	}
	out = run(t, r, SearchName, `{"query": "  "}`, "s")
	if !out.Result.IsError || !strings.Contains(text(out), "query must be a non-empty string") {
		t.Errorf("blank query: %q", text(out))
	}
	out = run(t, r, SearchName, `{"query": "go", "count": 1}`, "s")
	contains(t, text(out), "1. [Go Concurrency Patterns", "(Showing the first 1 results.")
}

func TestFormatSearch(t *testing.T) {
	got := formatSearch(&web.SearchResult{Provider: "perplexity", Query: "q", Answer: "An answer [1].",
		Sources: []web.Source{{URL: "https://a.test/x", Title: "A [draft]", Snippet: strings.Repeat("s", 500)}, {URL: "not a url"}}})
	contains(t, got, "Summary (generated by the search provider; check it against the sources):\nAn answer [1].\n\nSources:\n1. [A \\[draft\\]](https://a.test/x)\n   "+strings.Repeat("s", 400)+"…\n2. [not a url](not a url)\n", CitationHint)
	got = formatSearch(&web.SearchResult{Query: "q"})
	contains(t, got, "No results found.", CitationHint)
}

func TestFocusAndCutUnits(t *testing.T) {
	md := "Intro.\n\n## Install\n\nRun the installer.\n\n## Retry policy\n\nRetries use exponential backoff.\n\n## License\n\nMIT."
	sel, ok := focus(md, "What is the retry backoff?", 80)
	if !ok || !strings.Contains(sel.text, "## Retry policy") || strings.Contains(sel.text, "## License") || !strings.Contains(sel.omitted, `"Install"`) {
		t.Errorf("focus: %+v %v", sel, ok)
	}
	if _, ok := focus(md, "the and of", 80); ok {
		t.Error("stopwords matched")
	}
	if got := cut("```go\ncode line one\ncode line two\n", 20); got != "```go\ncode line one\n```" {
		t.Errorf("cut = %q", got)
	}
}
