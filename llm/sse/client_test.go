package sse

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dshq/dsh/llm"
)

// lineDecoder collects event data and treats "END" as the end marker.
type lineDecoder struct {
	got     []string
	emitted bool
	emitOn  bool // mark emitted on the first event
}

func (d *lineDecoder) Reset()        { d.got = nil; d.emitted = false }
func (d *lineDecoder) Emitted() bool { return d.emitted }
func (d *lineDecoder) Event(ev *Event) (bool, error) {
	if string(ev.Data) == "END" {
		return true, nil
	}
	d.got = append(d.got, string(ev.Data))
	if d.emitOn {
		d.emitted = true
	}
	return false, nil
}

type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func testClient(url string, s *sleeps) (*Client, func(context.Context) (*http.Request, error)) {
	c := &Client{Provider: "acme", Options: Options{
		IdleTimeout: 5 * time.Second, BaseDelay: 100 * time.Millisecond,
		Sleep: s.sleep, Rand: func() float64 { return 0 },
		Now: func() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) },
	}}
	return c, func(ctx context.Context) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("{}"))
	}
}

type step struct {
	status  int
	headers map[string]string
	body    string
}

func scripted(t *testing.T, steps ...step) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i >= len(steps) {
			i = len(steps) - 1
		}
		s := steps[i]
		for k, v := range s.headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(s.status)
		w.Write([]byte(s.body))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

const okBody = "data: a\n\ndata: b\n\ndata: END\n\n"

func TestRetryAfterForms(t *testing.T) {
	for name, tc := range map[string]struct {
		headers map[string]string
		want    time.Duration
	}{
		"seconds":     {map[string]string{"Retry-After": "3"}, 3 * time.Second},
		"fraction":    {map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		"ms wins":     {map[string]string{"Retry-After-Ms": "1200", "Retry-After": "9"}, 1200 * time.Millisecond},
		"http date":   {map[string]string{"Retry-After": "Wed, 01 Jan 2025 00:00:07 GMT"}, 7 * time.Second},
		"past date":   {map[string]string{"Retry-After": "Tue, 31 Dec 2024 00:00:00 GMT"}, 50 * time.Millisecond},
		"garbage":     {map[string]string{"Retry-After": "soon"}, 50 * time.Millisecond},
		"no header":   {nil, 50 * time.Millisecond},
		"negative ms": {map[string]string{"Retry-After-Ms": "-5"}, 50 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			srv, n := scripted(t, step{429, tc.headers, `{"error":{"message":"slow down","type":"rate_limit_error"}}`}, step{200, nil, okBody})
			s := &sleeps{}
			c, nr := testClient(srv.URL, s)
			d := &lineDecoder{}
			if err := c.Do(context.Background(), nr, d); err != nil {
				t.Fatal(err)
			}
			if n.Load() != 2 || len(s.d) != 1 || s.d[0] != tc.want {
				t.Errorf("requests %d, sleeps %v, want [%v]", n.Load(), s.d, tc.want)
			}
			if strings.Join(d.got, ",") != "a,b" {
				t.Errorf("events %v", d.got)
			}
		})
	}
}

