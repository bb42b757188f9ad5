package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/session"
)

// laneEvent is the payload of churn's events: which lane wrote it and its
// place in that lane's history, so the stored log shows any event lost,
// written twice or out of order.
type laneEvent struct {
	Lane int `json:"lane"`
	N    int `json:"n"`
}

const typeLane = "test/lane"

// churn is a server's life in miniature, many sessions at once through one
// coordinator: each lane appends to its session, flushing now and then as
// the agent loop does and sometimes from a goroutine of its own (as an
// injection's flush does), is evicted (its scope closed, then Release)
// while such a flush may still run, and is loaded again as a new live session
// that goes on appending; meanwhile another goroutine flushes whichever
// sessions are live, evicted ones included. Once the coordinator is
// closed, every session's stored log is exactly what its lane appended:
// none lost, none written twice, in order, seqs contiguous, and the
// backend was handed each event once.
func churn(e *env) {
	const lanes, generations, maxEvents = 8, 4, 24
	seed := rand.Uint64()
	e.t.Logf("seed %d", seed)
	st := newStore()
	a := e.attach(st)
	ctx := context.Background()

	var mu sync.Mutex
	current := make([]*session.Session, lanes) // the lanes' live sessions, for the stray flusher
	stop := make(chan struct{})
	var stray sync.WaitGroup
	var strayFlushes atomic.Int64
	stray.Go(func() {
		r := rand.New(rand.NewPCG(seed, 0))
		for {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			s := current[r.IntN(lanes)]
			mu.Unlock()
			if s != nil {
				// An evicted session's flush may fail; it must neither
				// write nor take the id from its successor.
				_ = st.FlushSession(ctx, s)
				strayFlushes.Add(1)
			}
		}
	})

	errs := make(chan error, lanes)
	appended := make([]int, lanes)
	var wg sync.WaitGroup
	for lane := range lanes {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(lane)+1))
			id := session.ID(fmt.Sprintf("churn-%d", lane))
			n := 0
			for gen := range generations {
				opts := session.Options{Header: header(id, "/w")}
				if gen > 0 {
					h, evs, err := a.c.Load(ctx, id)
					if err != nil {
						errs <- fmt.Errorf("lane %d generation %d: load: %w", lane, gen, err)
						return
					}
					if len(evs) != n {
						errs <- fmt.Errorf("lane %d generation %d: loaded %d events, appended %d", lane, gen, len(evs), n)
						return
					}
					opts = session.Options{Header: h, Seed: evs}
				}
				scope := kernel.NewScope(fmt.Sprintf("churn-%d-%d", lane, gen))
				s, err := st.Create(ctx, scope, id, opts)
				if err != nil {
					errs <- fmt.Errorf("lane %d generation %d: create: %w", lane, gen, err)
					return
				}
				mu.Lock()
				current[lane] = s
				mu.Unlock()
				var flushes sync.WaitGroup
				for range 1 + r.IntN(maxEvents) {
					if _, err := s.Append(ctx, typeLane, laneEvent{Lane: lane, N: n}); err != nil {
						errs <- fmt.Errorf("lane %d: append %d: %w", lane, n, err)
						return
					}
					n++
					switch r.IntN(8) {
					case 0:
						if err := st.FlushSession(ctx, s); err != nil {
							errs <- fmt.Errorf("lane %d: flush after %d: %w", lane, n, err)
							return
						}
					case 1:
						flushes.Go(func() { _ = st.FlushSession(ctx, s) })
					}
				}
				// Evicted as an agent's disposal does it: the session
				// leaves the live set, then its pending events are stored
				// and the id let go, while a flush of it may still run.
				if err := scope.Close(); err != nil {
					errs <- fmt.Errorf("lane %d generation %d: closing: %w", lane, gen, err)
					return
				}
				if err := a.c.Release(ctx, id); err != nil {
					errs <- fmt.Errorf("lane %d generation %d: release: %w", lane, gen, err)
					return
				}
				flushes.Wait()
			}
			appended[lane] = n
		})
	}
	wg.Wait()
	close(stop)
	stray.Wait()
	close(errs)
	for err := range errs {
		e.t.Fatal(err)
	}
	a.close(e.t)
	total := 0
	for lane := range lanes {
		id := session.ID(fmt.Sprintf("churn-%d", lane))
		_, evs := e.read(id)
		if len(evs) != appended[lane] {
			e.t.Fatalf("%s: %d events stored, %d appended", id, len(evs), appended[lane])
		}
		for i, ev := range evs {
			var got laneEvent
			if err := json.Unmarshal(ev.Data, &got); err != nil || ev.Seq != int64(i) || ev.Type != typeLane || got != (laneEvent{Lane: lane, N: i}) {
				e.t.Fatalf("%s: stored event %d is seq %d %s %s (%v), want seq %d lane %d n %d", id, i, ev.Seq, ev.Type, ev.Data, err, i, lane, i)
			}
		}
		total += appended[lane]
	}
	if n, _ := a.fb.Counts(); n != total {
		e.t.Fatalf("the backend was handed %d events, %d were appended", n, total)
	}
	e.t.Logf("%d events in %d sessions, %d stray flushes", total, lanes, strayFlushes.Load())
}
