// Package conformance is the shared test suite every HTTP model adapter
// passes. [Run] replays recorded wire transcripts (testdata/<dialect>/, raw
// SSE bodies and error documents in each provider's exact format) from
// httptest servers and checks what the adapter streams: the assembled
// blocks, usage and finish reason, or the error code, HTTP status and
// message; how many requests it made and how long it waited between them;
// and, for every scenario, the stream contract of core.md §3.2 ([Validate]).
// Beyond the transcripts it checks cancellation, early break, the connect
// timeout and the provider prefix of model references.
//
// A scenario is <name>.scenario.json:
//
//	{"description": "...",
//	 "responses": [{"status": 429, "headers": {...}, "body": "file",
//	                "gzip": false, "abort": false, "stall": false, "reset": false}, ...],
//	 "want": {"blocks": [...], "usage": {...}, "finish": {...},
//	          "error": {"code": "RATE_LIMIT", "status": 429, "contains": ["..."]},
//	          "streamed": true, "requests": 2, "sleeps": ["2s"]}}
//
// responses are served in order, one per request. gzip compresses the body
// and sends Content-Encoding: gzip; abort drops the connection after the
// body; stall keeps it open and silent (the suite's idle timeout is then
// 300ms); reset closes it before answering.
package conformance

import (
	"bytes"
	"compress/gzip"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/sse"
)

//go:embed testdata
var transcripts embed.FS

// Transcripts returns the recorded transcripts of a dialect ("openai",
// "anthropic").
func Transcripts(dialect string) fs.FS {
	sub, err := fs.Sub(transcripts, path.Join("testdata", dialect))
	if err != nil {
		panic(err)
	}
	return sub
}

// Scenario is one transcript replay and its expected outcome.
type Scenario struct {
	Name        string     `json:"-"`
	Description string     `json:"description"`
	Responses   []Response `json:"responses"`
	Want        Want       `json:"want"`
}

// Response is one scripted HTTP response.
type Response struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	Gzip    bool              `json:"gzip"`
	Abort   bool              `json:"abort"`
	Stall   bool              `json:"stall"`
	Reset   bool              `json:"reset"`
}

// Want is the expected outcome of a scenario.
type Want struct {
	Blocks   []llm.Block       `json:"blocks"`
	Usage    *llm.Usage        `json:"usage"`
	Finish   *llm.FinishReason `json:"finish"`
	Error    *WantError        `json:"error"`
	Streamed bool              `json:"streamed"`
	Requests int               `json:"requests"`
	Sleeps   []string          `json:"sleeps"`
}

// WantError describes the expected failure.
type WantError struct {
	Code     string   `json:"code"`
	Status   int      `json:"status"`
	Contains []string `json:"contains"`
}

// Options are what the suite hands the factory: an HTTP client that does
// not ask for compression (so explicit gzip bodies reach the adapter) and
// fast, deterministic reliability settings.
type Options struct {
	HTTPClient *http.Client
	Transport  sse.Options
}

// Factory builds the adapter under test.
type Factory struct {
	// Dialect selects the transcripts: "openai" or "anthropic".
	Dialect string
	// Provider is the adapter's provider name: the model-reference prefix
	// and the name every error must carry.
	Provider string
	// New returns an adapter talking to baseURL with opts.
	New func(t testing.TB, baseURL string, opts Options) llm.Adapter
}

// Suite settings: backoff base 1s with rand 0.5 gives waits of 750ms,
// 1.5s, 3s (recorded, not slept). Timeouts are generous so a loaded machine
// cannot trip them; scenarios that test a timeout shorten it.
const (
	suiteIdle    = 10 * time.Second
	stallIdle    = 300 * time.Millisecond
	suiteConnect = 10 * time.Second
	suiteRetries = 3
	callDeadline = 30 * time.Second
)

// LoadScenarios reads every <name>.scenario.json of a transcript set.
func LoadScenarios(fsys fs.FS) ([]Scenario, error) {
	names, err := fs.Glob(fsys, "*.scenario.json")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []Scenario
	for _, n := range names {
		raw, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		var sc Scenario
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sc); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		sc.Name = strings.TrimSuffix(n, ".scenario.json")
		out = append(out, sc)
	}
	return out, nil
}

type recorder struct {
	mu     sync.Mutex
	sleeps []time.Duration
}

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.sleeps = append(r.sleeps, d)
	r.mu.Unlock()
	return ctx.Err()
}