func TestRetryPolicy(t *testing.T) {
	t.Run("retry-after too long", func(t *testing.T) {
		srv, n := scripted(t, step{429, map[string]string{"Retry-After": "3600"}, `{"error":{"message":"quota"}}`})
		s := &sleeps{}
		c, nr := testClient(srv.URL, s)
		err := c.Do(context.Background(), nr, &lineDecoder{})
		e, ok := llm.AsError(err)
		if !ok || e.Code != llm.CodeRateLimit || e.Status != 429 || n.Load() != 1 || len(s.d) != 0 {
			t.Errorf("err %v, requests %d, sleeps %v", err, n.Load(), s.d)
		}
		// The message says how long the provider asked to wait.
		if !strings.Contains(err.Error(), "the provider asked to wait 1h0m0s before retrying, more than the 2m0s dsh waits") {
			t.Errorf("message %q does not say how long", err)
		}
	})
	// A wait too long to represent must not read as no Retry-After at all
	// (an immediate retry): it is longer than MaxRetryAfter, so the call
	// ends after one request.
	for name, h := range map[string]map[string]string{
		"huge seconds":     {"Retry-After": "1000000"},
		"huge exponent":    {"Retry-After": "1e6"},
		"overflow seconds": {"Retry-After": "99999999999999999999"},
		"out of range":     {"Retry-After": "1e400"},
		"huge ms":          {"Retry-After-Ms": "1000000000", "Retry-After": "1"},
		"overflow ms":      {"Retry-After-Ms": "1e300"},
	} {
		t.Run("retry-after "+name, func(t *testing.T) {
			srv, n := scripted(t, step{429, h, `{"error":{"message":"quota","type":"rate_limit_error"}}`})
			s := &sleeps{}
			c, nr := testClient(srv.URL, s)
			err := c.Do(context.Background(), nr, &lineDecoder{})
			e, ok := llm.AsError(err)
			if !ok || e.Code != llm.CodeRateLimit || e.Status != 429 || n.Load() != 1 || len(s.d) != 0 {
				t.Errorf("err %v, requests %d, sleeps %v", err, n.Load(), s.d)
			}
			if !strings.Contains(err.Error(), "the provider asked to wait ") {
				t.Errorf("message %q does not say how long", err)
			}
		})
	}
	t.Run("x-should-retry false", func(t *testing.T) {
		srv, n := scripted(t, step{503, map[string]string{"X-Should-Retry": "false"}, "busy"})
		s := &sleeps{}
		c, nr := testClient(srv.URL, s)
		err := c.Do(context.Background(), nr, &lineDecoder{})
		if llm.CodeOf(err) != llm.CodeServer || n.Load() != 1 {
			t.Errorf("err %v, requests %d", err, n.Load())
		}
		if !strings.Contains(err.Error(), "busy") {
			t.Errorf("message %q lacks the body text", err)
		}
	})
	t.Run("no retries", func(t *testing.T) {
		srv, n := scripted(t, step{500, nil, ""})
		s := &sleeps{}
		c, nr := testClient(srv.URL, s)
		c.MaxRetries = -1
		if err := c.Do(context.Background(), nr, &lineDecoder{}); llm.CodeOf(err) != llm.CodeServer || n.Load() != 1 {
			t.Errorf("err %v, requests %d", err, n.Load())
		}
	})
	t.Run("400 not retried", func(t *testing.T) {
		srv, n := scripted(t, step{400, nil, `{"error":{"message":"bad field","type":"invalid_request_error"}}`})
		c, nr := testClient(srv.URL, &sleeps{})
		err := c.Do(context.Background(), nr, &lineDecoder{})
		if llm.CodeOf(err) != llm.CodeBadRequest || n.Load() != 1 || !strings.Contains(err.Error(), "bad field") {
			t.Errorf("err %v, requests %d", err, n.Load())
		}
	})
	t.Run("eof after emitted is final", func(t *testing.T) {
		srv, n := scripted(t, step{200, nil, "data: a\n\n"})
		c, nr := testClient(srv.URL, &sleeps{})
		err := c.Do(context.Background(), nr, &lineDecoder{emitOn: true})
		if llm.CodeOf(err) != llm.CodeStreamClosed || n.Load() != 1 {
			t.Errorf("err %v, requests %d", err, n.Load())
		}
	})
	t.Run("eof before emitted is retried", func(t *testing.T) {
		srv, n := scripted(t, step{200, nil, ": nothing yet\n\n"}, step{200, nil, okBody})
		c, nr := testClient(srv.URL, &sleeps{})
		if err := c.Do(context.Background(), nr, &lineDecoder{emitOn: true}); err != nil || n.Load() != 2 {
			t.Errorf("err %v, requests %d", err, n.Load())
		}
	})
	t.Run("decoder error passes through", func(t *testing.T) {
		srv, _ := scripted(t, step{200, nil, okBody})
		c, nr := testClient(srv.URL, &sleeps{})
		boom := errors.New("boom")
		err := c.Do(context.Background(), nr, decoderFunc(func(*Event) (bool, error) { return false, boom }))
		if err != boom {
			t.Errorf("err %v", err)
		}
	})
}

