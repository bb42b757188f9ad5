package store

import (
	"context"
	"errors"
	"testing"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/session"
)

// collidingBackend holds one stored session "x" whose log no live session
// can continue, so adopting a live "x" is refused.
type collidingBackend struct{}

func (collidingBackend) Name() string                                { return "colliding" }
func (collidingBackend) Lock(context.Context, session.ID) error      { return nil }
func (collidingBackend) Unlock(session.ID) error                     { return nil }
func (collidingBackend) CommitRepair(context.Context, Repair) error  { return nil }
func (collidingBackend) List(context.Context, Query) ([]Info, error) { return nil, nil }
func (collidingBackend) Close() error                                { return nil }
func (collidingBackend) AppendBatch(context.Context, Batch) error {
	return errors.New("nothing may be written")
}
func (b collidingBackend) LoadLive(ctx context.Context, id session.ID, _ string) (*Stored, error) {
	return b.LoadStored(ctx, id)
}
func (collidingBackend) LoadStored(_ context.Context, id session.ID) (*Stored, error) {
	h := session.Header{ID: id, Version: session.FormatVersion}
	return &Stored{Header: h, Events: []session.Event{{Type: session.TypeTurnStart, Seq: 0, Time: 1, Data: []byte(`{"turn":1}`)}}}, nil
}
func (collidingBackend) Tail(context.Context, session.ID, int) (session.Header, []session.Event, error) {
	return session.Header{}, nil, ErrNotFound
}

// TestRefusedSessionIsNotBuffered: a live session whose adoption was refused
// (an id collision) will never be written, so the coordinator keeps no copy
// of its events; every flush still reports the refusal.
func TestRefusedSessionIsNotBuffered(t *testing.T) {
	ctx := context.Background()
	scope := kernel.NewScope("t")
	defer scope.Close()
	st := session.NewLive(nil)
	c, err := Attach(scope, st, collidingBackend{}, Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	s, err := st.Create(ctx, scope, "x", session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if _, err := s.Append(ctx, "plugin/note", map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			if err := c.Flush(ctx, s); !errors.Is(err, ErrCollision) {
				t.Fatalf("flush: %v, want the collision", err)
			}
		}
	}
	c.mu.Lock()
	n := len(c.bufs[s])
	c.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d events buffered for a session that can never be written", n)
	}
}
