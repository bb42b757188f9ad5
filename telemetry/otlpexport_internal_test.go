package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// The configuration follows the OTLP exporter specification: a per-signal
// endpoint is used as it is, the general one gets /v1/<signal>, per-signal
// settings win, headers are URL-decoded, and what dsh cannot speak is refused
// by name rather than ignored.
func TestReadOTLPConfig(t *testing.T) {
	c, err := readOTLPConfig(envOf(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":         "http://collector:4318/",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://metrics:9000/custom",
		"OTEL_EXPORTER_OTLP_HEADERS":          "authorization=Bearer%20s3cret, x-team = a%2Cb",
		"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT":   "1500",
		"OTEL_EXPORTER_OTLP_TIMEOUT":          "99",
		"OTEL_EXPORTER_OTLP_COMPRESSION":      "gzip",
	}), "traces")
	if err != nil {
		t.Fatal(err)
	}
	if c.url != "http://collector:4318/v1/traces" || c.timeout != 1500*time.Millisecond || !c.gzip {
		t.Errorf("traces config = %+v", c)
	}
	if got := c.headers.Get("authorization"); got != "Bearer s3cret" {
		t.Errorf("authorization header = %q", got)
	}
	if got := c.headers.Get("x-team"); got != "a,b" {
		t.Errorf("x-team header = %q", got)
	}
	m, err := readOTLPConfig(envOf(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":         "http://collector:4318",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://metrics:9000/custom",
	}), "metrics")
	if err != nil || m.url != "http://metrics:9000/custom" {
		t.Errorf("metrics url = %q, %v", m.url, err)
	}

	_, err = readOTLPConfig(envOf(map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}), "traces")
	if err == nil || !strings.Contains(err.Error(), "http/protobuf") {
		t.Errorf("grpc: %v, want a refusal naming http/protobuf", err)
	}
	_, err = readOTLPConfig(envOf(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "authorization Bearer topsecret"}), "traces")
	if err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Errorf("malformed headers: %v, want an error that does not show the value", err)
	}
	for _, bad := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
		{"OTEL_EXPORTER_OTLP_TIMEOUT": "10s"},
		{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"},
	} {
		if _, err := readOTLPConfig(envOf(bad), "traces"); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// A collector that answers 503 is retried after the Retry-After it asks
// for; the body arrives gzipped and whole, with the configured headers; a
// 400 is not retried.
func TestOTLPClientRetriesRetryable(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	var auth []string
	status := []int{503, 429, 200}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		z, err := gzip.NewReader(r.Body)
		if err != nil {
			t.Errorf("body not gzip: %v", err)
			return
		}
		b, _ := io.ReadAll(z)
		mu.Lock()
		bodies = append(bodies, b)
		auth = append(auth, r.Header.Get("Authorization"))
		code := status[min(len(bodies)-1, len(status)-1)]
		mu.Unlock()
		if code == 503 {
			w.Header().Set("Retry-After", "7")
		}
		w.WriteHeader(code)
	}))
	defer srv.Close()
	cfg, err := readOTLPConfig(envOf(map[string]string{
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": srv.URL + "/v1/traces",
		"OTEL_EXPORTER_OTLP_HEADERS":         "Authorization=Bearer%20k",
		"OTEL_EXPORTER_OTLP_COMPRESSION":     "gzip",
	}), "traces")
	if err != nil {
		t.Fatal(err)
	}
	c := newOTLPClient(cfg, "traces")
	var waits []time.Duration
	c.sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	payload := bytes.Repeat([]byte("span"), 1000)
	if _, err := c.post(context.Background(), payload); err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 3 {
		t.Fatalf("%d attempts, want 3", len(bodies))
	}
	for i, b := range bodies {
		if !bytes.Equal(b, payload) || auth[i] != "Bearer k" {
			t.Errorf("attempt %d: %d bytes, auth %q", i, len(b), auth[i])
		}
	}
	if len(waits) != 2 || waits[0] != 7*time.Second || waits[1] != 2*cfg.backoff {
		t.Errorf("waits = %v, want [7s %v]", waits, 2*cfg.backoff)
	}

	status = []int{400}
	bodies = nil
	if _, err := c.post(context.Background(), payload); err == nil || len(bodies) != 1 {
		t.Errorf("400: err %v after %d attempts, want an error after 1", err, len(bodies))
	}
}

