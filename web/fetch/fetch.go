// Package fetch is dsh's local web fetch provider: it downloads a page over
// HTTP(S) from this machine and turns it into text the model can read —
// HTML as Markdown of the main content (go-readability, then
// html-to-markdown), plain text, Markdown and JSON as they are.
//
// It is safe by default. Every connection, including each redirect hop, is
// checked after DNS resolution against the address that is actually dialled
// (a net.Dialer Control hook), so loopback, private (RFC 1918, ULA),
// link-local, CGNAT, multicast, reserved and cloud-metadata addresses are
// refused and DNS rebinding cannot sneak one in. Options.AllowPrivateNetworks
// lifts the private-network rule (metadata endpoints stay blocked);
// Options.Allow admits exact address:port pairs (a local test server).
// Proxies from the environment are never used, since a proxy would resolve
// names on our behalf and defeat the check.
//
// Requests have an overall timeout spanning every redirect hop and the body
// read, a redirect limit and a body size limit; a body longer than the
// limit is cut and reported as truncated, a response that declares a
// larger Content-Length is refused. Failures are web errors (see the web
// package).
package fetch

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/web"
)

// ID is the provider id.
const ID = "local"

// Defaults of [Options].
const (
	DefaultTimeout      = 30 * time.Second
	DefaultMaxTimeout   = 2 * time.Minute
	DefaultMaxBytes     = 5 << 20
	DefaultMaxRedirects = 10
	DefaultMaxURLLength = 4096
	DefaultUserAgent    = "Mozilla/5.0 (compatible; dsh/1.0; +https://github.com/dshq/dsh)"
)

// Options configure the provider. Zero fields take the defaults.
type Options struct {
	// Timeout bounds one fetch, all redirect hops and the body read
	// included; a request's own Timeout may raise it up to MaxTimeout.
	Timeout    time.Duration
	MaxTimeout time.Duration
	// MaxBytes caps the body read; a longer body is cut (and the result
	// marked truncated), a larger declared Content-Length is refused.
	MaxBytes int64
	// MaxRedirects is how many redirects are followed; -1 follows none.
	MaxRedirects int
	MaxURLLength int
	UserAgent    string
	// AllowPrivateNetworks lets fetches reach loopback, private, link-local
	// and CGNAT addresses (a local development server). Cloud-metadata
	// addresses stay blocked.
	AllowPrivateNetworks bool
	// Allow admits exactly these address:port pairs whatever their
	// category; everything else stays under the policy. Tests use it to
	// reach their loopback server while proving that other loopback
	// addresses are still refused.
	Allow []netip.AddrPort
	// Resolver resolves host names (nil: net.DefaultResolver). Tests inject
	// names that resolve to addresses of their choosing.
	Resolver Resolver
	// TLSConfig, when set, is used for HTTPS (tests trust their server's
	// certificate through it).
	TLSConfig *tls.Config
}

// Provider is the local fetch provider. Close it to release idle
// connections.
type Provider struct {
	o         Options
	guard     *guard
	transport *http.Transport
	client    *http.Client
}

var _ web.FetchProvider = (*Provider)(nil)

// New returns a provider.
func New(o Options) *Provider {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxTimeout <= 0 {
		o.MaxTimeout = DefaultMaxTimeout
	}
	if o.MaxTimeout < o.Timeout {
		o.MaxTimeout = o.Timeout
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	switch {
	case o.MaxRedirects == 0:
		o.MaxRedirects = DefaultMaxRedirects
	case o.MaxRedirects < 0:
		o.MaxRedirects = 0
	}
	if o.MaxURLLength <= 0 {
		o.MaxURLLength = DefaultMaxURLLength
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	g := &guard{allowPrivate: o.AllowPrivateNetworks, allow: map[netip.AddrPort]bool{}, resolver: o.Resolver, dialTimeout: 10 * time.Second}
	if g.resolver == nil {
		g.resolver = net.DefaultResolver
	}
	for _, ap := range o.Allow {
		g.allow[netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())] = true
	}
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would resolve names for us and bypass the guard
		DialContext:            g.dialContext,
		TLSClientConfig:        o.TLSConfig,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           16,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}
	p := &Provider{o: o, guard: g, transport: tr}
	p.client = &http.Client{Transport: tr, CheckRedirect: p.checkRedirect}
	return p
}

// ID implements web.FetchProvider.
func (p *Provider) ID() string { return ID }

// Available implements web.FetchProvider: the local fetcher needs nothing.
func (p *Provider) Available() error { return nil }

// Close releases idle connections.
func (p *Provider) Close() error {
	p.transport.CloseIdleConnections()
	return nil
}

