package telemetry

import (
	"bufio"
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// prometheusHandler serves what reader collects in the Prometheus text
// exposition format (version 0.0.4), following the OpenTelemetry
// compatibility rules: dots become underscores, the unit is a suffix
// (_seconds, _bytes), monotonic sums end in _total, histograms are
// cumulative _bucket series with le labels plus _sum and _count. Written
// here rather than through the Prometheus exporter module, which would add
// the Prometheus client library for a page of formatting.
func prometheusHandler(reader *sdkmetric.ManualReader) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(r.Context(), &rm); err != nil {
			http.Error(w, "telemetry: collecting metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		bw := bufio.NewWriter(w)
		writePrometheus(bw, rm)
		_ = bw.Flush()
	})
}

// family is one metric name's lines.
type family struct {
	name, help, typ string
	lines           []string
}

func writePrometheus(w *bufio.Writer, rm metricdata.ResourceMetrics) {
	byName := map[string]*family{}
	var order []string
	add := func(name, help, typ string, lines []string) {
		f := byName[name]
		if f == nil {
			f = &family{name: name, help: help, typ: typ}
			byName[name] = f
			order = append(order, name)
		}
		f.lines = append(f.lines, lines...)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			base := promName(m.Name, m.Unit)
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				name, typ := sumName(base, d.IsMonotonic)
				add(name, m.Description, typ, points(name, d.DataPoints))
			case metricdata.Sum[float64]:
				name, typ := sumName(base, d.IsMonotonic)
				add(name, m.Description, typ, points(name, d.DataPoints))
			case metricdata.Gauge[int64]:
				add(base, m.Description, "gauge", points(base, d.DataPoints))
			case metricdata.Gauge[float64]:
				add(base, m.Description, "gauge", points(base, d.DataPoints))
			case metricdata.Histogram[int64]:
				add(base, m.Description, "histogram", histogram(base, d.DataPoints))
			case metricdata.Histogram[float64]:
				add(base, m.Description, "histogram", histogram(base, d.DataPoints))
			}
		}
	}
	for _, name := range order {
		f := byName[name]
		if f.help != "" {
			fmt.Fprintf(w, "# HELP %s %s\n", f.name, escapeHelp(f.help))
		}
		fmt.Fprintf(w, "# TYPE %s %s\n", f.name, f.typ)
		for _, l := range f.lines {
			w.WriteString(l)
			w.WriteByte('\n')
		}
	}
}

func sumName(base string, monotonic bool) (string, string) {
	if monotonic {
		return base + "_total", "counter"
	}
	return base, "gauge"
}

func points[N int64 | float64](name string, dps []metricdata.DataPoint[N]) []string {
	out := make([]string, 0, len(dps))
	for _, dp := range sortedPoints(dps, func(p metricdata.DataPoint[N]) attribute.Set { return p.Attributes }) {
		out = append(out, name+labels(dp.Attributes, "", "")+" "+number(float64(dp.Value)))
	}
	return out
}

func histogram[N int64 | float64](name string, dps []metricdata.HistogramDataPoint[N]) []string {
	var out []string
	for _, dp := range sortedPoints(dps, func(p metricdata.HistogramDataPoint[N]) attribute.Set { return p.Attributes }) {
		var cum uint64
		for i, b := range dp.Bounds {
			cum += dp.BucketCounts[i]
			out = append(out, name+"_bucket"+labels(dp.Attributes, "le", number(b))+" "+strconv.FormatUint(cum, 10))
		}
		out = append(out, name+"_bucket"+labels(dp.Attributes, "le", "+Inf")+" "+strconv.FormatUint(dp.Count, 10),
			name+"_sum"+labels(dp.Attributes, "", "")+" "+number(float64(dp.Sum)),
			name+"_count"+labels(dp.Attributes, "", "")+" "+strconv.FormatUint(dp.Count, 10))
	}
	return out
}

// sortedPoints orders points by their labels, so a scrape reads the same
// way twice.
func sortedPoints[P any](ps []P, set func(P) attribute.Set) []P {
	out := slices.Clone(ps)
	enc := attribute.DefaultEncoder()
	key := func(p P) string { s := set(p); return s.Encoded(enc) }
	slices.SortStableFunc(out, func(a, b P) int { return cmp.Compare(key(a), key(b)) })
	return out
}

// promName is an OpenTelemetry name and unit as a Prometheus metric name.
func promName(name, unit string) string {
	n := sanitize(name)
	switch {
	case unit == "s":
		n += "_seconds"
	case unit == "ms":
		n += "_milliseconds"
	case unit == "By":
		n += "_bytes"
	case unit == "1", unit == "", strings.HasPrefix(unit, "{"):
	default:
		n += "_" + sanitize(unit)
	}
	return n
}

// sanitize maps a name onto [a-zA-Z_:][a-zA-Z0-9_:]*.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c == '_' || c == ':' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || (i > 0 && '0' <= c && c <= '9')
		if !ok {
			b[i] = '_'
		}
	}
	return string(b)
}

// labels formats a point's attributes, plus one extra label when named.
func labels(set attribute.Set, extraKey, extraValue string) string {
	if set.Len() == 0 && extraKey == "" {
		return ""
	}
	var sb strings.Builder
	sb.WriteByte('{')
	first := true
	for it := set.Iter(); it.Next(); {
		kv := it.Attribute()
		if !first {
			sb.WriteByte(',')
		}
		first = false
		sb.WriteString(sanitize(string(kv.Key)))
		sb.WriteString(`="`)
		sb.WriteString(escapeValue(kv.Value.Emit()))
		sb.WriteByte('"')
	}
	if extraKey != "" {
		if !first {
			sb.WriteByte(',')
		}
		sb.WriteString(extraKey + `="` + extraValue + `"`)
	}
	sb.WriteByte('}')
	return sb.String()
}

var (
	valueEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeValue(s string) string { return valueEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }

func number(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
