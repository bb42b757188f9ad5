package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dshq/dsh/kernel"
)

// Parallel listeners run on their own goroutines; goleak proves Run never
// returns while one of them is still alive.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// trace is a goroutine-safe record of which listeners ran.
type trace struct {
	mu  sync.Mutex
	got []string
}

func (tr *trace) add(s string) {
	tr.mu.Lock()
	tr.got = append(tr.got, s)
	tr.mu.Unlock()
}

func (tr *trace) list() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.got)
}

func wantTrace(t *testing.T, tr *trace, want ...string) {
	t.Helper()
	if got := tr.list(); !slices.Equal(got, want) {
		t.Fatalf("ran %v, want %v", got, want)
	}
}

// wrap is a Chain listener that records entry and exit around next.
func wrap(tr *trace, name string) kernel.Around[string, string] {
	return func(ctx context.Context, in string, next kernel.Next[string, string]) (string, error) {
		tr.add(name + ">")
		out, err := next(ctx, in)
		tr.add("<" + name)
		return name + "(" + out + ")", err
	}
}

func echoCore(tr *trace) kernel.Next[string, string] {
	return func(_ context.Context, in string) (string, error) {
		tr.add("core")
		return in, nil
	}
}

func TestChainRunsFirstRegisteredOutermost(t *testing.T) {
	c := kernel.NewChain[string, string]("test/chain")
	tr := &trace{}
	c.Use(wrap(tr, "a"))
	c.Use(wrap(tr, "b"))
	c.Use(wrap(tr, "c"))
	out, err := c.Run(context.Background(), "x", echoCore(tr))
	if err != nil {
		t.Fatal(err)
	}
	if out != "a(b(c(x)))" {
		t.Fatalf("out %q", out)
	}
	wantTrace(t, tr, "a>", "b>", "c>", "core", "<c", "<b", "<a")
	if c.Len() != 3 {
		t.Fatalf("Len %d", c.Len())
	}
}

func TestChainWithoutListenersCallsCore(t *testing.T) {
	var c kernel.Chain[string, string] // the zero Chain is usable
	tr := &trace{}
	out, err := c.Run(context.Background(), "x", echoCore(tr))
	if err != nil || out != "x" {
		t.Fatalf("out %q err %v", out, err)
	}
	wantTrace(t, tr, "core")
}

func TestChainNilCoreReturnsZero(t *testing.T) {
	c := kernel.NewChain[string, string]("test/chain")
	tr := &trace{}
	c.Use(wrap(tr, "a"))
	out, err := c.Run(context.Background(), "x", nil)
	if err != nil || out != "a()" {
		t.Fatalf("out %q err %v", out, err)
	}
}

func TestChainPrepend(t *testing.T) {
	c := kernel.NewChain[string, string]("test/chain")
	tr := &trace{}
	c.Use(wrap(tr, "a"))
	c.Use(wrap(tr, "b"))
	c.Use(wrap(tr, "first"), kernel.Prepend())
	out, err := c.Run(context.Background(), "x", echoCore(tr))
	if err != nil {
		t.Fatal(err)
	}
	if out != "first(a(b(x)))" {
		t.Fatalf("out %q", out)
	}
}

func TestChainShortCircuit(t *testing.T) {
	c := kernel.NewChain[string, string]("test/chain")
	tr := &trace{}
	c.Use(wrap(tr, "outer"))
	c.Use(func(context.Context, string, kernel.Next[string, string]) (string, error) {
		tr.add("veto")
		return "vetoed", nil
	})
	c.Use(wrap(tr, "inner"))
	out, err := c.Run(context.Background(), "x", echoCore(tr))
	if err != nil || out != "outer(vetoed)" {
		t.Fatalf("out %q err %v", out, err)
	}
	wantTrace(t, tr, "outer>", "veto", "<outer")
}

