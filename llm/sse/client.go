package sse

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dshq/dsh/llm"
)

// Defaults for [Options].
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultMaxRetries     = 3
	DefaultBaseDelay      = 500 * time.Millisecond
	DefaultMaxDelay       = 30 * time.Second
	DefaultMaxRetryAfter  = 2 * time.Minute
)

// Options are the reliability settings of a [Client]. The zero value means
// the defaults above.
type Options struct {
	// ConnectTimeout bounds connecting and receiving the response headers
	// (negative: no bound).
	ConnectTimeout time.Duration
	// IdleTimeout bounds the silence between two reads of the body
	// (negative: no bound). Reasoning models can think quietly for a while,
	// so the default is generous.
	IdleTimeout time.Duration
	// MaxRetries is the number of retries after the first attempt
	// (negative: none).
	MaxRetries int
	// BaseDelay and MaxDelay shape the exponential backoff: the n-th retry
	// waits between half and all of min(MaxDelay, BaseDelay·2ⁿ).
	BaseDelay, MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After the client will wait for;
	// a longer one ends the call with the provider's error instead.
	MaxRetryAfter time.Duration
	// Sleep waits between attempts (nil: a timer that honours ctx). Tests
	// inject an instant one.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1) for jitter (nil: math/rand/v2).
	Rand func() float64
	// Now is the clock used to read an HTTP-date Retry-After (nil: time.Now).
	Now func() time.Time
	// MaxEventSize bounds one SSE line or event (0: DefaultMaxEventSize).
	MaxEventSize int
}

func (o Options) connectTimeout() time.Duration {
	if o.ConnectTimeout == 0 {
		return DefaultConnectTimeout
	}
	return o.ConnectTimeout
}

func (o Options) idleTimeout() time.Duration {
	if o.IdleTimeout == 0 {
		return DefaultIdleTimeout
	}
	return o.IdleTimeout
}

func (o Options) maxRetries() int {
	switch {
	case o.MaxRetries < 0:
		return 0
	case o.MaxRetries == 0:
		return DefaultMaxRetries
	}
	return o.MaxRetries
}

// Backoff returns the wait before retry number n (0-based) without a
// Retry-After: full exponential delay with the upper half jittered.
func (o Options) Backoff(n int) time.Duration {
	base, max := o.BaseDelay, o.MaxDelay
	if base <= 0 {
		base = DefaultBaseDelay
	}
	if max <= 0 {
		max = DefaultMaxDelay
	}
	d := base
	for i := 0; i < n && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	r := rand.Float64
	if o.Rand != nil {
		r = o.Rand
	}
	f := r()
	if f < 0 || f >= 1 || f != f {
		f = 0.5
	}
	return d/2 + time.Duration(f*float64(d/2))
}

