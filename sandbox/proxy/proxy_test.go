package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/net/proxy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeDNS resolves every name to loopback, so "allowed.test" can be served
// by an httptest server.
type fakeDNS struct{}

func (fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

func start(t *testing.T, allow ...string) (addr string, blocked func() []string) {
	t.Helper()
	p := New(Options{Resolver: fakeDNS{}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Serve(l, &Scope{Allow: allow, OnBlock: func(m string) { mu.Lock(); got = append(got, m); mu.Unlock() }})
	}()
	t.Cleanup(func() { _ = l.Close(); <-done; p.Close() })
	return l.Addr().String(), func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), got...) }
}

func backend(t *testing.T) (port string) {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.Host)
	}))
	t.Cleanup(s.Close)
	u, _ := url.Parse(s.URL)
	return u.Port()
}

func client(proxyAddr string) *http.Client {
	pu, _ := url.Parse("http://" + proxyAddr)
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), DisableKeepAlives: true}}
}

func TestHTTPForwardAllowedAndBlocked(t *testing.T) {
	port := backend(t)
	// localhost named explicitly: a loopback destination is allowed.
	addr, blocked := start(t, "localhost")
	resp, err := client(addr).Get("http://localhost:" + port + "/x")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "hello localhost") {
		t.Fatalf("body %q", b)
	}
	resp, err = client(addr).Get("http://github.io:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "blocked github.io:"+port+": not in sandbox.network.allow") {
		t.Fatalf("status %d body %q", resp.StatusCode, b)
	}
	if got := blocked(); len(got) != 1 {
		t.Fatalf("blocked reports %q", got)
	}
}

// A domain on the list that resolves to a private or loopback address is
// refused unless the entry names the address literally.
func TestAllowedDomainResolvingToLoopbackIsRefused(t *testing.T) {
	port := backend(t)
	addr, _ := start(t, "allowed.test")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT allowed.test:%s HTTP/1.1\r\nHost: allowed.test\r\n\r\n", port)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get("X-Dsh-Sandbox"), "loopback") {
		t.Fatalf("status %d %q", resp.StatusCode, resp.Header.Get("X-Dsh-Sandbox"))
	}
}

// ...and reached when the list also names that address: a registry served
// on the machine's loopback under a name of its own.
func TestAllowedDomainResolvingToANamedAddress(t *testing.T) {
	port := backend(t)
	addr, blocked := start(t, "allowed.test", "127.0.0.1")
	resp, err := client(addr).Get("http://allowed.test:" + port + "/x")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "hello allowed.test") {
		t.Fatalf("status %d body %q, refusals %v", resp.StatusCode, b, blocked())
	}
	// Naming the address does not let other domains through.
	resp, err = client(addr).Get("http://other.test:" + port + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("other.test: status %d", resp.StatusCode)
	}
}

func TestConnectAndSOCKS5(t *testing.T) {
	port := backend(t)
	addr, blocked := start(t, "127.0.0.1", "*.example.org")
	// CONNECT tunnel.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT 127.0.0.1:%s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: tunnel\r\nConnection: close\r\n\r\n")
	b, _ := io.ReadAll(br)
	c.Close()
	if !strings.Contains(string(b), "hello tunnel") {
		t.Fatalf("tunnel %q", b)
	}
	// SOCKS5 with a domain the list refuses, then an address it allows.
	d, err := proxy.SOCKS5("tcp", addr, nil, proxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Dial("tcp", "evil.test:80"); err == nil {
		t.Fatal("SOCKS5 to a domain off the list connected")
	}
	sc, err := d.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(sc, "GET / HTTP/1.1\r\nHost: socks\r\nConnection: close\r\n\r\n")
	b, _ = io.ReadAll(sc)
	sc.Close()
	if !strings.Contains(string(b), "hello socks") {
		t.Fatalf("socks %q", b)
	}
	if got := blocked(); len(got) != 1 || !strings.Contains(got[0], "blocked evil.test:80") {
		t.Fatalf("blocked %q", got)
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		allow          []string
		host           string
		explicit, okay bool
	}{
		{[]string{"github.com"}, "github.com", false, true},
		{[]string{"127.0.0.1"}, "127.0.0.1", true, true},
		{[]string{"localhost"}, "localhost", true, true},
		{[]string{"github.com"}, "api.github.com", false, false},
		{[]string{"*.npmjs.org"}, "registry.npmjs.org", false, true},
		{[]string{"*.npmjs.org"}, "npmjs.org", false, false},
		{[]string{"*.npmjs.org"}, "evilnpmjs.org", false, false},
		{[]string{"*"}, "anything.test", false, true},
		{[]string{"GitHub.com."}, "github.COM", false, true},
	} {
		e, ok := Match(c.allow, c.host)
		if e != c.explicit || ok != c.okay {
			t.Errorf("Match(%v, %q) = %v, %v", c.allow, c.host, e, ok)
		}
	}
}
