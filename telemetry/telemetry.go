// Package telemetry is dsh's OpenTelemetry: traces with a span per turn,
// step, model call and tool call following the GenAI semantic conventions,
// and metrics (tokens, cost, latency, errors, and what a front door adds,
// such as dsh serve's queue depth), exported over OTLP/HTTP when the
// standard OTEL_EXPORTER_OTLP_* variables name an endpoint, and read as
// Prometheus text on dsh serve's /metrics.
//
// The instrumentation ([Plugin]) programs against the otel API's global
// providers; the front door that wants telemetry calls [Start] once, before
// it composes its apps, and [Runtime.Shutdown] before it exits (so a short
// dsh -p run still delivers its spans). Without Start the plugin installs
// nothing: an ordinary run pays no telemetry cost.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Options say what a front door wants.
type Options struct {
	// Service is service.name ("dsh" when empty); Version service.version.
	Service string
	Version string
	// Instance is service.instance.id (dsh serve's worker name).
	Instance string
	// Env reads the environment (os.Getenv when nil): the standard
	// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
	// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT switch the OTLP/HTTP export on
	// (the exporters read their headers, timeouts and compression from the
	// same variables); OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none
	// and OTEL_METRICS_EXPORTER=none switch it off.
	Env func(string) string
	// Prometheus keeps the metrics readable by [Runtime.Metrics] even when
	// nothing is exported.
	Prometheus bool
	// MetricInterval is how often metrics are exported (default 30 s, or
	// OTEL_METRIC_EXPORT_INTERVAL).
	MetricInterval time.Duration
}

// Runtime is a started telemetry pipeline.
type Runtime struct {
	tp      *sdktrace.TracerProvider
	mp      *sdkmetric.MeterProvider
	manual  *sdkmetric.ManualReader
	traces  bool
	metrics bool
	export  bool // metrics leave over OTLP
}

var getenv = os.Getenv

// active is set while a Runtime provides the global providers: the plugin
// instruments only then.
var active atomic.Bool

// Active reports whether a started Runtime collects telemetry.
func Active() bool { return active.Load() }

// Start builds the providers the options ask for and makes them the otel
// globals. It returns a Runtime even when nothing is configured (then
// Shutdown does nothing and Metrics is nil).
func Start(ctx context.Context, o Options) (*Runtime, error) {
	env := o.Env
	if env == nil {
		env = getenv
	}
	r := &Runtime{}
	if strings.EqualFold(env("OTEL_SDK_DISABLED"), "true") {
		return r, nil
	}
	endpoint := env("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
	r.traces = (endpoint || env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "") && env("OTEL_TRACES_EXPORTER") != "none"
	exportMetrics := (endpoint || env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != "") && env("OTEL_METRICS_EXPORTER") != "none"
	r.export = exportMetrics
	r.metrics = exportMetrics || o.Prometheus
	if !r.traces && !r.metrics {
		return r, nil
	}
	service := o.Service
	if service == "" {
		service = "dsh"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", service)}
	if o.Version != "" {
		attrs = append(attrs, attribute.String("service.version", o.Version))
	}
	if o.Instance != "" {
		attrs = append(attrs, attribute.String("service.instance.id", o.Instance))
	}
	res := resource.NewSchemaless(attrs...)
	if r.traces {
		cfg, err := readOTLPConfig(env, "traces")
		if err != nil {
			return nil, err
		}
		exp := &traceExporter{c: newOTLPClient(cfg, "traces")}
		r.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		otel.SetTracerProvider(r.tp)
		otel.SetTextMapPropagator(propagation.TraceContext{})
	}
	if r.metrics {
		opts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithView(durationBuckets)}
		if exportMetrics {
			cfg, err := readOTLPConfig(env, "metrics")
			if err != nil {
				r.shutdown(ctx)
				return nil, err
			}
			exp := &metricExporter{c: newOTLPClient(cfg, "metrics")}
			var popts []sdkmetric.PeriodicReaderOption
			if o.MetricInterval > 0 {
				popts = append(popts, sdkmetric.WithInterval(o.MetricInterval))
			}
			opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, popts...)))
		}
		if o.Prometheus {
			r.manual = sdkmetric.NewManualReader()
			opts = append(opts, sdkmetric.WithReader(r.manual))
		}
		r.mp = sdkmetric.NewMeterProvider(opts...)
		otel.SetMeterProvider(r.mp)
	}
	active.Store(true)
	return r, nil
}

// durationBuckets gives second-valued histograms buckets that fit agent
// latencies (milliseconds to minutes) rather than the SDK's defaults.
var durationBuckets = func(i sdkmetric.Instrument) (sdkmetric.Stream, bool) {
	if i.Unit != "s" {
		return sdkmetric.Stream{}, false
	}
	return sdkmetric.Stream{Name: i.Name, Description: i.Description, Unit: i.Unit,
		Aggregation: sdkmetric.AggregationExplicitBucketHistogram{
			Boundaries: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}}, true
}

// Exporting reports whether spans or metrics leave the process over OTLP.
func (r *Runtime) Exporting() bool { return r != nil && (r.traces || r.export) }

// Metrics serves the metrics in Prometheus text format; nil unless the
// options asked for Prometheus.
func (r *Runtime) Metrics() http.Handler {
	if r == nil || r.manual == nil {
		return nil
	}
	return prometheusHandler(r.manual)
}

// Shutdown flushes what is buffered to the exporters and stops them.
func (r *Runtime) Shutdown(ctx context.Context) error {
	if r == nil {
		return nil
	}
	return r.shutdown(ctx)
}

func (r *Runtime) shutdown(ctx context.Context) error {
	var errs []error
	if r.tp != nil {
		errs = append(errs, r.tp.Shutdown(ctx))
	}
	if r.mp != nil {
		errs = append(errs, r.mp.Shutdown(ctx))
	}
	if r.tp != nil || r.mp != nil {
		active.Store(false)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry: shutting down: %w", err)
	}
	return nil
}
