package jsonl

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/internal/flock"
)

// TestLockDoesNotStallOtherSessions: taking one session's lock file (slow
// on a busy disk) must not hold up another session's append. The lock of
// "slow" is held up until the append of "a" has finished, or 5 s have
// passed; the append must finish first.
func TestLockDoesNotStallOtherSessions(t *testing.T) {
	gate := make(chan struct{})
	var gateOnce sync.Once
	open := func() { gateOnce.Do(func() { close(gate) }) }
	defer open()
	entered := make(chan struct{})
	defer func(orig func(string) (*flock.Lock, error)) { acquire = orig }(acquire)
	acquire = func(p string) (*flock.Lock, error) {
		if strings.HasPrefix(filepath.Base(p), "slow") {
			close(entered)
			<-gate
		}
		return flock.Acquire(p)
	}
	b, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	if err := b.Lock(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	hd := session.Header{ID: "a", Version: session.FormatVersion, Cwd: "/w"}
	ev := session.Event{Type: "user/message", Seq: 0, Time: 1, Data: []byte(`{"text":"hi"}`)}
	if err := b.AppendBatch(ctx, store.Batch{Header: hd, Events: []session.Event{ev}}); err != nil {
		t.Fatal(err)
	}
	locked := make(chan error, 1)
	go func() { locked <- b.Lock(ctx, "slow") }()
	<-entered
	var released atomic.Bool
	appended := make(chan struct{})
	var timer sync.WaitGroup
	timer.Go(func() {
		select {
		case <-appended:
		case <-time.After(5 * time.Second):
			released.Store(true)
			open()
		}
	})
	defer timer.Wait()
	defer close(appended)
	ev.Seq = 1
	if err := b.AppendBatch(ctx, store.Batch{Header: hd, Events: []session.Event{ev}, Materialized: true}); err != nil {
		t.Fatal(err)
	}
	if released.Load() {
		t.Fatal("the append of session a waited for the lock file of session slow")
	}
	open()
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentLockOfOneID: locks of one id taken at once all succeed (the
// lock is idempotent) and leave one handle, released by one Unlock.
func TestConcurrentLockOfOneID(t *testing.T) {
	// The first lock file taken is held up until every Lock has started
	// (and a moment more), so the others arrive while it is under way.
	gate := make(chan struct{})
	var first sync.Once
	defer func(orig func(string) (*flock.Lock, error)) { acquire = orig }(acquire)
	acquire = func(p string) (*flock.Lock, error) {
		first.Do(func() { <-gate })
		return flock.Acquire(p)
	}
	b, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var wg, started sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		started.Add(1)
		wg.Go(func() {
			started.Done()
			errs <- b.Lock(context.Background(), "x")
		})
	}
	started.Wait()
	time.Sleep(50 * time.Millisecond) // not a condition: only widens the overlap
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(b.handles); n != 1 {
		t.Fatalf("%d handles, want 1", n)
	}
	if err := b.Unlock("x"); err != nil {
		t.Fatal(err)
	}
	other, err := Open(b.root, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Lock(context.Background(), "x"); err != nil {
		t.Fatalf("after Unlock the lock is still held: %v", err)
	}
}
