package telemetry

import (
	"encoding/binary"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// This file writes the OTLP protobuf messages by hand. The few wire-format
// helpers are dsh's own so that no protobuf runtime (and none of its
// package initialisers) reaches the binary; the field numbers are those of
// opentelemetry-proto's trace.proto, metrics.proto, common.proto and
// resource.proto.

// pbuf is a protobuf message under construction.
type pbuf struct{ b []byte }

func (p *pbuf) varint(v uint64)     { p.b = binary.AppendUvarint(p.b, v) }
func (p *pbuf) tag(field, wire int) { p.varint(uint64(field)<<3 | uint64(wire)) }

func (p *pbuf) uint(field int, v uint64) {
	if v != 0 {
		p.tag(field, 0)
		p.varint(v)
	}
}

func (p *pbuf) boolean(field int, v bool) {
	if v {
		p.tag(field, 0)
		p.varint(1)
	}
}

func (p *pbuf) fixed64(field int, v uint64) {
	if v != 0 {
		p.tag(field, 1)
		p.b = binary.LittleEndian.AppendUint64(p.b, v)
	}
}

func (p *pbuf) fixed32(field int, v uint32) {
	if v != 0 {
		p.tag(field, 5)
		p.b = binary.LittleEndian.AppendUint32(p.b, v)
	}
}

// double writes v even when it is zero when keep says so (a oneof member
// or an optional field is present at zero).
func (p *pbuf) double(field int, v float64, keep bool) {
	if v != 0 || keep {
		p.tag(field, 1)
		p.b = binary.LittleEndian.AppendUint64(p.b, math.Float64bits(v))
	}
}

// present writes a varint field even at zero: a oneof member is there
// whatever its value.
func (p *pbuf) present(field int, v uint64) {
	p.tag(field, 0)
	p.varint(v)
}

// presentStr writes a string field even when empty, as present does.
func (p *pbuf) presentStr(field int, v string) {
	p.tag(field, 2)
	p.varint(uint64(len(v)))
	p.b = append(p.b, v...)
}

func (p *pbuf) bytes(field int, v []byte) {
	if len(v) != 0 {
		p.tag(field, 2)
		p.varint(uint64(len(v)))
		p.b = append(p.b, v...)
	}
}

func (p *pbuf) str(field int, v string) {
	if v != "" {
		p.presentStr(field, v)
	}
}

// msg writes a length-delimited sub-message built by fill; always, even
// when empty, since an empty message is still present.
func (p *pbuf) msg(field int, fill func(*pbuf)) {
	var sub pbuf
	fill(&sub)
	p.tag(field, 2)
	p.varint(uint64(len(sub.b)))
	p.b = append(p.b, sub.b...)
}

// common.proto: KeyValue{key=1, value=2}; AnyValue{string=1, bool=2,
// int=3, double=4, array=5, kvlist=6, bytes=7}; ArrayValue{values=1}.
func pbAttrs(p *pbuf, field int, attrs []attribute.KeyValue) {
	for _, kv := range attrs {
		p.msg(field, func(k *pbuf) {
			k.str(1, string(kv.Key))
			k.msg(2, func(a *pbuf) { pbValue(a, kv.Value) })
		})
	}
}

func pbValue(a *pbuf, v attribute.Value) {
	switch v.Type() {
	case attribute.BOOL:
		a.present(2, b2u(v.AsBool()))
	case attribute.INT64:
		a.present(3, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		a.double(4, v.AsFloat64(), true)
	case attribute.STRING:
		a.presentStr(1, v.AsString())
	case attribute.BOOLSLICE:
		a.msg(5, func(arr *pbuf) {
			for _, x := range v.AsBoolSlice() {
				arr.msg(1, func(e *pbuf) { e.present(2, b2u(x)) })
			}
		})
	case attribute.INT64SLICE:
		a.msg(5, func(arr *pbuf) {
			for _, x := range v.AsInt64Slice() {
				arr.msg(1, func(e *pbuf) { e.present(3, uint64(x)) })
			}
		})
	case attribute.FLOAT64SLICE:
		a.msg(5, func(arr *pbuf) {
			for _, x := range v.AsFloat64Slice() {
				arr.msg(1, func(e *pbuf) { e.double(4, x, true) })
			}
		})
	case attribute.STRINGSLICE:
		a.msg(5, func(arr *pbuf) {
			for _, x := range v.AsStringSlice() {
				arr.msg(1, func(e *pbuf) { e.presentStr(1, x) })
			}
		})
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// resource.proto: Resource{attributes=1, dropped_attributes_count=2}.
func pbResource(p *pbuf, field int, r *resource.Resource) {
	p.msg(field, func(rp *pbuf) { pbAttrs(rp, 1, r.Attributes()) })
}

// InstrumentationScope{name=1, version=2, attributes=3}.
func pbScope(p *pbuf, field int, s instrumentation.Scope) {
	p.msg(field, func(sp *pbuf) {
		sp.str(1, s.Name)
		sp.str(2, s.Version)
		pbAttrs(sp, 3, s.Attributes.ToSlice())
	})
}

// otlpStatus maps the otel API's status codes (Unset 0, Error 1, Ok 2) to
// OTLP's (UNSET 0, OK 1, ERROR 2).
func otlpStatus(c codes.Code) uint64 {
	switch c {
	case codes.Ok:
		return 1
	case codes.Error:
		return 2
	}
	return 0
}

// group keeps the order in which resources and scopes first appear.
type group[K comparable, V any] struct {
	keys []K
	m    map[K][]V
}

func (g *group[K, V]) add(k K, v V) {
	if g.m == nil {
		g.m = map[K][]V{}
	}
	if _, ok := g.m[k]; !ok {
		g.keys = append(g.keys, k)
	}
	g.m[k] = append(g.m[k], v)
}

// encodeTracesPB writes an ExportTraceServiceRequest{resource_spans=1}:
// ResourceSpans{resource=1, scope_spans=2, schema_url=3},
// ScopeSpans{scope=1, spans=2, schema_url=3}.
func encodeTracesPB(spans []sdktrace.ReadOnlySpan) []byte {
	var byRes group[*resource.Resource, sdktrace.ReadOnlySpan]
	for _, s := range spans {
		byRes.add(s.Resource(), s)
	}
	var p pbuf
	for _, res := range byRes.keys {
		p.msg(1, func(rs *pbuf) {
			pbResource(rs, 1, res)
			var byScope group[instrumentation.Scope, sdktrace.ReadOnlySpan]
			for _, s := range byRes.m[res] {
				byScope.add(s.InstrumentationScope(), s)
			}
			for _, sc := range byScope.keys {
				rs.msg(2, func(ss *pbuf) {
					pbScope(ss, 1, sc)
					for _, s := range byScope.m[sc] {
						ss.msg(2, func(sp *pbuf) { pbSpan(sp, s) })
					}
					ss.str(3, sc.SchemaURL)
				})
			}
			rs.str(3, res.SchemaURL())
		})
	}
	return p.b
}

// Span{trace_id=1, span_id=2, trace_state=3, parent_span_id=4, name=5,
// kind=6, start=7, end=8, attributes=9, dropped_attributes_count=10,
// events=11, dropped_events_count=12, links=13, dropped_links_count=14,
// status=15, flags=16}; Event{time=1, name=2, attributes=3, dropped=4};
// Link{trace_id=1, span_id=2, trace_state=3, attributes=4, dropped=5,
// flags=6}; Status{message=2, code=3}.
func pbSpan(sp *pbuf, s sdktrace.ReadOnlySpan) {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	sp.bytes(1, tid[:])
	sp.bytes(2, sid[:])
	sp.str(3, sc.TraceState().String())
	if p := s.Parent(); p.SpanID().IsValid() {
		psid := p.SpanID()
		sp.bytes(4, psid[:])
	}
	sp.str(5, s.Name())
	sp.uint(6, uint64(s.SpanKind()))
	sp.fixed64(7, unixNano(s.StartTime().UnixNano()))
	sp.fixed64(8, unixNano(s.EndTime().UnixNano()))
	pbAttrs(sp, 9, s.Attributes())
	sp.uint(10, uint64(s.DroppedAttributes()))
	for _, e := range s.Events() {
		sp.msg(11, func(ep *pbuf) {
			ep.fixed64(1, unixNano(e.Time.UnixNano()))
			ep.str(2, e.Name)
			pbAttrs(ep, 3, e.Attributes)
			ep.uint(4, uint64(e.DroppedAttributeCount))
		})
	}
	sp.uint(12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		sp.msg(13, func(lp *pbuf) {
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			lp.bytes(1, ltid[:])
			lp.bytes(2, lsid[:])
			lp.str(3, l.SpanContext.TraceState().String())
			pbAttrs(lp, 4, l.Attributes)
			lp.uint(5, uint64(l.DroppedAttributeCount))
			lp.fixed32(6, linkFlags(l.SpanContext.TraceFlags(), l.SpanContext.IsRemote()))
		})
	}
	sp.uint(14, uint64(s.DroppedLinks()))
	st := s.Status()
	sp.msg(15, func(stp *pbuf) {
		stp.str(2, st.Description)
		stp.uint(3, otlpStatus(st.Code))
	})
	sp.fixed32(16, linkFlags(sc.TraceFlags(), s.Parent().IsRemote()))
}

// linkFlags is the W3C trace flags in the low byte plus OTLP's
// "has is_remote" (0x100) and "is remote" (0x200) bits.
func linkFlags(f interface{ IsSampled() bool }, remote bool) uint32 {
	v := uint32(0x100)
	if f.IsSampled() {
		v |= 1
	}
	if remote {
		v |= 0x200
	}
	return v
}

func unixNano(n int64) uint64 {
	if n < 0 {
		return 0
	}
	return uint64(n)
}

// otlpTemporality maps the SDK's (Cumulative 1, Delta 2) to OTLP's
// AggregationTemporality (DELTA 1, CUMULATIVE 2).
func otlpTemporality(t metricdata.Temporality) uint64 {
	switch t {
	case metricdata.CumulativeTemporality:
		return 2
	case metricdata.DeltaTemporality:
		return 1
	}
	return 0
}

// encodeMetricsPB writes an ExportMetricsServiceRequest{resource_metrics=1}:
// ResourceMetrics{resource=1, scope_metrics=2, schema_url=3},
// ScopeMetrics{scope=1, metrics=2, schema_url=3}; Metric{name=1,
// description=2, unit=3, gauge=5, sum=7, histogram=9}. Aggregations it
// does not know are returned by name so the caller can say so.
func encodeMetricsPB(rm *metricdata.ResourceMetrics) (out []byte, unsupported []string) {
	var p pbuf
	p.msg(1, func(rp *pbuf) {
		pbResource(rp, 1, rm.Resource)
		for _, sm := range rm.ScopeMetrics {
			rp.msg(2, func(sp *pbuf) {
				pbScope(sp, 1, sm.Scope)
				for _, m := range sm.Metrics {
					if !pbMetric(sp, 2, m) {
						unsupported = append(unsupported, m.Name)
					}
				}
				sp.str(3, sm.Scope.SchemaURL)
			})
		}
		rp.str(3, rm.Resource.SchemaURL())
	})
	return p.b, unsupported
}

// pbMetric writes m as a Metric in field, or nothing and false for an
// aggregation OTLP encoding here does not know.
func pbMetric(p *pbuf, field int, m metricdata.Metrics) bool {
	var data func(*pbuf)
	switch d := m.Data.(type) {
	case metricdata.Gauge[int64]:
		data = pbGauge(d)
	case metricdata.Gauge[float64]:
		data = pbGauge(d)
	case metricdata.Sum[int64]:
		data = pbSum(d)
	case metricdata.Sum[float64]:
		data = pbSum(d)
	case metricdata.Histogram[int64]:
		data = pbHistogramData(d)
	case metricdata.Histogram[float64]:
		data = pbHistogramData(d)
	default:
		return false
	}
	p.msg(field, func(mp *pbuf) {
		mp.str(1, m.Name)
		mp.str(2, m.Description)
		mp.str(3, m.Unit)
		data(mp)
	})
	return true
}

// Gauge{data_points=1} in Metric.gauge=5.
func pbGauge[N int64 | float64](d metricdata.Gauge[N]) func(*pbuf) {
	return func(mp *pbuf) { mp.msg(5, func(g *pbuf) { pbNumbers(g, d.DataPoints) }) }
}

// Sum{data_points=1, aggregation_temporality=2, is_monotonic=3} in Metric.sum=7.
func pbSum[N int64 | float64](d metricdata.Sum[N]) func(*pbuf) {
	return func(mp *pbuf) {
		mp.msg(7, func(s *pbuf) {
			pbNumbers(s, d.DataPoints)
			s.uint(2, otlpTemporality(d.Temporality))
			s.boolean(3, d.IsMonotonic)
		})
	}
}

// Histogram{data_points=1, aggregation_temporality=2} in Metric.histogram=9.
func pbHistogramData[N int64 | float64](d metricdata.Histogram[N]) func(*pbuf) {
	return func(mp *pbuf) {
		mp.msg(9, func(h *pbuf) {
			pbHistogram(h, d.DataPoints)
			h.uint(2, otlpTemporality(d.Temporality))
		})
	}
}

// NumberDataPoint{start=2, time=3, as_double=4, as_int=6 (sfixed64),
// attributes=7}.
func pbNumbers[N int64 | float64](p *pbuf, pts []metricdata.DataPoint[N]) {
	for _, dp := range pts {
		p.msg(1, func(n *pbuf) {
			n.fixed64(2, unixNano(dp.StartTime.UnixNano()))
			n.fixed64(3, unixNano(dp.Time.UnixNano()))
			switch v := any(dp.Value).(type) {
			case float64:
				n.double(4, v, true)
			case int64:
				n.tag(6, 1)
				n.b = binary.LittleEndian.AppendUint64(n.b, uint64(v))
			}
			pbAttrs(n, 7, dp.Attributes.ToSlice())
		})
	}
}

// HistogramDataPoint{start=2, time=3, count=4, sum=5, bucket_counts=6
// (packed fixed64), explicit_bounds=7 (packed double), attributes=9,
// min=11, max=12}.
func pbHistogram[N int64 | float64](p *pbuf, pts []metricdata.HistogramDataPoint[N]) {
	for _, dp := range pts {
		p.msg(1, func(h *pbuf) {
			h.fixed64(2, unixNano(dp.StartTime.UnixNano()))
			h.fixed64(3, unixNano(dp.Time.UnixNano()))
			h.fixed64(4, dp.Count)
			h.double(5, float64(dp.Sum), true)
			if len(dp.BucketCounts) > 0 {
				h.tag(6, 2)
				h.varint(uint64(8 * len(dp.BucketCounts)))
				for _, c := range dp.BucketCounts {
					h.b = binary.LittleEndian.AppendUint64(h.b, c)
				}
			}
			if len(dp.Bounds) > 0 {
				h.tag(7, 2)
				h.varint(uint64(8 * len(dp.Bounds)))
				for _, b := range dp.Bounds {
					h.b = binary.LittleEndian.AppendUint64(h.b, math.Float64bits(b))
				}
			}
			pbAttrs(h, 9, dp.Attributes.ToSlice())
			if v, ok := dp.Min.Value(); ok {
				h.double(11, float64(v), true)
			}
			if v, ok := dp.Max.Value(); ok {
				h.double(12, float64(v), true)
			}
		})
	}
}
