package proxy

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// The added cost of a request through the filtering proxy over a direct
// one, both on loopback with a fresh connection per request (a sandboxed
// command's tools — curl, go, npm — mostly open one per request; keep-
// alive would hide the proxy's per-connection work). Go's net package sets
// TCP_NODELAY on TCP connections, so Nagle and delayed ACKs add nothing.
//
//	go test -bench 'HTTP' -run '^$' -benchtime=2000x -count=3 ./sandbox/proxy/

func benchBackend(b *testing.B, tlsOn bool) *httptest.Server {
	b.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	var s *httptest.Server
	if tlsOn {
		s = httptest.NewTLSServer(h)
	} else {
		s = httptest.NewServer(h)
	}
	b.Cleanup(s.Close)
	return s
}

func benchProxy(b *testing.B) string {
	b.Helper()
	p := New(Options{Resolver: fakeDNS{}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Serve(l, &Scope{Allow: []string{"localhost"}}) }()
	b.Cleanup(func() { _ = l.Close(); <-done; p.Close() })
	return l.Addr().String()
}

func benchGet(b *testing.B, c *http.Client, u string) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		resp, err := c.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

func localURL(b *testing.B, s *httptest.Server) string {
	u, err := url.Parse(s.URL)
	if err != nil {
		b.Fatal(err)
	}
	return u.Scheme + "://localhost:" + u.Port() + "/"
}

func transport(s *httptest.Server, proxyAddr string) *http.Transport {
	t := &http.Transport{DisableKeepAlives: true}
	if s.TLS != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: s.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs, ServerName: "example.com"}
	}
	if proxyAddr != "" {
		pu, _ := url.Parse("http://" + proxyAddr)
		t.Proxy = http.ProxyURL(pu)
	}
	return t
}

func BenchmarkHTTPDirect(b *testing.B) {
	s := benchBackend(b, false)
	benchGet(b, &http.Client{Transport: transport(s, "")}, localURL(b, s))
}

func BenchmarkHTTPProxied(b *testing.B) {
	s := benchBackend(b, false)
	benchGet(b, &http.Client{Transport: transport(s, benchProxy(b))}, localURL(b, s))
}

func BenchmarkHTTPSDirect(b *testing.B) {
	s := benchBackend(b, true)
	benchGet(b, &http.Client{Transport: transport(s, "")}, localURL(b, s))
}

// BenchmarkHTTPSProxied goes through HTTP CONNECT, as HTTPS_PROXY does.
func BenchmarkHTTPSProxied(b *testing.B) {
	s := benchBackend(b, true)
	benchGet(b, &http.Client{Transport: transport(s, benchProxy(b))}, localURL(b, s))
}