func TestChainErrorPropagatesOutward(t *testing.T) {
	c := kernel.NewChain[string, string]("test/chain")
	boom := errors.New("boom")
	var outerSaw error
	c.Use(func(ctx context.Context, in string, next kernel.Next[string, string]) (string, error) {
		out, err := next(ctx, in)
		outerSaw = err
		return out, err
	})
	c.Use(func(context.Context, string, kernel.Next[string, string]) (string, error) { return "", boom })
	_, err := c.Run(context.Background(), "x", func(context.Context, string) (string, error) {
		t.Error("core ran after a listener failed")
		return "", nil
	})
	if !errors.Is(err, boom) || !errors.Is(outerSaw, boom) {
		t.Fatalf("err %v, outer saw %v", err, outerSaw)
	}
}

type ctxKey struct{}

func TestChainNextWithChangedInputAndContext(t *testing.T) {
	c := kernel.NewChain[string, string]("test/chain")
	c.Use(func(ctx context.Context, in string, next kernel.Next[string, string]) (string, error) {
		return next(context.WithValue(ctx, ctxKey{}, "from-a"), strings.ToUpper(in))
	})
	var innerIn, innerCtx string
	c.Use(func(ctx context.Context, in string, next kernel.Next[string, string]) (string, error) {
		innerIn = in
		innerCtx, _ = ctx.Value(ctxKey{}).(string)
		return next(ctx, in+"!")
	})
	var coreIn, coreCtx string
	out, err := c.Run(context.Background(), "hello", func(ctx context.Context, in string) (string, error) {
		coreIn = in
		coreCtx, _ = ctx.Value(ctxKey{}).(string)
		return "core:" + in, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if innerIn != "HELLO" || innerCtx != "from-a" || coreIn != "HELLO!" || coreCtx != "from-a" || out != "core:HELLO!" {
		t.Fatalf("inner %q/%q core %q/%q out %q", innerIn, innerCtx, coreIn, coreCtx, out)
	}
}

func TestChainNextTwiceRerunsDownstream(t *testing.T) {
	c := kernel.NewChain[string, string]("test/chain")
	tr := &trace{}
	attempts := 0
	c.Use(func(ctx context.Context, in string, next kernel.Next[string, string]) (string, error) {
		if _, err := next(ctx, in+"1"); err == nil {
			t.Fatal("first attempt should fail")
		}
		return next(ctx, in+"2") // a retry
	})
	c.Use(wrap(tr, "mid"))
	out, err := c.Run(context.Background(), "x", func(_ context.Context, in string) (string, error) {
		attempts++
		tr.add("core " + in)
		if attempts == 1 {
			return "", errors.New("transient")
		}
		return in, nil
	})
	if err != nil || out != "mid(x2)" {
		t.Fatalf("out %q err %v", out, err)
	}
	// The retry ran the whole downstream chain again, not just core.
	wantTrace(t, tr, "mid>", "core x1", "<mid", "mid>", "core x2", "<mid")
}

func TestChainListenerPanicBecomesPanicError(t *testing.T) {
	c := kernel.NewChain[string, string]("test/chain")
	var outerSaw error
	c.Use(func(ctx context.Context, in string, next kernel.Next[string, string]) (string, error) {
		out, err := next(ctx, in)
		outerSaw = err
		return out, err
	})
	c.Use(func(context.Context, string, kernel.Next[string, string]) (string, error) {
		panic("listener exploded")
	}, kernel.Named("bomb"))
	_, err := c.Run(context.Background(), "x", echoCore(&trace{}))
	var pe *kernel.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("err %T %v, want *kernel.PanicError", err, err)
	}
	if pe.Point != "test/chain" || pe.Name != "bomb" || pe.Value != "listener exploded" || len(pe.Stack) == 0 {
		t.Fatalf("panic error %+v", pe)
	}
	if pe.Error() != "kernel: panic in test/chain listener bomb: listener exploded" {
		t.Fatalf("text %q", pe.Error())
	}
	// The outer listener received the panic as an ordinary error from next,
	// so it could have contained it.
	if !errors.As(outerSaw, &pe) {
		t.Fatalf("outer listener saw %v", outerSaw)
	}
}

func TestChainCorePanicBecomesPanicError(t *testing.T) {
	for _, n := range []int{0, 2} {
		t.Run(fmt.Sprintf("%d listeners", n), func(t *testing.T) {
			c := kernel.NewChain[string, string]("test/chain")
			for i := range n {
				c.Use(wrap(&trace{}, fmt.Sprint(i)))
			}
			sentinel := errors.New("panicked with an error")
			_, err := c.Run(context.Background(), "x", func(context.Context, string) (string, error) {
				panic(sentinel)
			})
			var pe *kernel.PanicError
			if !errors.As(err, &pe) || pe.Point != "test/chain" || pe.Name != "" {
				t.Fatalf("err %v", err)
			}
			// A panicked error stays reachable through the chain.
			if !errors.Is(err, sentinel) {
				t.Fatalf("errors.Is lost the panicked error: %v", err)
			}
		})
	}
}

func TestPanicErrorText(t *testing.T) {
	cases := []struct {
		pe   kernel.PanicError
		want string
	}{
		{kernel.PanicError{Point: "p", Name: "n", Value: 1}, "kernel: panic in p listener n: 1"},
		{kernel.PanicError{Point: "p", Value: "v"}, "kernel: panic in p: v"},
		{kernel.PanicError{Value: "v"}, "kernel: panic in listener: v"},
	}
	for _, c := range cases {
		if got := c.pe.Error(); got != c.want {
			t.Errorf("got %q want %q", got, c.want)
		}
	}
	if (&kernel.PanicError{Value: "not an error"}).Unwrap() != nil {
		t.Error("Unwrap of a non-error value should be nil")
	}
}

func TestDisposeRemovesOnlyItsOwnRegistration(t *testing.T) {
	c := kernel.NewChain[string, string]("test/chain")
	tr := &trace{}
	same := wrap(tr, "same")
	d1 := c.Use(same)
	c.Use(same) // the same function registered twice is two registrations
	d1()
	d1() // idempotent: must not remove the second registration
	if c.Len() != 1 {
		t.Fatalf("Len %d after disposing one of two registrations twice", c.Len())
	}
	out, _ := c.Run(context.Background(), "x", echoCore(tr))
	if out != "same(x)" {
		t.Fatalf("out %q", out)
	}
}

func TestDisposeIdempotentAcrossPointKinds(t *testing.T) {
	noop := func(context.Context, int) error { return nil }
	s := kernel.NewSerial[int]("s")
	p := kernel.NewParallel[int]("p")
	g := kernel.NewSignal[int]("g")
	ds := []func(){s.Use(noop), p.Use(noop), g.Listen(noop)}
	s.Use(noop)
	p.Use(noop)
	g.Listen(noop)
	for _, d := range ds {
		d()
		d()
	}
	if s.Len() != 1 || p.Len() != 1 || g.Len() != 1 {
		t.Fatalf("lens %d %d %d", s.Len(), p.Len(), g.Len())
	}
}

func TestReentrantRegistrationDoesNotAffectSnapshot(t *testing.T) {
	c := kernel.NewChain[string, string]("test/chain")
	tr := &trace{}
	var disposeB func()
	c.Use(func(ctx context.Context, in string, next kernel.Next[string, string]) (string, error) {
		tr.add("a")
		// Registering and disposing during dispatch changes the list for the
		// next dispatch only.
		c.Use(wrap(tr, "late"))
		disposeB()
		return next(ctx, in)
	})
	disposeB = c.Use(wrap(tr, "b"))
	if _, err := c.Run(context.Background(), "x", echoCore(tr)); err != nil {
		t.Fatal(err)
	}
	wantTrace(t, tr, "a", "b>", "core", "<b")
	if c.Len() != 2 {
		t.Fatalf("Len %d", c.Len())
	}

	g := kernel.NewSignal[int]("g")
	gt := &trace{}
	g.Listen(func(context.Context, int) error {
		gt.add("first")
		g.Listen(func(context.Context, int) error { gt.add("added"); return nil }, kernel.Prepend())
		return nil
	})
	if err := g.Emit(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	wantTrace(t, gt, "first")
	if err := g.Emit(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	wantTrace(t, gt, "first", "added", "first")
}

func TestConcurrentRegistrationAndDispatch(t *testing.T) {
	// Run with -race: registration is copy-on-write, dispatch takes no lock.
	g := kernel.NewSignal[int]("g")
	var calls atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				d := g.Listen(func(context.Context, int) error { calls.Add(1); return nil })
				_ = g.Emit(context.Background(), 0)
				d()
			}
		})
	}
	wg.Wait()
	if g.Len() != 0 {
		t.Fatalf("%d listeners left", g.Len())
	}
	if calls.Load() < 800 {
		t.Fatalf("each emit should reach at least its own listener: %d calls", calls.Load())
	}
}

