package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

// loop runs body in b.Loop and also reports the process CPU time per
// operation ("cpu-ms/op"), which a loaded machine inflates far less than
// wall time.
func loop(b *testing.B, body func()) {
	b.ReportAllocs()
	n := 0
	var start time.Duration
	for b.Loop() {
		if n == 0 {
			start = cpuTime()
		}
		body()
		n++
	}
	if n > 1 {
		// The first iteration is excluded: it warms caches.
		b.ReportMetric(float64(cpuTime()-start)/float64(n-1)/1e6, "cpu-ms/op")
	}
}

// OpenFunc opens a backend over dir for benchmarks; noSync turns fsync off.
type OpenFunc func(dir string, noSync bool) (store.Backend, error)

func benchAttach(b *testing.B, open OpenFunc, dir string, noSync bool, sessions *session.Live) *store.Coordinator {
	b.Helper()
	be, err := open(dir, noSync)
	if err != nil {
		b.Fatal(err)
	}
	scope := kernel.NewScope("bench")
	b.Cleanup(func() {
		if err := scope.Close(); err != nil {
			b.Error(err)
		}
	})
	c, err := store.Attach(scope, sessions, be, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchAppendStep measures the write path of one agent step: step/start, 20
// streamed chunks, the assistant message and step/end appended to a live
// session, then the flush that makes them durable (one batch).
func BenchAppendStep(b *testing.B, open OpenFunc, noSync bool) {
	ctx := context.Background()
	st := session.NewLive(nil)
	benchAttach(b, open, b.TempDir(), noSync, st)
	scope := kernel.NewScope("bench-session")
	defer scope.Close()
	s, err := st.Create(ctx, scope, "bench", session.Options{Header: session.Header{Cwd: "/bench"}})
	if err != nil {
		b.Fatal(err)
	}
	if err := Apply(ctx, s, []Op{TurnStart(1), User("benchmark")}); err != nil {
		b.Fatal(err)
	}
	step := 0
	var took []time.Duration
	loop(b, func() {
		start := time.Now()
		defer func() { took = append(took, time.Since(start)) }()
		step++
		ops := make([]Op, 0, 23)
		ops = append(ops, StepStart(1, step))
		for i := range 20 {
			ops = append(ops, Chunk(1, step, fmt.Sprintf("token %d ", i)))
		}
		ops = append(ops, Assistant(1, step, "a reasonably sized answer for one step of the benchmark"), StepEnd(1, step))
		if err := Apply(ctx, s, ops); err != nil {
			b.Fatal(err)
		}
		if err := st.FlushSession(ctx, s); err != nil {
			b.Fatal(err)
		}
	})
	reportPercentiles(b, took)
}

// reportPercentiles adds the median and the 99th percentile of the
// iterations' wall times (the first, warm-up, excluded) as "p50-ms" and
// "p99-ms".
func reportPercentiles(b *testing.B, took []time.Duration) {
	if len(took) > 1 {
		took = took[1:]
	}
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	at := func(q float64) float64 {
		return float64(took[min(len(took)-1, int(q*float64(len(took))))]) / 1e6
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// BenchConcurrent measures many sessions written at once, as a server runs
// them: n live sessions, each on its own goroutine, appending and flushing
// steps of 23 events (with fsync unless noSync) for the benchmark's
// iterations; it reports the events stored per second over all of them.
func BenchConcurrent(b *testing.B, open OpenFunc, n int, noSync bool) {
	ctx := context.Background()
	st := session.NewLive(nil)
	benchAttach(b, open, b.TempDir(), noSync, st)
	sessions := make([]*session.Session, n)
	for i := range sessions {
		scope := kernel.NewScope("bench-session")
		b.Cleanup(func() { _ = scope.Close() })
		s, err := st.Create(ctx, scope, session.ID(fmt.Sprintf("concurrent-%03d", i)), session.Options{Header: session.Header{Cwd: "/bench"}})
		if err != nil {
			b.Fatal(err)
		}
		if err := Apply(ctx, s, []Op{TurnStart(1), User("benchmark")}); err != nil {
			b.Fatal(err)
		}
		if err := st.FlushSession(ctx, s); err != nil {
			b.Fatal(err)
		}
		sessions[i] = s
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	steps := b.N
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, s := range sessions {
		wg.Go(func() {
			for step := 1; step <= steps; step++ {
				ops := make([]Op, 0, 23)
				ops = append(ops, StepStart(1, step))
				for i := range 20 {
					ops = append(ops, Chunk(1, step, fmt.Sprintf("token %d ", i)))
				}
				ops = append(ops, Assistant(1, step, "a reasonably sized answer for one step of the benchmark"), StepEnd(1, step))
				if err := Apply(ctx, s, ops); err != nil {
					errs <- err
					return
				}
				if err := st.FlushSession(ctx, s); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n*steps*23)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(n), "sessions")
}

// BigLog builds a realistic log of about n events: closed turns, each a
// tool step and a final step, with 40 streamed chunks per step.
func BigLog(n int) []session.Event {
	var evs []session.Event
	for turn := 1; len(evs) < n; turn++ {
		start := int64(len(evs))
		ops := []Op{TurnStart(turn), User(fmt.Sprintf("prompt number %d: please do something useful", turn))}
		ops = append(ops, ToolStep(turn, 1, start+2, 40, llm.CallID(fmt.Sprintf("call-%d", turn)))...)
		ops = append(ops, StepStart(turn, 2))
		for i := range 40 {
			ops = append(ops, Chunk(turn, 2, fmt.Sprintf("word%d ", i)))
		}
		ops = append(ops, Assistant(turn, 2, "final answer of this turn"), StepEnd(turn, 2), TurnEnd(turn))
		evs = append(evs, Build(start, ops)...)
	}
	return evs
}

func seedBig(b *testing.B, open OpenFunc, dir string, n int) session.ID {
	b.Helper()
	be, err := open(dir, true)
	if err != nil {
		b.Fatal(err)
	}
	id := session.ID("big")
	Seed(b, be, session.Header{ID: id, CreatedAt: BaseTime, Cwd: "/big"}, BigLog(n))
	return id
}

// Seed stores evs as a new session with header h through a coordinator over
// be, in batches of at most 5,000 events, then closes the coordinator and
// be.
func Seed(tb testing.TB, be store.Backend, h session.Header, evs []session.Event) {
	tb.Helper()
	ctx := context.Background()
	scope := kernel.NewScope("seed")
	c, err := store.Attach(scope, nil, be, store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Create(ctx, h); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < len(evs); i += 5000 {
		if err := c.Append(ctx, h.ID, evs[i:min(i+5000, len(evs))]); err != nil {
			tb.Fatal(err)
		}
	}
	if err := scope.Close(); err != nil {
		tb.Fatal(err)
	}
}

// BenchLoad measures a full load (Coordinator.Load: read, parse, check,
// compute closers) of one session of about n events: "warm" on one open
// backend (as a long-lived process such as the ACP server reopens
// sessions), "cold" opening the backend, loading and closing it in every
// iteration (as `dsh --resume` does once per process).
func BenchLoad(b *testing.B, open OpenFunc, n int) {
	dir := b.TempDir()
	id := seedBig(b, open, dir, n)
	ctx := context.Background()
	load := func(b *testing.B, c *store.Coordinator) {
		_, evs, err := c.Load(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		if len(evs) < n {
			b.Fatalf("loaded %d events", len(evs))
		}
	}
	b.Run("warm", func(b *testing.B) {
		c := benchAttach(b, open, dir, false, nil)
		loop(b, func() { load(b, c) })
		b.ReportMetric(float64(n), "events")
	})
	b.Run("cold", func(b *testing.B) {
		loop(b, func() {
			be, err := open(dir, false)
			if err != nil {
				b.Fatal(err)
			}
			scope := kernel.NewScope("bench")
			c, err := store.Attach(scope, nil, be, store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			load(b, c)
			if err := scope.Close(); err != nil {
				b.Fatal(err)
			}
		})
		b.ReportMetric(float64(n), "events")
	})
}

// BenchTail measures reading the last k events of a session of about n.
func BenchTail(b *testing.B, open OpenFunc, n, k int) {
	dir := b.TempDir()
	id := seedBig(b, open, dir, n)
	c := benchAttach(b, open, dir, false, nil)
	ctx := context.Background()
	loop(b, func() {
		_, evs, err := c.Tail(ctx, id, k)
		if err != nil {
			b.Fatal(err)
		}
		if len(evs) != k {
			b.Fatalf("tail returned %d events", len(evs))
		}
	})
}

// BenchList measures listing n stored sessions (spread over 20 working
// directories); with cwd set, listing only the sessions of one of them.
func BenchList(b *testing.B, open OpenFunc, n int, cwd bool) {
	ctx := context.Background()
	dir := b.TempDir()
	be, err := open(dir, true)
	if err != nil {
		b.Fatal(err)
	}
	scope := kernel.NewScope("seed")
	c, err := store.Attach(scope, nil, be, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		id := session.ID(fmt.Sprintf("session-%05d", i))
		h := session.Header{ID: id, CreatedAt: BaseTime, Cwd: fmt.Sprintf("/work/project-%02d", i%20)}
		if err := c.Create(ctx, h); err != nil {
			b.Fatal(err)
		}
		if err := c.Append(ctx, id, Build(0, OneTurn(1, fmt.Sprintf("prompt of session %d", i)))); err != nil {
			b.Fatal(err)
		}
		if err := c.Release(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
	if err := scope.Close(); err != nil {
		b.Fatal(err)
	}
	c = benchAttach(b, open, dir, false, nil)
	q, want := store.Query{}, n
	if cwd {
		q, want = store.Query{Cwd: "/work/project-07"}, n/20
	}
	loop(b, func() {
		infos, err := c.List(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		if len(infos) != want {
			b.Fatalf("listed %d, want %d", len(infos), want)
		}
	})
}