func (o Options) sleep(ctx context.Context, d time.Duration) error {
	if o.Sleep != nil {
		return o.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Decoder turns one provider's events into chunks. The client calls Reset
// before every attempt, then Event for each event until Event reports done.
// A Decoder delivers chunks to its consumer itself (typically by calling the
// stream's yield function); Emitted says whether it has, because a call that
// has streamed anything is never retried.
type Decoder interface {
	Reset()
	Event(ev *Event) (done bool, err error)
	Emitted() bool
}

// Ender is a [Decoder] that can finish a message whose stream ended without
// its end-of-stream marker ([DONE], message_stop). Once the finish reason
// has arrived everything the model said is there; only the marker is
// missing, and failing the step would throw a complete answer away.
type Ender interface {
	// EndOfStream is called when the stream ends (or the connection
	// drops) before the marker. It reports whether the message was
	// complete, in which case it has delivered the end of it.
	EndOfStream() (complete bool, err error)
}

// Client performs streaming requests for one provider.
type Client struct {
	// HTTP is the client used (nil: http.DefaultClient). Its Timeout should
	// be zero: the client bounds connecting and idling itself.
	HTTP *http.Client
	// Provider names the provider in every error ("deepseek", "anthropic").
	Provider string
	Options
}

// RetryableError marks a decoder error as worth retrying when nothing has
// been streamed yet (for example an in-stream "overloaded" error event).
// After is the provider's requested delay, 0 for the default backoff.
type RetryableError struct {
	Err   *llm.Error
	After time.Duration
}

func (e *RetryableError) Error() string { return e.Err.Error() }
func (e *RetryableError) Unwrap() error { return e.Err }

// Retryable wraps err for [Decoder.Event].
func Retryable(err *llm.Error, after time.Duration) error {
	return &RetryableError{Err: err, After: after}
}

// Do sends the request newReq builds (once per attempt, with the attempt's
// context) and feeds the event stream to dec until it reports done. It
// returns nil on success, the decoder's own error unchanged when that error
// is not an [*llm.Error] (so a decoder can stop early with a sentinel), and
// an [*llm.Error] naming the provider otherwise.
func (c *Client) Do(ctx context.Context, newReq func(ctx context.Context) (*http.Request, error), dec Decoder) error {
	retries := c.maxRetries()
	for attempt := 0; ; attempt++ {
		dec.Reset()
		err := c.attempt(ctx, newReq, dec)
		if err == nil {
			return nil
		}
		var re *RetryableError
		if !errors.As(err, &re) {
			return err
		}
		if attempt >= retries || dec.Emitted() || ctx.Err() != nil {
			return c.finalError(re, attempt+1)
		}
		wait := re.After
		if wait > c.maxRetryAfter() {
			e := *re.Err
			e.Message += fmt.Sprintf(" (the provider asked to wait %s before retrying, more than the %s dsh waits)",
				waitText(wait), c.maxRetryAfter())
			return c.finalError(&RetryableError{Err: &e}, attempt+1)
		}
		if wait <= 0 {
			wait = c.Backoff(attempt)
		}
		if err := c.sleep(ctx, wait); err != nil {
			return c.ctxError(ctx, err)
		}
	}
}

// waitText is a Retry-After delay for people: whole seconds (or
// milliseconds under a second), and no number at all for a delay too large
// to mean anything.
func waitText(d time.Duration) string {
	switch {
	case d >= 100*365*24*time.Hour:
		return "longer than a century"
	case d >= time.Second:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}

func (c *Client) maxRetryAfter() time.Duration {
	if c.MaxRetryAfter <= 0 {
		return DefaultMaxRetryAfter
	}
	return c.MaxRetryAfter
}

func (c *Client) finalError(re *RetryableError, attempts int) error {
	if attempts <= 1 {
		return re.Err
	}
	e := *re.Err
	e.Message = fmt.Sprintf("%s (gave up after %d attempts)", e.Message, attempts)
	return &e
}

// errorf returns an llm.Error whose message starts with the provider name.
func (c *Client) errorf(code string, status int, cause error, format string, args ...any) *llm.Error {
	return &llm.Error{Name: "LlmError", Code: code, Status: status, Cause: cause,
		Message: c.Provider + ": " + fmt.Sprintf(format, args...)}
}

// Errorf is the error constructor decoders use: code, provider-prefixed
// message.
func (c *Client) Errorf(code string, format string, args ...any) *llm.Error {
	return c.errorf(code, 0, nil, format, args...)
}

func (c *Client) ctxError(ctx context.Context, err error) *llm.Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return c.errorf(llm.CodeTimeout, 0, ctx.Err(), "request deadline exceeded")
	}
	cause := ctx.Err()
	if cause == nil {
		cause = err
	}
	return c.errorf(llm.CodeAborted, 0, cause, "request cancelled")
}

// watchdog cancels an attempt when a timer fires and remembers why.
type watchdog struct {
	timer  *time.Timer
	cancel context.CancelFunc
	fired  atomic.Bool
}

func (w *watchdog) arm(d time.Duration) {
	if d <= 0 {
		return
	}
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.fire)
		return
	}
	w.timer.Reset(d)
}

func (w *watchdog) disarm() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

func (w *watchdog) fire() {
	w.fired.Store(true)
	w.cancel()
}

// idleReader arms the watchdog around every read of the body, so only time
// spent waiting on the provider counts, not time the consumer spends.
type idleReader struct {
	rc   io.ReadCloser
	w    *watchdog
	idle time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	r.w.arm(r.idle)
	n, err := r.rc.Read(p)
	r.w.disarm()
	return n, err
}

