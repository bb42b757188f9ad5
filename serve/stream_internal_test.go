package serve

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
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
