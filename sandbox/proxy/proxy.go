// Package proxy is the sandbox's filtering network proxy: sandboxed
// commands have no network of their own, and reach the allowed domains
// only through it. One listener speaks both HTTP (CONNECT tunnels and
// absolute-form requests) and SOCKS5 (CONNECT), told apart by the first
// byte, so HTTP_PROXY, HTTPS_PROXY and ALL_PROXY can all name it.
//
// Every request is decided on the host name the client asked for, against
// the allow-list, and then on the address actually dialled: a destination
// on the machine's own networks (loopback, private, link-local, metadata;
// the web_fetch guard's rules) is refused unless the matching entry names
// it literally ("localhost", "127.0.0.1"). Names are resolved here, never
// by the client, and only IP literals that passed the check are dialled,
// so a second DNS answer cannot slip in. A refused request is answered
// with a reason the client shows ("blocked github.io:443: not in
// sandbox.network.allow") and reported to the scope's OnBlock.
package proxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dshq/dsh/internal/netguard"
)

// Resolver looks up host names; *net.Resolver implements it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Scope is what one listener's clients may reach, and where refusals go.
type Scope struct {
	// Allow is the allow-list ("github.com", "*.npmjs.org", "127.0.0.1").
	Allow []string
	// Approve, when set, is asked about a host the allow-list refuses
	// (the user may allow it for the session); true lets it through.
	Approve func(ctx context.Context, host string, port int) bool
	// OnBlock receives every refusal's message.
	OnBlock func(msg string)
}

// Proxy serves scopes. The zero value is not usable; call [New].
type Proxy struct {
	resolver    Resolver
	log         *slog.Logger
	dialTimeout time.Duration

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// Options configure a proxy.
type Options struct {
	Resolver    Resolver // default net.DefaultResolver
	Logger      *slog.Logger
	DialTimeout time.Duration // default 10 s
}

// New returns a proxy.
func New(o Options) *Proxy {
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = 10 * time.Second
	}
	return &Proxy{resolver: o.Resolver, log: o.Logger, dialTimeout: o.DialTimeout, conns: map[net.Conn]struct{}{}}
}

// Serve accepts connections on l for scope until l is closed. It returns
// nil once l is closed; connections already accepted run on.
func (p *Proxy) Serve(l net.Listener, scope *Scope) error {
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("proxy: accept: %w", err)
		}
		p.mu.Lock()
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go func() {
			defer p.wg.Done()
			defer p.forget(c)
			p.handle(c, scope)
		}()
	}
}

// Close ends every connection and waits for their handlers.
func (p *Proxy) Close() {
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) forget(c net.Conn) {
	_ = c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) handle(c net.Conn, scope *Scope) {
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	if first[0] == 0x05 {
		p.socks(c, br, scope)
		return
	}
	p.http(c, br, scope)
}

// blocked is a refusal with the message the client and the user see.
type blocked struct{ msg string }

func (b *blocked) Error() string { return b.msg }

// decide checks host:port against the scope and resolves it to the
// addresses that may be dialled.
func (p *Proxy) decide(ctx context.Context, scope *Scope, host string, port int) ([]netip.AddrPort, error) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	target := net.JoinHostPort(host, strconv.Itoa(port))
	explicit, ok := Match(scope.Allow, host)
	if !ok && scope.Approve != nil && scope.Approve(ctx, host, port) {
		// The user allowed this very host: when it is an address, that
		// names it literally.
		ok, explicit = true, literal(host)
	}
	if !ok {
		return nil, p.refuse(scope, fmt.Sprintf("blocked %s: not in sandbox.network.allow", target))
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		rctx, cancel := context.WithTimeout(ctx, p.dialTimeout)
		found, err := p.resolver.LookupNetIP(rctx, "ip", host)
		cancel()
		if err != nil {
			return nil, p.refuse(scope, fmt.Sprintf("blocked %s: cannot resolve %s: %v", target, host, err))
		}
		ips = found
	}
	var out []netip.AddrPort
	var why string
	for _, ip := range ips {
		ip = ip.Unmap().WithZone("")
		if c := netguard.Classify(ip); c != "" && !explicit && !namesAddress(scope.Allow, ip) {
			why = fmt.Sprintf("blocked %s: %s is a %s address (add %s to sandbox.network.allow to reach it)", target, ip, c, ip)
			continue
		}
		out = append(out, netip.AddrPortFrom(ip, uint16(port)))
	}
	if len(out) == 0 {
		if why == "" {
			why = fmt.Sprintf("blocked %s: no address", target)
		}
		return nil, p.refuse(scope, why)
	}
	return out, nil
}

