package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/web"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server starts a loopback test server closed at cleanup.
func server(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func addrOf(srv *httptest.Server) netip.AddrPort {
	return srv.Listener.Addr().(*net.TCPAddr).AddrPort()
}

// provider returns a provider that may reach exactly the given servers.
func provider(t *testing.T, o Options, allowed ...*httptest.Server) *Provider {
	t.Helper()
	for _, s := range allowed {
		o.Allow = append(o.Allow, addrOf(s))
	}
	p := New(o)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func fetchURL(t *testing.T, p *Provider, u string) (*web.FetchResult, error) {
	t.Helper()
	return p.Fetch(context.Background(), web.FetchRequest{URL: u})
}

func mustFetch(t *testing.T, p *Provider, u string) *web.FetchResult {
	t.Helper()
	r, err := fetchURL(t, p, u)
	if err != nil {
		t.Fatalf("fetch %s: %v", u, err)
	}
	return r
}

// wantCode asserts err is a WebError with the code and returns it.
func wantCode(t *testing.T, err error, code string) *llm.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("want %s error, got nil", code)
	}
	e, ok := llm.AsError(err)
	if !ok || e.Name != web.ErrorName || e.Code != code {
		t.Fatalf("want WebError %s, got %T %v (code %q)", code, err, err, llm.CodeOf(err))
	}
	return e
}

func contains(t *testing.T, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("missing %q in:\n%s", w, s)
		}
	}
}

func lacks(t *testing.T, s string, nots ...string) {
	t.Helper()
	for _, w := range nots {
		if strings.Contains(s, w) {
			t.Errorf("unexpected %q in:\n%s", w, s)
		}
	}
}

func TestHTMLArticleToMarkdown(t *testing.T) {
	page, err := os.ReadFile("testdata/article.html")
	if err != nil {
		t.Fatal(err)
	}
	var ua string
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		ua = r.UserAgent()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	})
	p := provider(t, Options{}, srv)
	r := mustFetch(t, p, srv.URL+"/posts/contexts")
	if r.Format != web.FormatMarkdown || r.Status != 200 || r.ContentType != "text/html" || r.Truncated {
		t.Fatalf("result = %+v", r)
	}
	if r.Title != "Understanding Go Contexts | The Example Blog" {
		t.Errorf("title = %q", r.Title)
	}
	if r.FinalURL != srv.URL+"/posts/contexts" || r.Provider != ID {
		t.Errorf("final URL %q provider %q", r.FinalURL, r.Provider)
	}
	if !strings.HasPrefix(ua, "Mozilla/5.0 (compatible; dsh/") {
		t.Errorf("user agent = %q", ua)
	}
	md := r.Content
	contains(t, md,
		"## Why cancellation matters",
		"### Common mistakes",
		"1. Pass the context explicitly",
		"3. Always call the `cancel` function",
		"- Using `context.Background()` deep inside library code.",
		"```go\nfunc fetch(ctx context.Context, url string) ([]byte, error) {\n\tctx, cancel := context.WithTimeout(ctx, 2*time.Second)",
		"[context package documentation](https://pkg.go.dev/context)",
		"[previous post on deadlines]("+srv.URL+"/posts/deadlines)", // relative link made absolute
		"> A context is a request's lifetime",
		"*lostcancel*",
	)
	lacks(t, md, "Subscribe to the newsletter", "Archive", "Sidebar post one", "Buy our sponsored widget",
		"Privacy policy", "All rights reserved", "tracking-pixel", "font-family", "<script", "<p>")
}

func TestFallbackConvertsWholeBodyWithoutChrome(t *testing.T) {
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, `<html><head><title>Tiny</title></head><body><nav><a href="/x">Menu</a></nav>
<h1>Title</h1><p>Body text &amp; more</p><ul><li>one</li><li>two</li></ul><footer>foot</footer></body></html>`)
	})
	r := mustFetch(t, provider(t, Options{}, srv), srv.URL)
	contains(t, r.Content, "# Title", "Body text & more", "- one\n- two")
	lacks(t, r.Content, "Menu", "foot")
	if r.Title != "Tiny" {
		t.Errorf("title %q", r.Title)
	}
}