// The hand-written encoding decodes with the official generated types to the
// spans it was made from, every attribute value type included.
func TestEncodeTracesDecodesWithOfficialTypes(t *testing.T) {
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{9, 9, 9, 9, 9, 9, 9, 9}, TraceFlags: trace.FlagsSampled})
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{1, 1, 1, 1, 2, 2, 2, 2}, TraceFlags: trace.FlagsSampled})
	start := time.Unix(1_800_000_000, 123)
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.system", "anthropic"),
		attribute.Int64("gen_ai.usage.input_tokens", -42),
		attribute.Float64("ratio", 0.25),
		attribute.Bool("ok", true),
		attribute.StringSlice("names", []string{"a", "b"}),
		attribute.Int64Slice("ints", []int64{1, -2}),
		attribute.Float64Slice("floats", []float64{1.5}),
		attribute.BoolSlice("bools", []bool{true, false}),
	}
	stubs := tracetest.SpanStubs{{
		Name: "chat claude", SpanContext: sc, Parent: parent, SpanKind: trace.SpanKindClient,
		StartTime: start, EndTime: start.Add(time.Second), Attributes: attrs,
		Status:               sdktrace.Status{Code: codes.Error, Description: "boom"},
		Resource:             resource.NewSchemaless(attribute.String("service.name", "dsh")),
		InstrumentationScope: instrumentation.Scope{Name: "dsh", Version: "0.1"},
	}}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(encodeTracesPB(stubs.Snapshots()), &req); err != nil {
		t.Fatal(err)
	}
	rs := req.GetResourceSpans()
	if len(rs) != 1 || rs[0].GetResource().GetAttributes()[0].GetValue().GetStringValue() != "dsh" {
		t.Fatalf("resource spans = %v", rs)
	}
	ss := rs[0].GetScopeSpans()
	if len(ss) != 1 || ss[0].GetScope().GetName() != "dsh" || ss[0].GetScope().GetVersion() != "0.1" || len(ss[0].GetSpans()) != 1 {
		t.Fatalf("scope spans = %v", ss)
	}
	s := ss[0].GetSpans()[0]
	if !bytes.Equal(s.GetTraceId(), tid[:]) || !bytes.Equal(s.GetSpanId(), []byte{1, 1, 1, 1, 2, 2, 2, 2}) || !bytes.Equal(s.GetParentSpanId(), []byte{9, 9, 9, 9, 9, 9, 9, 9}) {
		t.Errorf("ids: trace %x span %x parent %x", s.GetTraceId(), s.GetSpanId(), s.GetParentSpanId())
	}
	if s.GetName() != "chat claude" || s.GetKind() != tracepb.Span_SPAN_KIND_CLIENT ||
		s.GetStartTimeUnixNano() != uint64(start.UnixNano()) || s.GetEndTimeUnixNano() != uint64(start.Add(time.Second).UnixNano()) {
		t.Errorf("span = %v", s)
	}
	if s.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR || s.GetStatus().GetMessage() != "boom" {
		t.Errorf("status = %v", s.GetStatus())
	}
	got := map[string]string{}
	for _, kv := range s.GetAttributes() {
		got[kv.GetKey()] = kv.GetValue().String()
	}
	for _, kv := range attrs {
		if _, ok := got[string(kv.Key)]; !ok {
			t.Errorf("attribute %s missing", kv.Key)
		}
	}
	if x := s.GetAttributes()[1].GetValue().GetIntValue(); x != -42 {
		t.Errorf("int attribute = %d", x)
	}
	if x := s.GetAttributes()[2].GetValue().GetDoubleValue(); x != 0.25 {
		t.Errorf("double attribute = %v", x)
	}
	if !s.GetAttributes()[3].GetValue().GetBoolValue() {
		t.Errorf("bool attribute = %v", s.GetAttributes()[3])
	}
	arr := s.GetAttributes()[5].GetValue().GetArrayValue().GetValues()
	if len(arr) != 2 || arr[1].GetIntValue() != -2 {
		t.Errorf("int slice = %v", arr)
	}
	if b := s.GetAttributes()[7].GetValue().GetArrayValue().GetValues(); len(b) != 2 || !b[0].GetBoolValue() || b[1].GetBoolValue() {
		t.Errorf("bool slice = %v", b)
	}
}

// A collector's partial success (some spans rejected, with its reason) is
// logged, read from the response as the official types encode it; a full
// success is not.
func TestPartialSuccessIsLogged(t *testing.T) {
	var logged bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	c := &otlpClient{signal: "traces"}

	raw, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{
		RejectedSpans: 3, ErrorMessage: "span too large"}})
	if err != nil {
		t.Fatal(err)
	}
	c.partialSuccess(raw)
	if s := logged.String(); !strings.Contains(s, "rejected=3") || !strings.Contains(s, `message="span too large"`) || !strings.Contains(s, "signal=traces") {
		t.Fatalf("partial success logged as %q", s)
	}

	logged.Reset()
	raw, _ = proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	c.partialSuccess(raw)
	if logged.Len() != 0 {
		t.Fatalf("a full success logged %q", logged.String())
	}
}