func (p *Proxy) refuse(scope *Scope, msg string) error {
	p.log.Info("sandbox proxy refused a request", "reason", msg)
	if scope.OnBlock != nil {
		scope.OnBlock(msg)
	}
	return &blocked{msg: msg}
}

// dial connects to the first reachable address; only the checked IP
// literals are dialled.
func (p *Proxy) dial(ctx context.Context, addrs []netip.AddrPort) (net.Conn, error) {
	d := net.Dialer{Timeout: p.dialTimeout, KeepAlive: 30 * time.Second,
		ControlContext: func(_ context.Context, _, address string, _ syscall.RawConn) error {
			for _, a := range addrs {
				if a.String() == address {
					return nil
				}
			}
			return fmt.Errorf("proxy: refusing to dial unchecked address %s", address)
		}}
	var errs []error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", a.String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// Match reports whether host is allowed by the list, and whether the
// matching entry names an address literally (an IP, or "localhost"), which
// lets a private or loopback destination through. "*.example.com" matches subdomains of example.com,
// not example.com itself; "*" matches every public host.
func Match(allow []string, host string) (explicit, ok bool) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, a := range allow {
		a = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(a)), ".")
		switch {
		case a == "*":
			ok = true
		case strings.HasPrefix(a, "*."):
			if strings.HasSuffix(host, a[1:]) {
				ok = true
			}
		case a == host, strings.Trim(a, "[]") == strings.Trim(host, "[]"):
			return literal(host), true
		}
	}
	return false, ok
}

// namesAddress reports whether the allow-list names ip itself: then an
// allowed domain that resolves to it may be reached even when it is a
// private or loopback address ("registry.test" and "127.0.0.1" together
// let a registry on the machine's loopback through, as "127.0.0.1" alone
// already does by address).
func namesAddress(allow []string, ip netip.Addr) bool {
	for _, a := range allow {
		if x, err := netip.ParseAddr(strings.Trim(strings.TrimSpace(a), "[]")); err == nil && x.Unmap() == ip {
			return true
		}
	}
	return false
}

// literal reports whether host names an address rather than a domain
// whose DNS answer could point anywhere.
func literal(host string) bool {
	if host == "localhost" {
		return true
	}
	_, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil
}

// http serves HTTP proxy requests on c: CONNECT tunnels, and
// absolute-form requests forwarded one at a time (each decided on its own
// host, so a kept-alive connection cannot carry a request elsewhere).
func (p *Proxy) http(c net.Conn, br *bufio.Reader, scope *Scope) {
	ctx := context.Background()
	var transport *http.Transport
	defer func() {
		if transport != nil {
			transport.CloseIdleConnections()
		}
	}()
	for {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Minute))
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_ = c.SetReadDeadline(time.Time{})
		if req.Method == http.MethodConnect {
			host, port, err := splitHostPort(req.Host, 443)
			if err != nil {
				writeStatus(c, http.StatusBadRequest, err.Error())
				return
			}
			addrs, err := p.decide(ctx, scope, host, port)
			if err != nil {
				writeStatus(c, http.StatusForbidden, err.Error())
				return
			}
			up, err := p.dial(ctx, addrs)
			if err != nil {
				writeStatus(c, http.StatusBadGateway, fmt.Sprintf("cannot reach %s: %v", req.Host, err))
				return
			}
			if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
				_ = up.Close()
				return
			}
			splice(c, br, up)
			return
		}
		if req.URL == nil || !req.URL.IsAbs() || req.URL.Scheme != "http" {
			writeStatus(c, http.StatusBadRequest, "this is a proxy: send absolute http:// URLs or CONNECT")
			return
		}
		host, port, err := splitHostPort(req.URL.Host, 80)
		if err != nil {
			writeStatus(c, http.StatusBadRequest, err.Error())
			return
		}
		addrs, err := p.decide(ctx, scope, host, port)
		if err != nil {
			writeStatus(c, http.StatusForbidden, err.Error())
			_, _ = io.Copy(io.Discard, req.Body)
			continue
		}
		if transport == nil {
			transport = &http.Transport{Proxy: nil, DisableCompression: true, MaxIdleConnsPerHost: 4}
		}
		transport.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) { return p.dial(ctx, addrs) }
		req.RequestURI = ""
		for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate"} {
			req.Header.Del(h)
		}
		resp, err := transport.RoundTrip(req)
		if err != nil {
			writeStatus(c, http.StatusBadGateway, fmt.Sprintf("cannot reach %s: %v", req.URL.Host, err))
			return
		}
		err = resp.Write(c)
		_ = resp.Body.Close()
		if err != nil || req.Close || resp.Close {
			return
		}
	}
}

