package jsonl

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store/storetest"
)

// flushTurns appends and flushes turns turns of s one at a time, calling
// flushed after each flush; errors go to t.Error (it runs on goroutines).
func flushTurns(t *testing.T, h *harness, s *session.Session, turns int, flushed func()) {
	for turn := 1; turn <= turns; turn++ {
		if err := storetest.Apply(h.ctx, s, []storetest.Op{storetest.TurnStart(turn), storetest.TurnEnd(turn)}); err != nil {
			t.Error(err)
			return
		}
		if err := h.st.FlushSession(h.ctx, s); err != nil {
			t.Error(err)
			return
		}
		flushed()
	}
}

// TestConcurrentFlushesAndRangeReads flushes sessions at once while a
// viewer of each reads its stored events back by range, as dsh serve's
// event streams and payload read-backs do while the session writes: each
// read gets the events it asked for, contiguous from its start. Under
// -race it guards a handle's path and line offsets, which the writer
// extends while readers seek by them.
func TestConcurrentFlushesAndRangeReads(t *testing.T) {
	h := newHarness(t, t.TempDir(), Options{NoSync: true})
	const sessions, turns = 8, 12
	var wg sync.WaitGroup
	for i := range sessions {
		s := h.live(session.ID(fmt.Sprintf("r%d", i)), "/w")
		var stored atomic.Int64
		done := make(chan struct{})
		wg.Go(func() {
			defer close(done)
			flushTurns(t, h, s, turns, func() { stored.Store(int64(s.Len())) })
		})
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				n := stored.Load()
				if n == 0 {
					continue
				}
				from := n / 2
				next := from
				err := h.b.ReadRange(h.ctx, s.ID(), from, n, func(e session.Event) error {
					if e.Seq != next {
						return fmt.Errorf("read seq %d, want %d", e.Seq, next)
					}
					next++
					return nil
				})
				if err == nil && next != n {
					err = fmt.Errorf("read up to %d, want %d", next, n)
				}
				if err != nil {
					t.Errorf("%s [%d, %d): %v", s.ID(), from, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