func (r *recorder) got() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sleeps)
}

func suiteOptions(rec *recorder) (Options, *http.Transport) {
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4}
	return Options{
		HTTPClient: &http.Client{Transport: tr},
		Transport: sse.Options{
			ConnectTimeout: suiteConnect,
			IdleTimeout:    suiteIdle,
			MaxRetries:     suiteRetries,
			BaseDelay:      time.Second,
			MaxDelay:       8 * time.Second,
			Sleep:          rec.sleep,
			Rand:           func() float64 { return 0.5 },
		},
	}, tr
}

// server replays responses in order and records request bodies.
type server struct {
	t        testing.TB
	fsys     fs.FS
	script   []Response
	n        atomic.Int32
	mu       sync.Mutex
	bodies   [][]byte
	headers  []http.Header
	gone     chan struct{} // closed when a stalled handler sees the client leave
	goneOnce sync.Once
	*httptest.Server
}

func newServer(t testing.TB, fsys fs.FS, script []Response) *server {
	s := &server{t: t, fsys: fsys, script: script, gone: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

func (s *server) requests() int { return int(s.n.Load()) }

func (s *server) handle(w http.ResponseWriter, r *http.Request) {
	i := int(s.n.Add(1)) - 1
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.headers = append(s.headers, r.Header.Clone())
	s.mu.Unlock()
	if i >= len(s.script) {
		s.t.Errorf("unexpected request #%d (script has %d responses)", i+1, len(s.script))
		http.Error(w, `{"error":{"message":"unexpected request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	resp := s.script[i]
	if resp.Reset {
		hj, ok := w.(http.Hijacker)
		if !ok {
			s.t.Errorf("cannot hijack")
			return
		}
		conn, _, err := hj.Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	var payload []byte
	if resp.Body != "" {
		var err error
		payload, err = fs.ReadFile(s.fsys, resp.Body)
		if err != nil {
			s.t.Errorf("reading %s: %v", resp.Body, err)
		}
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	if resp.Gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(payload)
		zw.Close()
		payload = buf.Bytes()
		w.Header().Set("Content-Encoding", "gzip")
	}
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	fl, _ := w.(http.Flusher)
	if resp.Gzip || status != http.StatusOK {
		w.Write(payload)
	} else {
		// One write per event, flushed, like a live stream.
		for len(payload) > 0 {
			n := bytes.Index(payload, []byte("\n\n"))
			if n < 0 {
				n = len(payload)
			} else {
				n += 2
			}
			w.Write(payload[:n])
			if fl != nil {
				fl.Flush()
			}
			payload = payload[n:]
		}
	}
	if fl != nil {
		fl.Flush()
	}
	switch {
	case resp.Abort:
		panic(http.ErrAbortHandler) // drop the connection without ending the body
	case resp.Stall:
		select {
		case <-r.Context().Done():
			s.goneOnce.Do(func() { close(s.gone) })
		case <-time.After(callDeadline):
		}
	}
}

// Result is what one call produced.
type Result struct {
	Chunks []llm.Chunk
	Err    error
}

// Collect runs one call and gathers its chunks and error.
func Collect(ctx context.Context, a llm.Adapter, req *llm.Request) Result {
	var res Result
	stream, err := a.Stream(ctx, req)
	if err != nil {
		res.Err = err
		return res
	}
	for c, err := range stream {
		if err != nil {
			res.Err = err
			break
		}
		res.Chunks = append(res.Chunks, c)
	}
	return res
}

func baseRequest(provider string) *llm.Request {
	return &llm.Request{
		Model:     provider + "/test-model",
		System:    "You are terse.",
		Messages:  []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.Text("Hi")}}},
		MaxTokens: 1024,
	}
}

// Run runs the suite for one adapter.
func Run(t *testing.T, f Factory) {
	fsys := Transcripts(f.Dialect)
	scenarios, err := LoadScenarios(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(scenarios) == 0 {
		t.Fatalf("no transcripts for dialect %q", f.Dialect)
	}
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) { runScenario(t, f, fsys, sc) })
	}
	t.Run("cancel", func(t *testing.T) { testCancel(t, f, fsys) })
	t.Run("break", func(t *testing.T) { testBreak(t, f, fsys) })
	t.Run("connect-timeout", func(t *testing.T) { testConnectTimeout(t, f) })
	t.Run("model-prefix", func(t *testing.T) { testModelPrefix(t, f, fsys) })
}

func runScenario(t *testing.T, f Factory, fsys fs.FS, sc Scenario) {
	rec := &recorder{}
	opts, tr := suiteOptions(rec)
	defer tr.CloseIdleConnections()
	for _, r := range sc.Responses {
		if r.Stall {
			opts.Transport.IdleTimeout = stallIdle
		}
	}
	srv := newServer(t, fsys, sc.Responses)
	a := f.New(t, srv.URL, opts)
	ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
	defer cancel()
	res := Collect(ctx, a, baseRequest(f.Provider))
	if err := Validate(res.Chunks, res.Err); err != nil {
		t.Errorf("stream contract: %v", err)
	}
	w := sc.Want
	if w.Error != nil {
		checkError(t, f.Provider, res, *w.Error)
		if got := len(res.Chunks) > 0; got != w.Streamed {
			t.Errorf("streamed before the error = %v, want %v (%d chunks)", got, w.Streamed, len(res.Chunks))
		}
	} else {
		if res.Err != nil {
			t.Fatalf("unexpected error: %v", res.Err)
		}
		checkOutcome(t, res.Chunks, w)
	}
	wantReq := w.Requests
	if wantReq == 0 {
		wantReq = 1
	}
	if got := srv.requests(); got != wantReq {
		t.Errorf("requests = %d, want %d", got, wantReq)
	}
	var sleeps []string
	for _, d := range rec.got() {
		sleeps = append(sleeps, d.String())
	}
	if !slices.Equal(sleeps, w.Sleeps) {
		t.Errorf("waits between attempts = %v, want %v", sleeps, w.Sleeps)
	}
	// Every attempt sent the same request.
	srv.mu.Lock()
	bodies := srv.bodies
	srv.mu.Unlock()
	for i := 1; i < len(bodies); i++ {
		if !bytes.Equal(bodies[i], bodies[0]) {
			t.Errorf("attempt %d sent a different body", i+1)
		}
	}
}

func checkError(t *testing.T, provider string, res Result, w WantError) {
	t.Helper()
	if res.Err == nil {
		t.Fatalf("no error, want %s", w.Code)
	}
	e, ok := llm.AsError(res.Err)
	if !ok {
		t.Fatalf("error %T %v is not an *llm.Error", res.Err, res.Err)
	}
	if e.Code != w.Code {
		t.Errorf("code = %s, want %s (%v)", e.Code, w.Code, e)
	}
	if e.Name != "LlmError" {
		t.Errorf("name = %q, want LlmError", e.Name)
	}
	if e.Status != w.Status {
		t.Errorf("status = %d, want %d", e.Status, w.Status)
	}
	if !strings.HasPrefix(e.Message, provider+": ") {
		t.Errorf("message %q does not name the provider %q", e.Message, provider)
	}
	for _, s := range w.Contains {
		if !strings.Contains(e.Message, s) {
			t.Errorf("message %q does not contain %q", e.Message, s)
		}
	}
}

func checkOutcome(t *testing.T, chunks []llm.Chunk, w Want) {
	t.Helper()
	var asm llm.Assembler
	for _, c := range chunks {
		if _, _, err := asm.Push(c); err != nil {
			t.Fatalf("assembler: %v", err)
		}
	}
	blocks, err := asm.Blocks()
	if err != nil {
		t.Fatal(err)
	}
	gotJSON, _ := json.Marshal(blocks)
	wantJSON, _ := json.Marshal(w.Blocks)
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("blocks:\n got %s\nwant %s", gotJSON, wantJSON)
	}
	switch {
	case w.Usage == nil && asm.Usage() != nil:
		t.Errorf("usage = %+v, want none", *asm.Usage())
	case w.Usage != nil && asm.Usage() == nil:
		t.Errorf("no usage, want %+v", *w.Usage)
	case w.Usage != nil && *asm.Usage() != *w.Usage:
		t.Errorf("usage = %+v, want %+v", *asm.Usage(), *w.Usage)
	}
	if !asm.Finished() {
		t.Errorf("no finish chunk")
	}
	if w.Finish != nil && asm.Finish() != *w.Finish {
		t.Errorf("finish = %+v, want %+v", asm.Finish(), *w.Finish)
	}
}

// stallScript serves the dialect's stall transcript and holds the stream.
func stallScript() []Response {
	return []Response{{Status: 200, Headers: map[string]string{"Content-Type": "text/event-stream"}, Body: "stall.sse", Stall: true}}
}

func testCancel(t *testing.T, f Factory, fsys fs.FS) {
	rec := &recorder{}
	opts, tr := suiteOptions(rec)
	defer tr.CloseIdleConnections()
	opts.Transport.IdleTimeout = time.Minute // only cancellation may end it
	srv := newServer(t, fsys, stallScript())
	a := f.New(t, srv.URL, opts)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := a.Stream(ctx, baseRequest(f.Provider))
	if err != nil {
		t.Fatal(err)
	}
	var chunks []llm.Chunk
	var serr error
	start := time.Time{}
	for c, err := range stream {
		if err != nil {
			serr = err
			break
		}
		chunks = append(chunks, c)
		if start.IsZero() {
			start = time.Now()
			cancel()
		}
	}
	if start.IsZero() {
		t.Fatalf("no chunk before cancellation (err %v)", serr)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("stream ended %v after cancel", d)
	}
	if code := llm.CodeOf(serr); code != llm.CodeAborted {
		t.Errorf("error after cancel = %v (code %q), want %s", serr, code, llm.CodeAborted)
	}
	if !errors.Is(serr, context.Canceled) {
		t.Errorf("error after cancel does not wrap context.Canceled: %v", serr)
	}
	if err := Validate(chunks, serr); err != nil {
		t.Errorf("stream contract: %v", err)
	}
	waitGone(t, srv)
}

func testBreak(t *testing.T, f Factory, fsys fs.FS) {
	rec := &recorder{}
	opts, tr := suiteOptions(rec)
	defer tr.CloseIdleConnections()
	opts.Transport.IdleTimeout = time.Minute
	srv := newServer(t, fsys, stallScript())
	a := f.New(t, srv.URL, opts)
	stream, err := a.Stream(context.Background(), baseRequest(f.Provider))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range stream {
		if err != nil {
			t.Fatalf("error before break: %v", err)
		}
		n++
		break
	}
	if n != 1 {
		t.Fatalf("got %d chunks", n)
	}
	waitGone(t, srv)
}

func waitGone(t *testing.T, srv *server) {
	t.Helper()
	select {
	case <-srv.gone:
	case <-time.After(5 * time.Second):
		t.Errorf("the server did not see the connection close")
	}
}

func testConnectTimeout(t *testing.T, f Factory) {
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hs.Close()
	defer close(release)
	rec := &recorder{}
	opts, tr := suiteOptions(rec)
	defer tr.CloseIdleConnections()
	opts.Transport.ConnectTimeout = 150 * time.Millisecond
	opts.Transport.MaxRetries = 1
	a := f.New(t, hs.URL, opts)
	start := time.Now()
	res := Collect(context.Background(), a, baseRequest(f.Provider))
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	if code := llm.CodeOf(res.Err); code != llm.CodeTimeout {
		t.Fatalf("err = %v (code %q), want %s", res.Err, code, llm.CodeTimeout)
	}
	if got := rec.got(); len(got) != 1 {
		t.Errorf("waits = %v, want one retry", got)
	}
	if err := Validate(res.Chunks, res.Err); err != nil {
		t.Error(err)
	}
}

func testModelPrefix(t *testing.T, f Factory, fsys fs.FS) {
	rec := &recorder{}
	opts, tr := suiteOptions(rec)
	defer tr.CloseIdleConnections()
	srv := newServer(t, fsys, []Response{{Status: 200, Headers: map[string]string{"Content-Type": "text/event-stream"}, Body: "text.sse"}})
	a := f.New(t, srv.URL, opts)
	res := Collect(context.Background(), a, baseRequest(f.Provider))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	var body struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if err := json.Unmarshal(srv.bodies[0], &body); err != nil {
		t.Fatalf("request body: %v", err)
	}
	if body.Model != "test-model" {
		t.Errorf("wire model = %q, want the reference without its provider prefix", body.Model)
	}
	if !body.Stream {
		t.Errorf("request does not ask for a stream")
	}
	if got := srv.headers[0].Get("Accept"); got != "text/event-stream" {
		t.Errorf("Accept = %q", got)
	}
}