func (c *Client) attempt(parent context.Context, newReq func(context.Context) (*http.Request, error), dec Decoder) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	wd := &watchdog{cancel: cancel}
	defer wd.disarm()

	req, err := newReq(ctx)
	if err != nil {
		return c.errorf(llm.CodeBadRequest, 0, err, "building the request: %v", err)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	wd.arm(c.connectTimeout())
	resp, err := hc.Do(req)
	wd.disarm()
	if err != nil {
		switch {
		case parent.Err() != nil:
			return c.ctxError(parent, err)
		case wd.fired.Load():
			return Retryable(c.errorf(llm.CodeTimeout, 0, err, "no response from %s within %v", hostOf(req), c.connectTimeout()), 0)
		}
		return c.transportError(req, err, false)
	}
	defer resp.Body.Close()

	body := &idleReader{rc: resp.Body, w: wd, idle: c.idleTimeout()}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		raw, rerr := io.ReadAll(io.LimitReader(decodeBody(resp, body), 64<<10))
		if rerr != nil && len(raw) == 0 {
			if parent.Err() != nil {
				return c.ctxError(parent, rerr)
			}
		}
		return c.statusError(resp, raw)
	}

	rd, err := c.open(resp, body)
	if err != nil {
		return c.readError(parent, wd, err)
	}
	sr := NewReaderSize(rd, c.MaxEventSize)
	var ev Event // one value for the whole stream: &ev escapes
	for {
		var err error
		ev, err = sr.Next()
		if err != nil {
			if en, ok := dec.(Ender); ok && parent.Err() == nil && !errors.Is(err, ErrTooLong) {
				if complete, err := en.EndOfStream(); err != nil || complete {
					return err
				}
			}
			if err == io.EOF {
				return Retryable(c.errorf(llm.CodeStreamClosed, 0, nil,
					"stream ended before the end-of-stream marker"), 0)
			}
			return c.readError(parent, wd, err)
		}
		done, err := dec.Event(&ev)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
}

// open decompresses and sniffs a 2xx body, rejecting what is clearly not
// an event stream (an HTML page, a JSON document).
func (c *Client) open(resp *http.Response, body io.Reader) (io.Reader, error) {
	var r io.Reader
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		r = body
	case "gzip", "x-gzip":
		if resp.Uncompressed {
			r = body
			break
		}
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, &protoError{fmt.Sprintf("reading the gzip body: %v", err)}
		}
		r = zr
	case "deflate":
		zr, err := zlib.NewReader(body)
		if err != nil {
			// Some servers send raw deflate despite the name.
			return nil, &protoError{fmt.Sprintf("reading the deflate body: %v", err)}
		}
		r = zr
	default:
		return nil, &protoError{fmt.Sprintf("unsupported Content-Encoding %q", enc)}
	}

	// Sniff the first bytes without waiting for more than the server sent:
	// an event stream may start with one short comment and then go quiet.
	head := make([]byte, 0, 512)
	var first []byte
	for len(first) == 0 && len(head) < cap(head) {
		n, err := r.Read(head[len(head):cap(head)])
		head = head[:len(head)+n]
		first = bytes.TrimLeft(head, " \t\r\n\xef\xbb\xbf")
		if err != nil {
			if err == io.EOF {
				break
			}
			return nil, err
		}
	}
	rest := io.MultiReader(bytes.NewReader(head), r)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case mt == "text/html" || (len(first) > 0 && first[0] == '<'):
		return nil, &protoError{fmt.Sprintf("HTTP %d with %s instead of an event stream: %q",
			resp.StatusCode, orUnknown(resp.Header.Get("Content-Type")), snippet(first))}
	case mt == "application/json" || (len(first) > 0 && (first[0] == '{' || first[0] == '[')):
		// A JSON document where a stream was expected: usually an error
		// object from a gateway that answers errors with 200.
		raw, _ := io.ReadAll(io.LimitReader(rest, 64<<10))
		if pe := parseErrorBody(raw); pe.message != "" {
			return nil, &statusErr{resp: resp, raw: raw}
		}
		return nil, &protoError{fmt.Sprintf("HTTP %d with a JSON document instead of an event stream: %q",
			resp.StatusCode, snippet(raw))}
	}
	return rest, nil
}

func decodeBody(resp *http.Response, body io.Reader) io.Reader {
	if resp.Uncompressed {
		return body
	}
	switch strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))) {
	case "gzip", "x-gzip":
		if zr, err := gzip.NewReader(body); err == nil {
			return zr
		}
	case "deflate":
		return flate.NewReader(body)
	}
	return body
}

type protoError struct{ msg string }

func (e *protoError) Error() string { return e.msg }

type statusErr struct {
	resp *http.Response
	raw  []byte
}

func (e *statusErr) Error() string { return "error document" }

