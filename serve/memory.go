package serve

import (
	"context"
	"errors"
	"math"
	"runtime/debug"
	"runtime/metrics"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/dshq/dsh/agent"
)

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

// heapInUse is the bytes of live and not yet swept heap objects: what the
// memory budget is compared with (cheap to read: no stop-the-world).
func heapInUse() int64 {
	s := make([]metrics.Sample, 1)
	copy(s, heapSample)
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// gauges reports the server's state as OpenTelemetry gauges (read at each
// collection: /metrics and the OTLP export): sessions by state, the
// questions waiting for an answer, the messages queued behind running
// turns, open event streams, the heap the memory budget watches and the runtime's
// memory limit.
func (s *Server) gauges() (unregister func(), err error) {
	m := otel.Meter("github.com/dshq/dsh/serve")
	sessions, err1 := m.Int64ObservableGauge("dsh.serve.sessions", metric.WithDescription("Sessions this worker knows, by state: running, idle (live in memory), stored (evicted)"))
	approvals, err2 := m.Int64ObservableGauge("dsh.serve.approvals.pending", metric.WithDescription("Approval questions waiting for an answer"))
	streams, err3 := m.Int64ObservableGauge("dsh.serve.streams", metric.WithDescription("Open event streams (SSE and WebSocket)"))
	heap, err4 := m.Int64ObservableGauge("dsh.serve.heap", metric.WithUnit("By"), metric.WithDescription("Heap in use (what --memory-budget is compared with)"))
	limit, err5 := m.Int64ObservableGauge("dsh.serve.memory_limit", metric.WithUnit("By"), metric.WithDescription("The Go runtime's soft memory limit (--memory-budget or GOMEMLIMIT; 0: none)"))
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return nil, err
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		var running, idle, stored, pending int64
		s.mu.Lock()
		entries := make([]*entry, 0, len(s.sessions))
		for _, e := range s.sessions {
			entries = append(entries, e)
		}
		s.mu.Unlock()
		for _, e := range entries {
			e.mu.Lock()
			switch {
			case e.h == nil:
				stored++
			case e.h.Agent.Status() == agent.Running:
				running++
			default:
				idle++
			}
			pending += int64(len(e.approvals))
			e.mu.Unlock()
		}
		o.ObserveInt64(sessions, running, metric.WithAttributes(attribute.String("state", "running")))
		o.ObserveInt64(sessions, idle, metric.WithAttributes(attribute.String("state", "idle")))
		o.ObserveInt64(sessions, stored, metric.WithAttributes(attribute.String("state", "stored")))
		o.ObserveInt64(approvals, pending)
		o.ObserveInt64(streams, s.openStreams.Load())
		o.ObserveInt64(heap, heapInUse())
		if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
			o.ObserveInt64(limit, l)
		} else {
			o.ObserveInt64(limit, 0)
		}
		return nil
	}, sessions, approvals, streams, heap, limit)
	if err != nil {
		return nil, err
	}
	return func() { _ = reg.Unregister() }, nil
}