func splitHostPort(hostport string, def int) (string, int, error) {
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		if strings.Contains(err.Error(), "missing port") {
			return strings.Trim(hostport, "[]"), def, nil
		}
		return "", 0, fmt.Errorf("bad host %q", hostport)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port in %q", hostport)
	}
	return host, port, nil
}

func writeStatus(c net.Conn, code int, msg string) {
	body := msg + "\n"
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nX-Dsh-Sandbox: %s\r\n\r\n%s",
		code, http.StatusText(code), len(body), strings.ReplaceAll(msg, "\n", " "), body)
}

// SOCKS5 constants (RFC 1928).
const (
	socksVersion     = 5
	socksConnect     = 1
	socksIPv4        = 1
	socksDomain      = 3
	socksIPv6        = 4
	socksOK          = 0
	socksNotAllowed  = 2
	socksUnreachable = 4
	socksRefused     = 5
	socksBadCommand  = 7
	socksBadAddress  = 8
)

func (p *Proxy) socks(c net.Conn, br *bufio.Reader, scope *Scope) {
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return
	}
	noAuth := false
	for _, m := range methods {
		if m == 0 {
			noAuth = true
		}
	}
	if !noAuth {
		_, _ = c.Write([]byte{socksVersion, 0xff})
		return
	}
	if _, err := c.Write([]byte{socksVersion, 0}); err != nil {
		return
	}
	var req [4]byte
	if _, err := io.ReadFull(br, req[:]); err != nil || req[0] != socksVersion {
		return
	}
	var host string
	switch req[3] {
	case socksIPv4, socksIPv6:
		n := 4
		if req[3] == socksIPv6 {
			n = 16
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return
		}
		ip, _ := netip.AddrFromSlice(b)
		host = ip.String()
	case socksDomain:
		var l [1]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return
		}
		b := make([]byte, l[0])
		if _, err := io.ReadFull(br, b); err != nil {
			return
		}
		host = string(b)
	default:
		socksReply(c, socksBadAddress)
		return
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return
	}
	port := int(binary.BigEndian.Uint16(pb[:]))
	if req[1] != socksConnect {
		socksReply(c, socksBadCommand)
		return
	}
	ctx := context.Background()
	addrs, err := p.decide(ctx, scope, host, port)
	if err != nil {
		socksReply(c, socksNotAllowed)
		return
	}
	up, err := p.dial(ctx, addrs)
	if err != nil {
		code := byte(socksUnreachable)
		if errors.Is(err, syscall.ECONNREFUSED) {
			code = socksRefused
		}
		socksReply(c, code)
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if !socksReply(c, socksOK) {
		_ = up.Close()
		return
	}
	splice(c, br, up)
}

func socksReply(c net.Conn, code byte) bool {
	_, err := c.Write([]byte{socksVersion, code, 0, socksIPv4, 0, 0, 0, 0, 0, 0})
	return err == nil
}

// splice copies both ways until both directions are done, passing a
// half-close on.
func splice(c net.Conn, br *bufio.Reader, up net.Conn) {
	_ = c.SetReadDeadline(time.Time{})
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(up, br)
		closeWrite(up)
		close(done)
	}()
	_, _ = io.Copy(c, up)
	closeWrite(c)
	<-done
	_ = up.Close()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}