func (c *Client) readError(parent context.Context, wd *watchdog, err error) error {
	var pe *protoError
	var se *statusErr
	switch {
	case errors.As(err, &pe):
		return c.errorf(llm.CodeProtocol, 0, nil, "%s", pe.msg)
	case errors.As(err, &se):
		return c.statusError(se.resp, se.raw)
	case errors.Is(err, ErrTooLong):
		return c.errorf(llm.CodeProtocol, 0, err, "malformed event stream: %v", err)
	case parent.Err() != nil:
		return c.ctxError(parent, err)
	case wd.fired.Load():
		return Retryable(c.errorf(llm.CodeTimeout, 0, err, "stream stalled: no data for %v", c.idleTimeout()), 0)
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader), errors.Is(err, zlib.ErrChecksum),
		errors.Is(err, zlib.ErrHeader), errors.Is(err, zlib.ErrDictionary):
		return c.errorf(llm.CodeProtocol, 0, err, "corrupt compressed body: %v", err)
	}
	var ce flate.CorruptInputError
	if errors.As(err, &ce) {
		return c.errorf(llm.CodeProtocol, 0, err, "corrupt compressed body: %v", err)
	}
	return c.transportError(nil, err, true)
}

func (c *Client) transportError(req *http.Request, err error, midStream bool) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return Retryable(c.errorf(llm.CodeTimeout, 0, err, "network timeout: %v", err), 0)
	}
	if midStream || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED) {
		return Retryable(c.errorf(llm.CodeStreamClosed, 0, err, "connection lost: %v", rootCause(err)), 0)
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	if errors.As(err, &dnsErr) || (errors.As(err, &opErr) && opErr.Op == "dial") {
		return Retryable(c.errorf(llm.CodeServer, 0, err, "cannot reach %s: %v", hostOf(req), rootCause(err)), 0)
	}
	return Retryable(c.errorf(llm.CodeServer, 0, err, "request failed: %v", rootCause(err)), 0)
}

func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		// Keep *net.OpError's readable form ("read tcp ...: connection reset").
		if _, ok := err.(*net.OpError); ok {
			return err
		}
		err = u
	}
}

func hostOf(req *http.Request) string {
	if req == nil || req.URL == nil {
		return "the provider"
	}
	return req.URL.Host
}

// statusError maps a non-2xx response (or a 200 error document).
func (c *Client) statusError(resp *http.Response, raw []byte) error {
	status := resp.StatusCode
	pe := parseErrorBody(raw)
	code := classify(status, pe)
	var b strings.Builder
	b.WriteString(describe(code))
	b.WriteString(" (HTTP ")
	b.WriteString(strconv.Itoa(status))
	if pe.kind != "" {
		b.WriteString(", ")
		b.WriteString(pe.kind)
	}
	b.WriteString(")")
	msg := pe.message
	if msg == "" {
		msg = strings.TrimSpace(string(snippet(raw)))
	}
	if msg != "" {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	if code == llm.CodeAuth && status == http.StatusUnauthorized {
		b.WriteString(" — check the API key")
	}
	e := c.errorf(code, status, nil, "%s", b.String())
	retry := false
	switch {
	case status == http.StatusTooManyRequests, status == http.StatusRequestTimeout, status == 409, status >= 500:
		retry = status != http.StatusNotImplemented
	case pe.kind == "overloaded_error" || pe.kind == "rate_limit_error" || pe.kind == "api_error":
		retry = true // a 200 error document from a gateway
	}
	if v := resp.Header.Get("X-Should-Retry"); v != "" {
		retry = v == "true"
	}
	if !retry {
		return e
	}
	return Retryable(e, c.retryAfter(resp.Header))
}

// retryAfter reads retry-after-ms (milliseconds) or Retry-After (seconds or
// an HTTP date). A delay too large for a time.Duration saturates rather
// than reading as absent, so [Options.MaxRetryAfter] ends the call.
func (c *Client) retryAfter(h http.Header) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); (err == nil || errors.Is(err, strconv.ErrRange)) && ms > 0 {
			return saturate(ms, time.Millisecond)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if s > 0 {
			return saturate(s, time.Second)
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(c.now()); d > 0 {
			return d
		}
	}
	return 0
}

// saturate returns n units as a Duration, math.MaxInt64 when that
// overflows (or n is +Inf).
func saturate(n float64, unit time.Duration) time.Duration {
	if d := n * float64(unit); d < float64(math.MaxInt64) {
		return time.Duration(d)
	}
	return math.MaxInt64
}

type errorBody struct {
	message string
	kind    string // provider error type, e.g. rate_limit_error
	code    string // provider error code, e.g. context_length_exceeded
}

