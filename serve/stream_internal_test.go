package serve

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dshq/dsh/session"
)

// TestStreamHelpersDoneBeforeReturn: a stream's heartbeat (run beside
// its main loop as streamSSE and streamWS run it) has finished writing
// before the handler returns — a ping still in progress when the main
// loop ends is waited for, and no goroutine outlives the call.
func TestStreamHelpersDoneBeforeReturn(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s := &Server{o: Options{Heartbeat: time.Microsecond}}
	for i := range 20 {
		var writing atomic.Int32
		// The ping is a write that finishes only after the stream's end
		// was signalled, as a write to a slow client would.
		ping := func(ctx context.Context) func() error {
			return func() error {
				writing.Add(1)
				<-ctx.Done()
				time.Sleep(time.Millisecond)
				writing.Add(-1)
				return nil
			}
		}
		beside(context.Background(), func(context.Context) {
			for writing.Load() == 0 {
				runtime.Gosched()
			}
		}, func(ctx context.Context) { s.heartbeat(ctx, ping(ctx)) })
		if n := writing.Load(); n != 0 {
			t.Fatalf("run %d: the heartbeat was still writing when the handler returned", i)
		}
	}
}

// TestFollowMemoryFlushesEachRun: followMemory, as the SSE stream uses
// it, calls caughtUp after every run of events it had — so nothing it
// emitted stays buffered while it waits for the next event — and once per
// run, not per event: five events appended before it looked are one
// flush (one write to the client instead of five).
func TestFollowMemoryFlushesEachRun(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sess, err := session.New("s", session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := sess.Append(ctx, "x/test", map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var pending, sent []int64
	flushes := 0
	flushed := make(chan struct{}, 100)
	var next int64
	gone := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- followMemory(ctx, sess, &next, gone, func(ev session.Event) error {
			mu.Lock()
			defer mu.Unlock()
			pending = append(pending, ev.Seq)
			next = ev.Seq + 1 // as follow's emit advances it
			return nil
		}, func() error {
			mu.Lock()
			defer mu.Unlock()
			if len(pending) > 0 {
				sent = append(sent, pending...)
				pending = pending[:0]
				flushes++
			}
			select {
			case flushed <- struct{}{}:
			default:
			}
			return nil
		})
	}()
	// sent reaches want before follow waits (it flushes after each run);
	// a run left unflushed shows as a timeout.
	waitSent := func(want int) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			mu.Lock()
			n := len(sent)
			mu.Unlock()
			if n >= want {
				return
			}
			select {
			case <-flushed:
			case <-deadline:
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("sent %v, still buffered %v: the run was not flushed before follow waited", sent, pending)
			}
		}
	}
	waitSent(5)
	mu.Lock()
	if flushes != 1 {
		t.Errorf("five events already in the log took %d flushes, want 1", flushes)
	}
	mu.Unlock()
	for i := range 3 {
		if _, err := sess.Append(ctx, "x/test", map[string]int{"i": 5 + i}); err != nil {
			t.Fatal(err)
		}
		waitSent(6 + i)
	}
	close(gone)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, seq := range sent {
		if seq != int64(i) {
			t.Fatalf("sent %v, want every seq once in order", sent)
		}
	}
	if len(sent) != 8 || len(pending) != 0 {
		t.Fatalf("sent %v, pending %v", sent, pending)
	}
}
