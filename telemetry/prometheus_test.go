package telemetry

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// TestPrometheusText: counters, histograms and gauges in the exposition
// format, with OpenTelemetry's name and unit rules and escaped labels.
func TestPrometheusText(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithView(durationBuckets))
	defer mp.Shutdown(context.Background())
	m := mp.Meter("test")
	ctx := context.Background()
	turns, _ := m.Int64Counter("dsh.turns")
	turns.Add(ctx, 2, metric.WithAttributes(attribute.String("dsh.end_reason", "completed")))
	turns.Add(ctx, 1, metric.WithAttributes(attribute.String("dsh.end_reason", `say "no"\`+"\n")))
	d, _ := m.Float64Histogram("dsh.turn.duration", metric.WithUnit("s"))
	d.Record(ctx, 0.003)
	d.Record(ctx, 7)
	g, _ := m.Int64Gauge("dsh.serve.heap", metric.WithUnit("By"), metric.WithDescription("heap\nin use"))
	g.Record(ctx, 4096)

	rec := httptest.NewRecorder()
	prometheusHandler(reader).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	text := string(body)
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("content type %q", ct)
	}
	for _, want := range []string{
		"# TYPE dsh_turns_total counter\n",
		`dsh_turns_total{dsh_end_reason="completed"} 2` + "\n",
		`dsh_turns_total{dsh_end_reason="say \"no\"\\\n"} 1` + "\n",
		"# TYPE dsh_turn_duration_seconds histogram\n",
		`dsh_turn_duration_seconds_bucket{le="0.001"} 0` + "\n",
		`dsh_turn_duration_seconds_bucket{le="0.005"} 1` + "\n",
		`dsh_turn_duration_seconds_bucket{le="10"} 2` + "\n",
		`dsh_turn_duration_seconds_bucket{le="+Inf"} 2` + "\n",
		"dsh_turn_duration_seconds_sum 7.003\n",
		"dsh_turn_duration_seconds_count 2\n",
		"# HELP dsh_serve_heap_bytes heap\\nin use\n",
		"# TYPE dsh_serve_heap_bytes gauge\n",
		"dsh_serve_heap_bytes 4096\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
}