func TestTextMarkdownAndJSONPassThrough(t *testing.T) {
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/a.txt":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "hello <b>world</b>\n")
		case "/a.json":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"a": [1, 2], "b": "<i>x</i>"}`)
		case "/a.md":
			w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
			_, _ = io.WriteString(w, "# Doc\n\n- item\n")
		case "/sniff":
			_, _ = io.WriteString(w, `{"sniffed": true}`) // no Content-Type header set by us
		}
	})
	p := provider(t, Options{}, srv)
	for _, tc := range []struct{ path, format, content string }{
		{"/a.txt", web.FormatText, "hello <b>world</b>\n"},
		{"/a.json", web.FormatJSON, `{"a": [1, 2], "b": "<i>x</i>"}`},
		{"/a.md", web.FormatMarkdown, "# Doc\n\n- item\n"},
	} {
		r := mustFetch(t, p, srv.URL+tc.path)
		if r.Format != tc.format || r.Content != tc.content {
			t.Errorf("%s: format %q content %q", tc.path, r.Format, r.Content)
		}
	}
	// Go's server sniffs a Content-Type itself; either way the body is read as text.
	if r := mustFetch(t, p, srv.URL+"/sniff"); !strings.Contains(r.Content, `"sniffed": true`) {
		t.Errorf("sniffed: %+v", r)
	}
}

func TestUnsupportedContent(t *testing.T) {
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/img":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write([]byte("\x89PNG\r\n\x1a\n"))
		case "/pdf":
			w.Header().Set("Content-Type", "application/pdf")
			_, _ = io.WriteString(w, "%PDF-1.7\n")
		case "/bin":
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write([]byte{0, 1, 2, 3, 0xff, 0xfe, 0})
		case "/html-as-octets":
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = io.WriteString(w, "<!DOCTYPE html><html><body><p>sniffed html</p></body></html>")
		}
	})
	p := provider(t, Options{}, srv)
	_, err := fetchURL(t, p, srv.URL+"/img")
	contains(t, wantCode(t, err, web.CodeUnsupportedContent).Message, "image/png")
	_, err = fetchURL(t, p, srv.URL+"/pdf")
	contains(t, wantCode(t, err, web.CodeUnsupportedContent).Message, "PDF")
	_, err = fetchURL(t, p, srv.URL+"/bin")
	wantCode(t, err, web.CodeUnsupportedContent)
	if r := mustFetch(t, p, srv.URL+"/html-as-octets"); r.Content != "sniffed html" || r.Format != web.FormatMarkdown {
		t.Errorf("sniffed html: %+v", r)
	}
}

func TestRedirects(t *testing.T) {
	var hits atomic.Int32
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		// /hop/N redirects N more times, alternating absolute and relative Locations.
		if rest, ok := strings.CutPrefix(r.URL.Path, "/hop/"); ok {
			n, _ := strconv.Atoi(rest)
			if n > 0 {
				loc := fmt.Sprintf("/hop/%d", n-1)
				if n%2 == 0 {
					loc = fmt.Sprintf("%d", n-1)
				}
				http.Redirect(w, r, loc, []int{301, 302, 303, 307, 308}[n%5])
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "landed at "+r.URL.Path)
	})
	p := provider(t, Options{MaxRedirects: 3}, srv)

	r := mustFetch(t, p, srv.URL+"/hop/3") // exactly the limit
	if r.Content != "landed at /hop/0" || r.FinalURL != srv.URL+"/hop/0" || r.URL != srv.URL+"/hop/3" {
		t.Fatalf("within the limit: %+v", r)
	}
	if got := hits.Load(); got != 4 {
		t.Errorf("requests = %d, want 4", got)
	}

	hits.Store(0)
	_, err := fetchURL(t, p, srv.URL+"/hop/4") // one over
	contains(t, wantCode(t, err, web.CodeBlocked).Message, "stopped after 3 redirects")
	if got := hits.Load(); got != 4 {
		t.Errorf("requests = %d, want 4 (the limit plus the first)", got)
	}

	none := provider(t, Options{MaxRedirects: -1}, srv)
	if r := mustFetch(t, none, srv.URL+"/hop/0"); r.Content != "landed at /hop/0" {
		t.Errorf("no redirects allowed, direct page: %+v", r)
	}
	_, err = fetchURL(t, none, srv.URL+"/hop/1")
	wantCode(t, err, web.CodeBlocked)
}

// fakeResolver maps host names to addresses; unknown names fail.
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func TestPrivateAddressesRefused(t *testing.T) {
	// other is a second loopback server that is NOT allowed: a redirect to
	// it must be refused without a request ever reaching it.
	var otherHits atomic.Int32
	other := server(t, func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		_, _ = io.WriteString(w, "secret")
	})
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-private":
			http.Redirect(w, r, "http://10.0.0.1/admin", http.StatusFound)
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/to-other-loopback":
			http.Redirect(w, r, other.URL+"/", http.StatusFound)
		case "/to-rebound-name":
			http.Redirect(w, r, fmt.Sprintf("http://rebound.test:%d/", addrOf(other).Port()), http.StatusFound)
		case "/to-good-name":
			http.Redirect(w, r, fmt.Sprintf("http://public.test:%d/ok", r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr).Port), http.StatusFound)
		case "/to-ftp":
			http.Redirect(w, r, "ftp://example.com/file", http.StatusFound)
		case "/to-creds":
			w.Header().Set("Location", "http://user:pw@"+r.Host+"/x")
			w.WriteHeader(http.StatusFound)
		case "/ok":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "public page")
		}
	})
	res := fakeResolver{
		"rebound.test": {netip.MustParseAddr("127.0.0.2")},
		"public.test":  {addrOf(srv).Addr()},
		"mixed.test":   {netip.MustParseAddr("10.1.2.3"), addrOf(srv).Addr()},
	}
	p := provider(t, Options{Resolver: res, Timeout: 5 * time.Second}, srv)

	start := time.Now()
	_, err := fetchURL(t, p, srv.URL+"/to-private")
	e := wantCode(t, err, web.CodeBlocked)
	contains(t, e.Message, "10.0.0.1", "private network")
	var be *BlockedError
	if !errors.As(err, &be) || be.Addr.Addr() != netip.MustParseAddr("10.0.0.1") {
		t.Errorf("cause = %v", e.Cause)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("refusal took %v: it must not try to connect", d)
	}

	_, err = fetchURL(t, p, srv.URL+"/to-metadata")
	contains(t, wantCode(t, err, web.CodeBlocked).Message, "169.254.169.254", "metadata")

	_, err = fetchURL(t, p, srv.URL+"/to-other-loopback")
	contains(t, wantCode(t, err, web.CodeBlocked).Message, "loopback")
	_, err = fetchURL(t, p, other.URL) // and directly
	wantCode(t, err, web.CodeBlocked)
	if n := otherHits.Load(); n != 0 {
		t.Errorf("the non-allowed loopback server got %d requests", n)
	}

	// A name that resolves to a blocked address is refused after DNS.
	_, err = fetchURL(t, p, srv.URL+"/to-rebound-name")
	contains(t, wantCode(t, err, web.CodeBlocked).Message, "rebound.test (127.0.0.2)", "loopback")

	// A name that resolves to the allowed server is followed.
	if r := mustFetch(t, p, srv.URL+"/to-good-name"); r.Content != "public page" || !strings.HasPrefix(r.FinalURL, "http://public.test:") {
		t.Errorf("good name: %+v", r)
	}
	// Of a name's addresses only the allowed ones are dialled.
	if r := mustFetch(t, p, fmt.Sprintf("http://mixed.test:%d/ok", addrOf(srv).Port())); r.Content != "public page" {
		t.Errorf("mixed answer: %+v", r)
	}

	_, err = fetchURL(t, p, srv.URL+"/to-ftp")
	contains(t, wantCode(t, err, web.CodeInvalidURL).Message, "redirect to ftp://example.com/file refused")
	_, err = fetchURL(t, p, srv.URL+"/to-creds")
	wantCode(t, err, web.CodeBlocked)

	for _, u := range []string{
		"http://169.254.169.254/latest/meta-data/",
		"http://[fd00:ec2::254]/latest/meta-data/",
		"http://10.0.0.1/",
		"http://192.168.1.1/",
		"http://172.16.5.4/",
		"http://100.64.0.1/",
		"http://[::1]/",
		"http://[fc00::1]/",
		"http://[fe80::1]/",
		"http://[::ffff:10.0.0.1]/",
		"http://0.0.0.0/",
		fmt.Sprintf("http://127.0.0.2:%d/", addrOf(srv).Port()),
	} {
		_, err := fetchURL(t, p, u)
		if llm.CodeOf(err) != web.CodeBlocked {
			t.Errorf("%s: want BLOCKED, got %v", u, err)
		}
	}
}

func TestLoopbackNeedsPermission(t *testing.T) {
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "local dev server")
	})
	_, err := fetchURL(t, provider(t, Options{}), srv.URL)
	contains(t, wantCode(t, err, web.CodeBlocked).Message, "loopback", "allowPrivateNetworks")

	open := provider(t, Options{AllowPrivateNetworks: true})
	if r := mustFetch(t, open, srv.URL); r.Content != "local dev server" {
		t.Errorf("allowed: %+v", r)
	}
	// Metadata stays blocked even then.
	_, err = fetchURL(t, open, "http://169.254.169.254/")
	wantCode(t, err, web.CodeBlocked)
	_, err = fetchURL(t, open, "http://[fd00:ec2::254]/")
	wantCode(t, err, web.CodeBlocked)
}

func TestControlHookChecksTheDialledAddress(t *testing.T) {
	g := &guard{allow: map[netip.AddrPort]bool{netip.MustParseAddrPort("127.0.0.1:8080"): true}}
	if err := g.control(context.Background(), "tcp4", "127.0.0.1:8080", nil); err != nil {
		t.Errorf("allowed address refused: %v", err)
	}
	for _, a := range []string{"127.0.0.1:8081", "10.0.0.1:80", "[::ffff:10.0.0.1]:8080", "[fd00:ec2::254]:80", "not-an-address"} {
		if err := g.control(context.Background(), "tcp", a, nil); err == nil {
			t.Errorf("%s: control hook let it through", a)
		}
	}
}

func TestClassify(t *testing.T) {
	for addr, want := range map[string]string{
		"8.8.8.8":                "",
		"1.1.1.1":                "",
		"2606:4700::1111":        "",
		"::ffff:8.8.8.8":         "",
		"127.0.0.1":              CategoryLoopback,
		"127.255.0.9":            CategoryLoopback,
		"::1":                    CategoryLoopback,
		"10.1.2.3":               CategoryPrivate,
		"172.31.255.255":         CategoryPrivate,
		"172.32.0.1":             "",
		"192.168.0.1":            CategoryPrivate,
		"fd12:3456::1":           CategoryPrivate,
		"100.64.0.1":             CategoryCGNAT,
		"100.127.255.254":        CategoryCGNAT,
		"169.254.1.1":            CategoryLinkLocal,
		"fe80::1%eth0":           CategoryLinkLocal,
		"169.254.169.254":        CategoryMetadata,
		"fd00:ec2::254":          CategoryMetadata,
		"100.100.100.200":        CategoryMetadata,
		"0.0.0.0":                CategoryUnspecified,
		"::":                     CategoryUnspecified,
		"224.0.0.1":              CategoryMulticast,
		"ff02::1":                CategoryMulticast,
		"::ffff:192.168.1.1":     CategoryPrivate,
		"64:ff9b::a00:1":         CategoryPrivate,  // NAT64 of 10.0.0.1
		"2002:7f00:1::":          CategoryLoopback, // 6to4 of 127.0.0.1
		"::ffff:169.254.169.254": CategoryMetadata,
	} {
		if got := Classify(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Classify(%s) = %q, want %q", addr, got, want)
		}
	}
}

func TestBodyCapCutsHugeBody(t *testing.T) {
	const total = 50 << 20
	const limit = 1 << 20
	var written atomic.Int64
	chunk := []byte(strings.Repeat("0123456789abcdef", 4096)) // 64 KiB
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if r.URL.Path == "/declared" {
			w.Header().Set("Content-Length", strconv.Itoa(total))
		}
		for n := 0; n < total; n += len(chunk) {
			m, err := w.Write(chunk)
			written.Add(int64(m))
			if err != nil {
				return
			}
		}
	})
	p := provider(t, Options{MaxBytes: limit}, srv)
	r := mustFetch(t, p, srv.URL+"/chunked")
	if !r.Truncated || r.Bytes != limit || len(r.Content) != limit {
		t.Fatalf("truncated=%v bytes=%d content=%d", r.Truncated, r.Bytes, len(r.Content))
	}
	if !strings.HasPrefix(r.Content, "0123456789abcdef0123") {
		t.Errorf("content starts %q", r.Content[:20])
	}

	written.Store(0)
	_, err := fetchURL(t, p, srv.URL+"/declared")
	contains(t, wantCode(t, err, web.CodeTooLarge).Message, "52428800 bytes", "1048576-byte limit")
	// Closing the transport makes the handler's writes fail promptly.
	_ = p.Close()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && written.Load() >= total {
		time.Sleep(10 * time.Millisecond)
	}
	if w := written.Load(); w >= total {
		t.Errorf("the server wrote the whole %d bytes", w)
	}
}

func TestBodyExactlyAtCapIsComplete(t *testing.T) {
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.(http.Flusher).Flush() // no Content-Length: the cap, not the header, decides
		_, _ = io.WriteString(w, "abcd"+strings.Repeat("e", len(r.URL.Path)-1))
	})
	p := provider(t, Options{MaxBytes: 4}, srv)
	if r := mustFetch(t, p, srv.URL+"/"); r.Truncated || r.Content != "abcd" {
		t.Errorf("at cap: %+v", r)
	}
	if r := mustFetch(t, p, srv.URL+"/xx"); !r.Truncated || r.Content != "abcd" {
		t.Errorf("over cap: %+v", r)
	}
}

func TestSlowServerTimesOut(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow-body" {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "first part…")
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	p := provider(t, Options{Timeout: 200 * time.Millisecond}, srv)
	for _, path := range []string{"/slow-headers", "/slow-body"} {
		start := time.Now()
		_, err := fetchURL(t, p, srv.URL+path)
		contains(t, wantCode(t, err, web.CodeTimeout).Message, "timed out after 200ms")
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: took %v", path, d)
		}
	}
	// The caller's own cancellation is ABORTED, not TIMEOUT.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	slow := provider(t, Options{Timeout: 10 * time.Second}, srv)
	_, err := slow.Fetch(ctx, web.FetchRequest{URL: srv.URL + "/slow-headers"})
	wantCode(t, err, web.CodeAborted)
	_, err = slow.Fetch(ctx, web.FetchRequest{URL: srv.URL}) // already cancelled
	wantCode(t, err, web.CodeAborted)
}

func TestNonUTF8Pages(t *testing.T) {
	pages := map[string]struct {
		ct   string
		body []byte
	}{
		// windows-1252 declared in the header: é is 0xE9, € is 0x80.
		"/cp1252": {"text/html; charset=windows-1252", []byte("<html><head><title>Caf\xe9</title></head><body><p>Caf\xe9 cr\xe8me \x80 5</p></body></html>")},
		// iso-8859-1 is windows-1252 under the WHATWG labels.
		"/latin1": {"text/plain; charset=ISO-8859-1", []byte("caf\xe9 \x80")},
		// Shift_JIS declared only in a <meta> tag: 日本語 is 93 FA 96 7B 8C EA.
		"/sjis": {"text/html", []byte("<html><head><meta charset=\"Shift_JIS\"><title>\x93\xfa\x96\x7b\x8c\xea</title></head><body><p>\x93\xfa\x96\x7b\x8c\xea\x82\xcc\x83\x65\x83\x4c\x83\x58\x83\x67</p></body></html>")},
		// No declaration, not UTF-8: windows-1252 is the fallback.
		"/undeclared": {"text/plain", []byte("na\xefve")},
		// Invalid bytes in a UTF-8 page become U+FFFD.
		"/broken-utf8": {"text/plain; charset=utf-8", []byte("ok \xff done")},
	}
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		pg := pages[r.URL.Path]
		w.Header().Set("Content-Type", pg.ct)
		_, _ = w.Write(pg.body)
	})
	p := provider(t, Options{}, srv)
	r := mustFetch(t, p, srv.URL+"/cp1252")
	if r.Title != "Café" || r.Content != "Café crème € 5" {
		t.Errorf("cp1252: title %q content %q", r.Title, r.Content)
	}
	if r := mustFetch(t, p, srv.URL+"/latin1"); r.Content != "café €" {
		t.Errorf("latin1: %q", r.Content)
	}
	r = mustFetch(t, p, srv.URL+"/sjis")
	if r.Title != "日本語" || r.Content != "日本語のテキスト" {
		t.Errorf("sjis: title %q content %q", r.Title, r.Content)
	}
	if r := mustFetch(t, p, srv.URL+"/undeclared"); r.Content != "naïve" {
		t.Errorf("undeclared: %q", r.Content)
	}
	if r := mustFetch(t, p, srv.URL+"/broken-utf8"); r.Content != "ok \uFFFD done" {
		t.Errorf("broken: %q", r.Content)
	}
}

func TestStatusErrors(t *testing.T) {
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/missing":
			http.NotFound(w, r)
		case "/busy":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/down":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/not-modified":
			w.WriteHeader(http.StatusNotModified)
		}
	})
	p := provider(t, Options{}, srv)
	_, err := fetchURL(t, p, srv.URL+"/missing")
	e := wantCode(t, err, web.CodeHTTPStatus)
	if e.Status != 404 {
		t.Errorf("status %d", e.Status)
	}
	contains(t, e.Message, "HTTP 404 Not Found", srv.URL+"/missing")
	_, err = fetchURL(t, p, srv.URL+"/busy")
	contains(t, wantCode(t, err, web.CodeRateLimited).Message, "retry after 7s")
	if d, ok := web.RetryAfter(err); !ok || d != 7*time.Second {
		t.Errorf("RetryAfter = %v %v", d, ok)
	}
	_, err = fetchURL(t, p, srv.URL+"/down")
	if wantCode(t, err, web.CodeHTTPStatus).Status != 503 {
		t.Error("status not recorded")
	}
	_, err = fetchURL(t, p, srv.URL+"/not-modified")
	wantCode(t, err, web.CodeHTTPStatus)
}

func TestInvalidURLs(t *testing.T) {
	p := provider(t, Options{MaxURLLength: 100})
	for u, code := range map[string]string{
		"":                          web.CodeInvalidURL,
		"   ":                       web.CodeInvalidURL,
		"ftp://example.com/a":       web.CodeInvalidURL,
		"file:///etc/passwd":        web.CodeInvalidURL,
		"javascript:alert(1)":       web.CodeInvalidURL,
		"http://exa mple.com/":      web.CodeInvalidURL,
		"https://user:pass@a.test/": web.CodeBlocked,
		"https://a.test/" + strings.Repeat("x", 100): web.CodeInvalidURL,
	} {
		_, err := fetchURL(t, p, u)
		wantCode(t, err, code)
	}
	_, err := fetchURL(t, p, "javascript:alert(1)")
	contains(t, wantCode(t, err, web.CodeInvalidURL).Message, `unsupported URL scheme "javascript"`)
	for raw, want := range map[string]string{
		"example.com/docs#intro":      "https://example.com/docs",
		"  HTTP://Example.COM  ":      "http://example.com/",
		"https://example.com/a?b=c#d": "https://example.com/a?b=c",
	} {
		u, err := p.parseURL(raw)
		if err != nil || u.String() != want {
			t.Errorf("parseURL(%q) = %v, %v; want %s", raw, u, err, want)
		}
	}
}

func TestConnectionRefusedIsProviderError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ap := ln.Addr().(*net.TCPAddr).AddrPort()
	_ = ln.Close()
	p := New(Options{Allow: []netip.AddrPort{ap}})
	defer p.Close()
	_, err = p.Fetch(context.Background(), web.FetchRequest{URL: "http://" + ap.String() + "/"})
	contains(t, wantCode(t, err, web.CodeProviderError).Message, "refused")

	_, err = New(Options{Resolver: fakeResolver{}}).Fetch(context.Background(), web.FetchRequest{URL: "http://nowhere.test/"})
	contains(t, wantCode(t, err, web.CodeProviderError).Message, `cannot resolve host "nowhere.test"`)
}

func TestHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "over tls "+r.Proto)
	}))
	t.Cleanup(srv.Close)
	tlsConf := srv.Client().Transport.(*http.Transport).TLSClientConfig
	p := provider(t, Options{TLSConfig: tlsConf}, srv)
	if r := mustFetch(t, p, srv.URL); !strings.HasPrefix(r.Content, "over tls") {
		t.Errorf("https: %+v", r)
	}
}

func TestConcurrentFetches(t *testing.T) {
	page, _ := os.ReadFile("testdata/article.html")
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write(page)
	})
	p := provider(t, Options{}, srv)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			r, err := p.Fetch(context.Background(), web.FetchRequest{URL: srv.URL})
			if err == nil && !strings.Contains(r.Content, "## Summary") {
				err = fmt.Errorf("bad content")
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
