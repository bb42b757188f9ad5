package store

import (
	"context"
	"fmt"
	"time"

	"github.com/dshq/dsh/session"
)

// Watcher is implemented by backends that can ring a doorbell when a
// session's stored log grows (store/postgres: LISTEN/NOTIFY). The bell
// carries no events: a follower re-reads from the last seq it has, so a
// lost or coalesced ring costs latency, never an event.
type Watcher interface {
	// Watch returns a channel that receives (coalesced: it holds at most
	// one pending ring) after each commit to id from now on, and also
	// whenever commits may have been missed (a reconnect). stop ends the
	// subscription.
	Watch(ctx context.Context, id session.ID) (bell <-chan struct{}, stop func(), err error)
}

// RangeReader is implemented by backends that read a session from a seq on
// without reading what comes before.
type RangeReader interface {
	// ReadFrom returns the header and the intact stored events with seq >=
	// from, in order, stopping before a torn row or a hole. It never
	// repairs.
	ReadFrom(ctx context.Context, id session.ID, from int64) (session.Header, []session.Event, error)
}

// FollowOptions tune [Coordinator.Follow].
type FollowOptions struct {
	// Poll is how often the log is re-read without a ring: the only
	// trigger for backends without a doorbell (default 200ms), a safety
	// net for those with one (default 5s).
	Poll time.Duration
}

// Follow calls fn with every stored event of id from seq from on, in
// order, as each batch commits (in this process or any other sharing the
// store), until ctx ends or fn fails; it returns that error. It reads what
// is committed, like [Coordinator.Read]: it takes no lock and never
// repairs, so an open turn stays open until its writer (or the next
// holder's repair) closes it. The ACP server, the server mode and `dsh
// sessions tail --follow` all follow sessions through it.
func (c *Coordinator) Follow(ctx context.Context, id session.ID, from int64, fn func(session.Event) error, o FollowOptions) error {
	if err := checkID(id); err != nil {
		return err
	}
	var bell <-chan struct{}
	if w, ok := c.backend.(Watcher); ok {
		ch, stop, err := w.Watch(ctx, id)
		if err != nil {
			return err
		}
		defer stop()
		bell = ch
		if o.Poll <= 0 {
			o.Poll = 5 * time.Second
		}
	} else if o.Poll <= 0 {
		o.Poll = 200 * time.Millisecond
	}
	tick := time.NewTicker(o.Poll)
	defer tick.Stop()
	next := from
	for {
		evs, err := c.readFrom(ctx, id, next)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if err := fn(e); err != nil {
				return err
			}
			next = e.Seq + 1
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-bell:
		case <-tick.C:
		}
	}
}

// readFrom returns the stored events of id from seq from on, reading as
// little as the backend allows: a range read, else the tail.
func (c *Coordinator) readFrom(ctx context.Context, id session.ID, from int64) ([]session.Event, error) {
	if r, ok := c.backend.(RangeReader); ok {
		_, evs, err := r.ReadFrom(ctx, id, from)
		return evs, err
	}
	_, last, err := c.backend.Tail(ctx, id, 1)
	if err != nil || len(last) == 0 || last[0].Seq < from {
		return nil, err
	}
	_, evs, err := c.backend.Tail(ctx, id, int(last[0].Seq-from+1))
	if err != nil {
		return nil, err
	}
	if len(evs) > 0 && evs[0].Seq <= from {
		return evs[from-evs[0].Seq:], nil
	}
	// The tail stopped short of from (a damaged row between): read it all.
	stored, err := c.backend.LoadStored(ctx, id)
	if err != nil {
		return nil, err
	}
	if stored == nil {
		return nil, fmt.Errorf("store: session %q not found: %w", id, ErrNotFound)
	}
	if int64(len(stored.Events)) <= from {
		return nil, nil
	}
	return stored.Events[from:], nil
}

// Leases returns the backend's leases, or nil when its locks are not
// leases (JSONL and SQLite lock files are released by the kernel when
// their process dies).
func (c *Coordinator) Leases() Leaser {
	l, _ := c.backend.(Leaser)
	return l
}

// ReadFrom returns the stored events of id with seq >= from, in order,
// reading as little as the backend allows (a range read where it has one).
// Like Read it takes no lock and never repairs. A server pages a session's
// history through it without holding the log.
func (c *Coordinator) ReadFrom(ctx context.Context, id session.ID, from int64) ([]session.Event, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	return c.readFrom(ctx, id, from)
}

// Deleter is implemented by backends that can delete a stored session.
type Deleter interface {
	// Delete removes the stored log and listing entry of id. The caller
	// makes sure no process writes it (it holds no live session).
	Delete(ctx context.Context, id session.ID) error
}

// Deleter returns the backend's deleter, when it has one.
func (c *Coordinator) Deleter() (Deleter, bool) {
	d, ok := c.backend.(Deleter)
	return d, ok
}
