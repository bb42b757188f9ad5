package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// dsh's own OTLP/HTTP exporters: the otel project's otlptracehttp and
// otlpmetrichttp pull gRPC, the protobuf runtime, genproto and
// grpc-gateway into the binary (about 150 package initialisers and 1.4 MB
// of text run by every dsh start); see docs/rfc/implemented/architecture/2026-12-04-own-otlp-exporter.md.

// otlpConfig is one signal's export settings, read from the standard
// OTEL_EXPORTER_OTLP_* variables as the OTel specification defines them.
type otlpConfig struct {
	url      string
	headers  http.Header
	timeout  time.Duration
	gzip     bool
	attempts int
	backoff  time.Duration
}

// readOTLPConfig reads the settings for signal ("traces" or "metrics"):
// the per-signal variables win over the general ones; the per-signal
// endpoint is used as it is, the general one gets /v1/<signal> appended.
func readOTLPConfig(env func(string) string, signal string) (otlpConfig, error) {
	up := strings.ToUpper(signal)
	get := func(name string) string {
		if v := env("OTEL_EXPORTER_OTLP_" + up + "_" + name); v != "" {
			return v
		}
		return env("OTEL_EXPORTER_OTLP_" + name)
	}
	c := otlpConfig{headers: http.Header{}, timeout: 10 * time.Second, attempts: 5, backoff: 500 * time.Millisecond}
	if e := env("OTEL_EXPORTER_OTLP_" + up + "_ENDPOINT"); e != "" {
		c.url = e
	} else if e := env("OTEL_EXPORTER_OTLP_ENDPOINT"); e != "" {
		c.url = strings.TrimSuffix(e, "/") + "/v1/" + signal
	}
	if c.url == "" {
		c.url = "http://localhost:4318/v1/" + signal
	}
	if u, err := url.Parse(c.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("telemetry: the OTLP %s endpoint %q is not an http(s) URL", signal, c.url)
	}
	switch p := get("PROTOCOL"); p {
	case "", "http/protobuf":
	case "grpc":
		return c, fmt.Errorf("telemetry: OTLP protocol grpc (for %s) is unsupported: dsh exports over OTLP/HTTP; set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf and the collector's HTTP port (4318)", signal)
	default:
		return c, fmt.Errorf("telemetry: OTLP protocol %q (for %s) is unsupported: dsh speaks http/protobuf", p, signal)
	}
	if h := get("HEADERS"); h != "" {
		for _, pair := range strings.Split(h, ",") {
			k, v, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				// The value may be an API key: name only the position.
				return c, fmt.Errorf("telemetry: OTEL_EXPORTER_OTLP_HEADERS: an entry is not key=value")
			}
			dk, err1 := url.QueryUnescape(k)
			dv, err2 := url.QueryUnescape(strings.TrimSpace(v))
			if err1 != nil || err2 != nil {
				return c, fmt.Errorf("telemetry: OTEL_EXPORTER_OTLP_HEADERS: the entry for %q is not URL-encoded", k)
			}
			c.headers.Add(dk, dv)
		}
	}
	if t := get("TIMEOUT"); t != "" {
		ms, err := strconv.Atoi(t)
		if err != nil || ms < 0 {
			return c, fmt.Errorf("telemetry: OTLP timeout %q is not a number of milliseconds", t)
		}
		c.timeout = time.Duration(ms) * time.Millisecond
	}
	switch z := get("COMPRESSION"); z {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		return c, fmt.Errorf("telemetry: OTLP compression %q is unsupported (gzip or none)", z)
	}
	return c, nil
}

// otlpClient posts encoded requests, retrying what the OTLP/HTTP
// specification calls retryable (429, 502, 503, 504) with a bounded
// exponential backoff that honours Retry-After.
type otlpClient struct {
	cfg    otlpConfig
	signal string
	http   *http.Client
	sleep  func(context.Context, time.Duration) error
}

func newOTLPClient(cfg otlpConfig, signal string) *otlpClient {
	return &otlpClient{cfg: cfg, signal: signal, http: &http.Client{}, sleep: sleepCtx}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (c *otlpClient) post(ctx context.Context, body []byte) ([]byte, error) {
	if c.cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.timeout)
		defer cancel()
	}
	if c.cfg.gzip {
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		_, _ = w.Write(body)
		_ = w.Close()
		body = z.Bytes()
	}
	wait := c.cfg.backoff
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.url, bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("telemetry: OTLP %s: %w", c.signal, err)
		}
		for k, vs := range c.cfg.headers {
			req.Header[k] = vs
		}
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("User-Agent", "dsh-otlp")
		if c.cfg.gzip {
			req.Header.Set("Content-Encoding", "gzip")
		}
		resp, err := c.http.Do(req)
		if err != nil {
			// The URL is the user's endpoint; net/http's error names no header.
			return nil, fmt.Errorf("telemetry: OTLP %s export: %w", c.signal, err)
		}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			return raw, nil
		}
		retryable := resp.StatusCode == 429 || resp.StatusCode == 502 || resp.StatusCode == 503 || resp.StatusCode == 504
		if !retryable || attempt >= c.cfg.attempts {
			return nil, fmt.Errorf("telemetry: OTLP %s export: %s from %s", c.signal, resp.Status, c.cfg.url)
		}
		d := wait
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			if s, err := strconv.Atoi(ra); err == nil && s >= 0 {
				d = time.Duration(s) * time.Second
			} else if t, err := http.ParseTime(ra); err == nil {
				d = time.Until(t)
			}
		}
		d = min(max(d, 0), 30*time.Second)
		if err := c.sleep(ctx, d); err != nil {
			return nil, fmt.Errorf("telemetry: OTLP %s export: gave up waiting to retry: %w", c.signal, err)
		}
		wait *= 2
	}
}