// redirectError is returned by checkRedirect; Fetch maps it.
type redirectError struct{ err *llm.Error }

func (e *redirectError) Error() string { return e.err.Error() }

func (p *Provider) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > p.o.MaxRedirects {
		return &redirectError{web.Errorf(web.CodeBlocked,
			"stopped after %d redirects (the limit) at %s; fetch the final URL directly if you know it",
			p.o.MaxRedirects, redact(via[len(via)-1].URL))}
	}
	if err := p.validate(req.URL); err != nil {
		err.Message = "redirect to " + redact(req.URL) + " refused: " + err.Message
		return &redirectError{err}
	}
	return nil
}

// validate checks a URL before any connection: scheme, credentials,
// literal blocked addresses. Host names are checked at dial time.
func (p *Provider) validate(u *url.URL) *llm.Error {
	switch u.Scheme {
	case "http", "https":
	default:
		return web.Errorf(web.CodeInvalidURL, "unsupported URL scheme %q (only http and https can be fetched)", u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return web.Errorf(web.CodeInvalidURL, "the URL %q has no host", u.String())
	}
	if u.User != nil {
		return web.Errorf(web.CodeBlocked, "URLs with credentials (user:password@) are not fetched")
	}
	if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil {
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		ap, err := netip.ParseAddrPort(net.JoinHostPort(ip.String(), port))
		if err != nil {
			return web.Errorf(web.CodeInvalidURL, "invalid port in %q", u.String())
		}
		if err := p.guard.check(ap, ""); err != nil {
			return blockedError(err)
		}
	}
	return nil
}

// parseURL checks and normalizes a URL a model wrote: surrounding space is
// dropped and a URL without a scheme ("example.com/docs") means https.
func (p *Provider) parseURL(raw string) (*url.URL, *llm.Error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return nil, web.Errorf(web.CodeInvalidURL, "the URL is empty")
	}
	if len(s) > p.o.MaxURLLength {
		return nil, web.Errorf(web.CodeInvalidURL, "the URL is longer than %d characters", p.o.MaxURLLength)
	}
	if !strings.Contains(s, "://") {
		if m := opaqueScheme().FindStringSubmatch(s); m != nil {
			return nil, web.Errorf(web.CodeInvalidURL, "unsupported URL scheme %q (only http and https can be fetched)", strings.ToLower(m[1]))
		}
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, web.Wrap(web.CodeInvalidURL, err, "invalid URL %q", raw)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "" {
		u.Path = "/"
	}
	if err := p.validate(u); err != nil {
		return nil, err
	}
	return u, nil
}

// opaqueScheme matches URLs with a scheme but no "//" (mailto:, data:,
// javascript:), which are not host names missing their https://.
var opaqueScheme = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(mailto|javascript|data|file|about|tel|blob|urn):`)
})

var errTimeout = errors.New("web fetch timeout")

// Fetch implements web.FetchProvider.
func (p *Provider) Fetch(ctx context.Context, req web.FetchRequest) (*web.FetchResult, error) {
	if err := web.ContextError(ctx, "the web fetch"); err != nil {
		return nil, err
	}
	u, verr := p.parseURL(req.URL)
	if verr != nil {
		return nil, verr
	}
	timeout := p.o.Timeout
	if req.Timeout > 0 {
		timeout = min(req.Timeout, p.o.MaxTimeout)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer cancel()
	what := "fetching " + redact(u)

	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, web.Wrap(web.CodeInvalidURL, err, "invalid URL %q", req.URL)
	}
	hreq.Header.Set("User-Agent", p.o.UserAgent)
	hreq.Header.Set("Accept", "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.8,application/json;q=0.8,*/*;q=0.5")
	hreq.Header.Set("Accept-Language", "en-US,en;q=0.9")
	resp, err := p.client.Do(hreq)
	if err != nil {
		return nil, p.transportError(ctx, what, timeout, err)
	}
	defer resp.Body.Close()
	final := resp.Request.URL

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, statusError(final, resp)
	}
	ct := resp.Header.Get("Content-Type")
	mt, _ := mediaType(ct)
	sniffed := mt == "" || mt == "application/octet-stream" || mt == "binary/octet-stream"
	if !sniffed && classify(mt) == kindUnsupported {
		return nil, unsupported(final, mt)
	}
	if resp.ContentLength > p.o.MaxBytes {
		return nil, web.Errorf(web.CodeTooLarge, "%s is %d bytes, more than the %d-byte limit; fetch a smaller or more specific page",
			redact(final), resp.ContentLength, p.o.MaxBytes)
	}

	// Read up to MaxBytes+1: one byte more than the limit tells a body of
	// exactly MaxBytes (complete) from a longer one (cut).
	buf := bytes.NewBuffer(make([]byte, 0, min(p.o.MaxBytes+1, 64<<10)))
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, p.o.MaxBytes+1))
	if err != nil {
		return nil, p.transportError(ctx, what, timeout, err)
	}
	body := buf.Bytes()
	truncated := n > p.o.MaxBytes
	if truncated {
		body = body[:p.o.MaxBytes]
	}

	if sniffed {
		mt = sniff(body[:min(len(body), 512)])
	}
	k := classify(mt)
	if k == kindUnsupported {
		return nil, unsupported(final, mt)
	}
	if truncated && k != kindHTML {
		body = trimPartialRune(body)
	}
	text := decodeText(body, ct, k)
	res := &web.FetchResult{
		Provider:    ID,
		URL:         u.String(),
		FinalURL:    final.String(),
		Status:      resp.StatusCode,
		ContentType: mt,
		Bytes:       int64(len(body)),
		Truncated:   truncated,
		FetchedAt:   time.Now(),
	}
	switch k {
	case kindHTML:
		doc, err := HTMLToMarkdown([]byte(text), final)
		if err != nil {
			return nil, web.Wrap(web.CodeProviderError, err, "converting %s to Markdown failed: %v", redact(final), err)
		}
		res.Title, res.Content, res.Format = doc.Title, doc.Markdown, web.FormatMarkdown
	case kindMarkdown:
		res.Content, res.Format = text, web.FormatMarkdown
	case kindJSON:
		res.Content, res.Format = text, web.FormatJSON
	default:
		res.Content, res.Format = text, web.FormatText
	}
	res.Content = strings.ReplaceAll(res.Content, "\x00", "")
	return res, nil
}

// transportError maps a failure of the request or the body read.
func (p *Provider) transportError(ctx context.Context, what string, timeout time.Duration, err error) error {
	var re *redirectError
	if errors.As(err, &re) {
		return re.err
	}
	var be *BlockedError
	if errors.As(err, &be) {
		return blockedError(be)
	}
	if ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), errTimeout) {
			return web.Wrap(web.CodeTimeout, err, "%s timed out after %s", what, timeout)
		}
		return web.ContextError(ctx, what)
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return web.Wrap(web.CodeProviderError, err, "%s failed: cannot resolve host %q", what, dns.Name)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return web.Wrap(web.CodeTimeout, err, "%s timed out: %v", what, unwrapURLError(err))
	}
	return web.Wrap(web.CodeProviderError, err, "%s failed: %v", what, unwrapURLError(err))
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func blockedError(err error) *llm.Error {
	return web.Wrap(web.CodeBlocked, err,
		"%v; web_fetch only reaches public internet addresses (the user can allow local and private networks with the web.allowPrivateNetworks setting)", err)
}

func statusError(u *url.URL, resp *http.Response) *llm.Error {
	text := fmt.Sprintf("HTTP %d", resp.StatusCode)
	if st := http.StatusText(resp.StatusCode); st != "" {
		text += " " + st
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		rl := &web.RateLimit{RetryAfter: web.ParseRetryAfter(resp.Header, time.Now())}
		msg := fmt.Sprintf("%s answered %s", redact(u), text)
		if rl.RetryAfter > 0 {
			msg += "; retry after " + rl.RetryAfter.String()
		}
		e := web.Wrap(web.CodeRateLimited, rl, "%s", msg)
		e.Status = resp.StatusCode
		return e
	}
	e := web.Errorf(web.CodeHTTPStatus, "%s answered %s", redact(u), text)
	e.Status = resp.StatusCode
	return e
}

func unsupported(u *url.URL, mt string) *llm.Error {
	switch {
	case mt == "application/pdf":
		return web.Errorf(web.CodeUnsupportedContent, "%s is a PDF document, which web_fetch cannot turn into text; look for an HTML version of it", redact(u))
	case mt == "":
		return web.Errorf(web.CodeUnsupportedContent, "%s has no content type and does not look like text", redact(u))
	case strings.HasPrefix(mt, "image/"), strings.HasPrefix(mt, "audio/"), strings.HasPrefix(mt, "video/"):
		return web.Errorf(web.CodeUnsupportedContent, "%s is media (%s), not a text document", redact(u), mt)
	}
	return web.Errorf(web.CodeUnsupportedContent, "%s has content type %s, which web_fetch cannot turn into text", redact(u), mt)
}

// redact prints a URL without credentials and query secrets' noise: the
// user part is dropped.
func redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	if u.User == nil {
		return u.String()
	}
	c := *u
	c.User = nil
	return c.String()
}