type decoderFunc func(*Event) (bool, error)

func (f decoderFunc) Reset()                        {}
func (f decoderFunc) Emitted() bool                 { return true }
func (f decoderFunc) Event(ev *Event) (bool, error) { return f(ev) }

func TestEndpoint(t *testing.T) {
	for raw, want := range map[string]string{
		"https://api.deepseek.com":     "https://api.deepseek.com/chat/completions",
		" https://api.openai.com/v1/ ": "https://api.openai.com/v1/chat/completions",
		"https://r.openai.azure.com/openai/deployments/gpt4o?api-version=2024-10-21":  "https://r.openai.azure.com/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21",
		"https://r.openai.azure.com/openai/deployments/gpt4o/?api-version=2024-10-21": "https://r.openai.azure.com/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21",
		"http://127.0.0.1:8080/a%2Fb/?k=x%2Fy&z":                                      "http://127.0.0.1:8080/a%2Fb/chat/completions?k=x%2Fy&z",
	} {
		got, err := Endpoint("openai", "p", raw, "chat/completions")
		if err != nil || got != want {
			t.Errorf("Endpoint(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	if got, err := Endpoint("openai", "p", "https://x.example/v1/?api-version=1", "models"); err != nil || got != "https://x.example/v1/models?api-version=1" {
		t.Errorf("Endpoint of a root with a trailing slash and a query = %q, %v", got, err)
	}
	for raw, why := range map[string]string{
		"ftp://x":            "not an http(s) URL",
		"api.openai.com/v1":  "not an http(s) URL",
		"https://":           "no host",
		"https://x/v1#frag":  "fragment",
		"https://x/v1?a=1#":  "fragment",
		"https://x/v1\x7f%z": "not a valid URL",
	} {
		if _, err := Endpoint("openai", "p", raw, "chat/completions"); err == nil || !strings.Contains(err.Error(), why) || !strings.HasPrefix(err.Error(), `openai: provider "p": `) {
			t.Errorf("Endpoint(%q): err %v, want %q", raw, err, why)
		}
	}
}

func TestBackoff(t *testing.T) {
	o := Options{BaseDelay: time.Second, MaxDelay: 5 * time.Second, Rand: func() float64 { return 0.999 }}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i, w := range want {
		d := o.Backoff(i)
		if d < w/2 || d > w {
			t.Errorf("retry %d: %v not in [%v, %v]", i, d, w/2, w)
		}
	}
	o.Rand = func() float64 { return 7 } // out of range: treated as 0.5
	if d := o.Backoff(0); d != 750*time.Millisecond {
		t.Errorf("bad rand: %v", d)
	}
	var def Options
	if d := def.Backoff(0); d < DefaultBaseDelay/2 || d > DefaultBaseDelay {
		t.Errorf("default backoff %v", d)
	}
}

func TestCancellation(t *testing.T) {
	t.Run("during backoff", func(t *testing.T) {
		srv, _ := scripted(t, step{500, nil, ""})
		c, nr := testClient(srv.URL, &sleeps{})
		c.Sleep = nil // real timer
		c.BaseDelay = time.Hour
		c.MaxDelay = time.Hour
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		err := c.Do(ctx, nr, &lineDecoder{})
		if llm.CodeOf(err) != llm.CodeAborted || time.Since(start) > 2*time.Second || !errors.Is(err, context.Canceled) {
			t.Errorf("err %v after %v", err, time.Since(start))
		}
	})
	t.Run("deadline", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}))
		defer srv.Close()
		c, nr := testClient(srv.URL, &sleeps{})
		c.IdleTimeout = time.Minute
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		err := c.Do(ctx, nr, &lineDecoder{})
		if llm.CodeOf(err) != llm.CodeTimeout || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err %v", err)
		}
	})
}