// parseErrorBody understands the shapes providers use:
// {"error":{"message","type","code"}} (OpenAI, DeepSeek),
// {"type":"error","error":{"type","message"}} (Anthropic),
// {"error":"text"}, {"message":"text"}, {"detail":"text"}.
func parseErrorBody(raw []byte) errorBody {
	var doc struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
		Type    string          `json:"type"`
	}
	if json.Unmarshal(raw, &doc) != nil {
		return errorBody{}
	}
	var out errorBody
	if len(doc.Error) > 0 {
		var inner struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		var s string
		if json.Unmarshal(doc.Error, &s) == nil {
			out.message = s
		} else if json.Unmarshal(doc.Error, &inner) == nil {
			out.message, out.kind = inner.Message, inner.Type
			if json.Unmarshal(inner.Code, &s) == nil {
				out.code = s
			} else if len(inner.Code) > 0 && string(inner.Code) != "null" {
				out.code = string(inner.Code)
			}
		}
	}
	if out.message == "" {
		for _, f := range []json.RawMessage{doc.Message, doc.Detail} {
			var s string
			if len(f) > 0 && json.Unmarshal(f, &s) == nil && s != "" {
				out.message = s
				break
			}
		}
	}
	if out.kind == "" && doc.Type != "error" {
		out.kind = doc.Type
	}
	return out
}

// ClassifyError maps a provider error type/code and message (from an
// in-stream error event) to an llm error code. It is exported for decoders.
func ClassifyError(kind, code, message string) string {
	return classify(0, errorBody{message: message, kind: kind, code: code})
}

func classify(status int, pe errorBody) string {
	if tooLong(pe) || status == http.StatusRequestEntityTooLarge {
		return llm.CodeContextTooLong
	}
	switch {
	case status == http.StatusUnauthorized, status == http.StatusForbidden, status == http.StatusPaymentRequired:
		return llm.CodeAuth
	case status == http.StatusTooManyRequests:
		return llm.CodeRateLimit
	case status == http.StatusRequestTimeout, status == http.StatusGatewayTimeout:
		if status == http.StatusGatewayTimeout {
			return llm.CodeServer
		}
		return llm.CodeTimeout
	case status >= 500:
		return llm.CodeServer
	case status >= 400:
		return llm.CodeBadRequest
	}
	switch pe.kind {
	case "authentication_error", "permission_error":
		return llm.CodeAuth
	case "rate_limit_error":
		return llm.CodeRateLimit
	case "overloaded_error", "api_error", "server_error", "internal_error":
		return llm.CodeServer
	case "invalid_request_error", "not_found_error":
		return llm.CodeBadRequest
	case "timeout_error":
		return llm.CodeTimeout
	}
	return llm.CodeServer
}

func tooLong(pe errorBody) bool {
	if pe.code == "context_length_exceeded" || pe.kind == "request_too_large" {
		return true
	}
	m := strings.ToLower(pe.message)
	return strings.Contains(m, "context length") || strings.Contains(m, "context_length") ||
		strings.Contains(m, "prompt is too long") || strings.Contains(m, "context window") ||
		strings.Contains(m, "too many tokens") || strings.Contains(m, "maximum context")
}

func describe(code string) string {
	switch code {
	case llm.CodeAuth:
		return "authentication failed"
	case llm.CodeRateLimit:
		return "rate limited"
	case llm.CodeContextTooLong:
		return "request too long for the model's context window"
	case llm.CodeBadRequest:
		return "request rejected"
	case llm.CodeTimeout:
		return "request timed out"
	}
	return "server error"
}

func orUnknown(s string) string {
	if s == "" {
		return "no Content-Type"
	}
	return "Content-Type " + s
}

func snippet(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if len(b) > 200 {
		b = b[:200]
	}
	return b
}

// Endpoint checks a provider's API root (an absolute http(s) URL with a
// host and no fragment; pkg names the adapter in the error) and joins path
// to its path, keeping its query string, which concatenation would not:
// "https://x.example/openai/deployments/d?api-version=1" and
// "chat/completions" give
// "https://x.example/openai/deployments/d/chat/completions?api-version=1".
func Endpoint(pkg, provider, raw, path string) (string, error) {
	u, err := parseBase(pkg, provider, raw)
	if err != nil {
		return "", err
	}
	return u.JoinPath(path).String(), nil
}

func parseBase(pkg, provider, raw string) (*url.URL, error) {
	s := strings.TrimSpace(raw)
	bad := func(why string) error {
		return fmt.Errorf("%s: provider %q: base URL %q %s", pkg, provider, raw, why)
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, bad(fmt.Sprintf("is not a valid URL: %v", errors.Unwrap(err)))
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, bad("is not an http(s) URL")
	case u.Host == "" || u.Opaque != "":
		return nil, bad("has no host")
	case strings.Contains(s, "#"):
		return nil, bad("has a fragment (#…), which is never sent to the server")
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	return u, nil
}