func recorder(tr *trace, name string, err error) kernel.Listener[int] {
	return func(context.Context, int) error {
		tr.add(name)
		return err
	}
}

func TestSerialOrderAndFirstErrorStops(t *testing.T) {
	s := kernel.NewSerial[int]("test/serial")
	tr := &trace{}
	boom := errors.New("boom")
	s.Use(recorder(tr, "b", nil))
	s.Use(recorder(tr, "c", boom))
	s.Use(recorder(tr, "d", nil))
	s.Use(recorder(tr, "a", nil), kernel.Prepend())
	if err := s.Run(context.Background(), 0); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	wantTrace(t, tr, "a", "b", "c")
}

func TestSerialErrStopEndsSilently(t *testing.T) {
	s := kernel.NewSerial[int]("test/serial")
	tr := &trace{}
	s.Use(recorder(tr, "a", nil))
	s.Use(recorder(tr, "bail", fmt.Errorf("done early: %w", kernel.ErrStop)))
	s.Use(recorder(tr, "never", nil))
	if err := s.Run(context.Background(), 0); err != nil {
		t.Fatalf("ErrStop (even wrapped) must end the run without an error, got %v", err)
	}
	wantTrace(t, tr, "a", "bail")
}

func TestSerialPassesValueAndRecoversPanic(t *testing.T) {
	s := kernel.NewSerial[int]("test/serial")
	var got int
	s.Use(func(_ context.Context, v int) error { got = v; return nil })
	s.Use(func(context.Context, int) error { panic("serial bomb") }, kernel.Named("bomb"))
	err := s.Run(context.Background(), 42)
	var pe *kernel.PanicError
	if got != 42 || !errors.As(err, &pe) || pe.Point != "test/serial" || pe.Name != "bomb" {
		t.Fatalf("got %d err %v", got, err)
	}
}