func TestBodies(t *testing.T) {
	var zbuf bytes.Buffer
	zw := zlib.NewWriter(&zbuf)
	zw.Write([]byte(okBody))
	zw.Close()
	for name, tc := range map[string]struct {
		step step
		code string
		msg  string
	}{
		"json error with 200": {step{200, map[string]string{"Content-Type": "application/json"}, `{"error":{"message":"model overloaded","type":"overloaded_error"}}`}, llm.CodeServer, "model overloaded"},
		"json document":       {step{200, map[string]string{"Content-Type": "application/json"}, `{"id":"x","choices":[]}`}, llm.CodeProtocol, "JSON document"},
		"sniffed html":        {step{200, map[string]string{"Content-Type": "text/plain"}, "\n  <html>oops</html>"}, llm.CodeProtocol, "oops"},
		"unknown encoding":    {step{200, map[string]string{"Content-Encoding": "br"}, okBody}, llm.CodeProtocol, `"br"`},
		"bad gzip":            {step{200, map[string]string{"Content-Encoding": "gzip"}, "not gzip"}, llm.CodeProtocol, "gzip"},
		"deflate":             {step{200, map[string]string{"Content-Encoding": "deflate"}, zbuf.String()}, "", ""},
		"too long":            {step{200, nil, "data: " + strings.Repeat("x", 300) + "\n\n"}, llm.CodeProtocol, "size limit"},
		"string error":        {step{418, nil, `{"error":"teapot"}`}, llm.CodeBadRequest, "teapot"},
		"detail":              {step{422, nil, `{"detail":"missing field"}`}, llm.CodeBadRequest, "missing field"},
		"payment":             {step{402, nil, `{"error":{"message":"Insufficient Balance","type":"unknown_error"}}`}, llm.CodeAuth, "Insufficient Balance"},
		"too large":           {step{413, nil, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}`}, llm.CodeContextTooLong, "maximum size"},
	} {
		t.Run(name, func(t *testing.T) {
			srv, _ := scripted(t, tc.step)
			c, nr := testClient(srv.URL, &sleeps{})
			c.MaxRetries = -1
			c.MaxEventSize = 256
			hc := &http.Client{Transport: &http.Transport{DisableCompression: true}}
			defer hc.CloseIdleConnections()
			c.HTTP = hc
			d := &lineDecoder{}
			err := c.Do(context.Background(), nr, d)
			if tc.code == "" {
				if err != nil || strings.Join(d.got, ",") != "a,b" {
					t.Fatalf("err %v, events %v", err, d.got)
				}
				return
			}
			e, ok := llm.AsError(err)
			if !ok || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) || !strings.HasPrefix(e.Message, "acme: ") {
				t.Errorf("err = %v (%T), want %s containing %q", err, err, tc.code, tc.msg)
			}
		})
	}
}

func TestSniffDoesNotWait(t *testing.T) {
	// A short first event must reach the decoder although the server then
	// goes quiet: sniffing may not wait for a full buffer.
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("data: a\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.Write([]byte("data: END\n\n"))
	}))
	defer srv.Close()
	c, nr := testClient(srv.URL, &sleeps{})
	c.IdleTimeout = 5 * time.Second
	first := make(chan struct{})
	d := decoderFunc(func(ev *Event) (bool, error) {
		if string(ev.Data) == "a" {
			close(first)
			return false, nil
		}
		return string(ev.Data) == "END", nil
	})
	done := make(chan error, 1)
	go func() { done <- c.Do(context.Background(), nr, d) }()
	select {
	case <-first:
	case <-time.After(2 * time.Second):
		t.Fatal("first event not delivered while the server is quiet")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		kind, code, msg, want string
	}{
		{"overloaded_error", "", "Overloaded", llm.CodeServer},
		{"rate_limit_error", "", "", llm.CodeRateLimit},
		{"authentication_error", "", "", llm.CodeAuth},
		{"invalid_request_error", "", "prompt is too long: 300000 tokens", llm.CodeContextTooLong},
		{"invalid_request_error", "context_length_exceeded", "", llm.CodeContextTooLong},
		{"invalid_request_error", "", "bad", llm.CodeBadRequest},
		{"timeout_error", "", "", llm.CodeTimeout},
		{"", "", "", llm.CodeServer},
	} {
		if got := ClassifyError(tc.kind, tc.code, tc.msg); got != tc.want {
			t.Errorf("%+v: %s", tc, got)
		}
	}
}