// partialSuccess reads an Export*ServiceResponse{partial_success=1} whose
// partial success is {rejected=1, error_message=2} and logs a rejection.
func (c *otlpClient) partialSuccess(raw []byte) {
	ps, ok := pbField(raw, 1)
	if !ok {
		return
	}
	rejected, _ := pbVarint(ps, 1)
	msg, _ := pbField(ps, 2)
	if rejected > 0 || len(msg) > 0 {
		slog.Warn("telemetry: the OTLP collector rejected part of an export", "signal", c.signal, "rejected", rejected, "message", string(msg))
	}
}

// pbField finds the first length-delimited field number f in a message.
func pbField(b []byte, f int) ([]byte, bool) {
	_, data, ok := pbFind(b, f, 2)
	return data, ok
}

// pbVarint finds the first varint field number f in a message.
func pbVarint(b []byte, f int) (uint64, bool) {
	v, _, ok := pbFind(b, f, 0)
	return v, ok
}

// pbFind is the first field number f of wire type wire in a message.
func pbFind(b []byte, f, wire int) (v uint64, data []byte, ok bool) {
	ok = pbWalk(b, func(num, w int, fv uint64, fd []byte) bool {
		if num == f && w == wire {
			v, data = fv, fd
			return true
		}
		return false
	})
	return v, data, ok
}

// pbWalk visits a message's fields until visit returns true; a malformed
// message ends the walk.
func pbWalk(b []byte, visit func(num, wire int, v uint64, data []byte) bool) bool {
	for len(b) > 0 {
		key, n := uvarint(b)
		if n <= 0 {
			return false
		}
		b = b[n:]
		num, wire := int(key>>3), int(key&7)
		var v uint64
		var data []byte
		switch wire {
		case 0:
			v, n = uvarint(b)
			if n <= 0 {
				return false
			}
			b = b[n:]
		case 1:
			if len(b) < 8 {
				return false
			}
			b = b[8:]
		case 5:
			if len(b) < 4 {
				return false
			}
			b = b[4:]
		case 2:
			l, n := uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return false
			}
			data = b[n : n+int(l)]
			b = b[n+int(l):]
		default:
			return false
		}
		if visit(num, wire, v, data) {
			return true
		}
	}
	return false
}

func uvarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

// traceExporter is an sdktrace.SpanExporter over otlpClient.
type traceExporter struct {
	c    *otlpClient
	mu   sync.Mutex
	done bool
}

func (e *traceExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	done := e.done
	e.mu.Unlock()
	if done || len(spans) == 0 {
		return nil
	}
	raw, err := e.c.post(ctx, encodeTracesPB(spans))
	if err != nil {
		return err
	}
	e.c.partialSuccess(raw)
	return nil
}

func (e *traceExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	e.done = true
	e.mu.Unlock()
	return nil
}

// metricExporter is an sdkmetric.Exporter over otlpClient: cumulative
// temporality and the SDK's default aggregations.
type metricExporter struct {
	c        *otlpClient
	mu       sync.Mutex
	done     bool
	reported map[string]bool
}

func (e *metricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

func (e *metricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (e *metricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	e.mu.Lock()
	done := e.done
	e.mu.Unlock()
	if done {
		return nil
	}
	body, unsupported := encodeMetricsPB(rm)
	for _, name := range unsupported {
		e.mu.Lock()
		if !e.reported[name] {
			if e.reported == nil {
				e.reported = map[string]bool{}
			}
			e.reported[name] = true
			slog.Warn("telemetry: a metric's aggregation is not exported over OTLP", "metric", name)
		}
		e.mu.Unlock()
	}
	raw, err := e.c.post(ctx, body)
	if err != nil {
		return err
	}
	e.c.partialSuccess(raw)
	return nil
}

func (e *metricExporter) ForceFlush(context.Context) error { return nil }

func (e *metricExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	e.done = true
	e.mu.Unlock()
	return nil
}
