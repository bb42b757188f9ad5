package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dshq/dsh/internal/pgtest"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/storetest"
)

// TestFollow: a follower in another "process" (its own backend) sees every
// committed event in order, woken by the doorbell alone (its poll is an
// hour), also across a lost listener connection.
func TestFollow(t *testing.T) {
	ctx := context.Background()
	url, schema := pgtest.Schema(t)
	w := newWriter(t, url, schema, Options{})
	f := newWriter(t, url, schema, Options{})
	id := session.ID("followed")
	if err := w.c.Create(ctx, hdr(id)); err != nil {
		t.Fatal(err)
	}
	log := storetest.Build(0, storetest.OneTurn(1, "one"))
	if err := w.c.Append(ctx, id, log); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithCancel(ctx)
	got := make(chan session.Event, 64)
	done := make(chan error, 1)
	go func() {
		done <- f.c.Follow(fctx, id, 2, func(e session.Event) error { got <- e; return nil }, store.FollowOptions{Poll: time.Hour})
	}()
	next := int64(2)
	expect := func(n int) {
		t.Helper()
		for range n {
			select {
			case e := <-got:
				if e.Seq != next || !store.EventsEqual(e, log[next]) {
					t.Fatalf("got seq %d (%s), want %d", e.Seq, e.Type, next)
				}
				next++
			case <-time.After(10 * time.Second):
				t.Fatalf("no event %d", next)
			}
		}
	}
	expect(4) // from seq 2 on
	for turn := 2; turn <= 3; turn++ {
		more := storetest.Build(int64(len(log)), storetest.OneTurn(turn, fmt.Sprint("turn ", turn)))
		log = append(log, more...)
		if err := w.c.Append(ctx, id, more); err != nil {
			t.Fatal(err)
		}
		expect(len(more))
	}
	// The listener's connection dies; a commit made before it reconnects
	// is still delivered (every follower is rung after a reconnect).
	pgtest.Exec(t, url, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1`, `LISTEN "`+schema+`_events"`)
	more := storetest.Build(int64(len(log)), storetest.OneTurn(4, "after the drop"))
	log = append(log, more...)
	if err := w.c.Append(ctx, id, more); err != nil {
		t.Fatal(err)
	}
	expect(len(more))
	select {
	case e := <-got:
		t.Fatalf("an extra event %d", e.Seq)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("follow ended with %v", err)
	}
	// A follower of a session that does not exist is told so.
	if err := f.c.Follow(ctx, "missing", 0, func(session.Event) error { return nil }, store.FollowOptions{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("follow a missing session: %v", err)
	}
}