func TestParallelRunsConcurrently(t *testing.T) {
	p := kernel.NewParallel[int]("test/parallel")
	const n = 4
	// Every listener waits until all n have started: only possible when they
	// run at the same time. The timeout turns a sequential implementation
	// into a failure instead of a hang.
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	var met atomic.Int32
	for range n {
		p.Use(func(context.Context, int) error {
			arrived.Done()
			select {
			case <-all:
				met.Add(1)
				return nil
			case <-time.After(5 * time.Second):
				return errors.New("listeners did not run concurrently")
			}
		})
	}
	if err := p.Run(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if met.Load() != n {
		t.Fatalf("%d of %d listeners met at the barrier", met.Load(), n)
	}
}

func TestParallelJoinsErrorsAfterAllFinish(t *testing.T) {
	p := kernel.NewParallel[int]("test/parallel")
	e1, e2 := errors.New("one"), errors.New("two")
	var slowDone atomic.Bool
	p.Use(func(context.Context, int) error { return e1 })
	p.Use(func(context.Context, int) error {
		time.Sleep(20 * time.Millisecond)
		slowDone.Store(true)
		return nil
	})
	p.Use(func(context.Context, int) error { return e2 })
	p.Use(func(context.Context, int) error { panic("parallel bomb") }, kernel.Named("bomb"))
	err := p.Run(context.Background(), 0)
	if !slowDone.Load() {
		t.Fatal("Run returned before every listener finished")
	}
	var pe *kernel.PanicError
	if !errors.Is(err, e1) || !errors.Is(err, e2) || !errors.As(err, &pe) || pe.Name != "bomb" {
		t.Fatalf("err %v", err)
	}
}

func TestParallelSingleAndNone(t *testing.T) {
	p := kernel.NewParallel[int]("test/parallel")
	if err := p.Run(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	p.Use(func(context.Context, int) error { panic("alone") })
	var pe *kernel.PanicError
	if err := p.Run(context.Background(), 0); !errors.As(err, &pe) {
		t.Fatalf("single-listener fast path must recover panics too: %v", err)
	}
}

func TestSignalEmitStopsAtFirstError(t *testing.T) {
	g := kernel.NewSignal[int]("test/signal")
	tr := &trace{}
	boom := errors.New("boom")
	g.Listen(recorder(tr, "a", nil))
	g.Listen(recorder(tr, "b", boom))
	g.Listen(recorder(tr, "c", nil))
	if err := g.Emit(context.Background(), 0); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	wantTrace(t, tr, "a", "b")
}

func TestSignalEmitAllContinues(t *testing.T) {
	g := kernel.NewSignal[int]("test/signal")
	tr := &trace{}
	e1, e2 := errors.New("one"), errors.New("two")
	g.Listen(recorder(tr, "a", e1))
	g.Listen(func(context.Context, int) error { tr.add("bomb"); panic("x") })
	g.Listen(recorder(tr, "c", e2))
	g.Listen(recorder(tr, "d", nil))
	err := g.EmitAll(context.Background(), 0)
	wantTrace(t, tr, "a", "bomb", "c", "d")
	var pe *kernel.PanicError
	if !errors.Is(err, e1) || !errors.Is(err, e2) || !errors.As(err, &pe) || pe.Point != "test/signal" {
		t.Fatalf("err %v", err)
	}
	if err := kernel.NewSignal[int]("empty").EmitAll(context.Background(), 0); err != nil {
		t.Fatalf("no listeners: %v", err)
	}
}

func TestSignalEmitRecoversPanic(t *testing.T) {
	g := kernel.NewSignal[int]("test/signal")
	tr := &trace{}
	g.Listen(func(context.Context, int) error { panic("boom") })
	g.Listen(recorder(tr, "after", nil))
	var pe *kernel.PanicError
	if err := g.Emit(context.Background(), 0); !errors.As(err, &pe) {
		t.Fatalf("err %v", err)
	}
	wantTrace(t, tr)
}

// BenchmarkChainRun measures the per-dispatch overhead of a three-listener
// chain (the shape of the busiest points, e.g. llm/stream with retry,
// logging and replay listeners).
func BenchmarkChainRun(b *testing.B) {
	c := kernel.NewChain[int, int]("bench/chain")
	for range 3 {
		c.Use(func(ctx context.Context, in int, next kernel.Next[int, int]) (int, error) {
			return next(ctx, in+1)
		})
	}
	core := func(_ context.Context, in int) (int, error) { return in, nil }
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if out, err := c.Run(ctx, 0, core); err != nil || out != 3 {
			b.Fatal(out, err)
		}
	}
}

// BenchmarkSignalEmit measures a two-listener notification (the shape of
// session/event with persistence and a UI listening).
func BenchmarkSignalEmit(b *testing.B) {
	g := kernel.NewSignal[int]("bench/signal")
	var n int
	for range 2 {
		g.Listen(func(_ context.Context, v int) error { n += v; return nil })
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := g.Emit(ctx, 1); err != nil {
			b.Fatal(err)
		}
	}
	if n == 0 {
		b.Fatal("listeners never ran")
	}
}
