package store

import (
	"context"
	"fmt"

	"github.com/dshq/dsh/session"
)

// Scan reads a stored session for viewing, like [Coordinator.Read] (no lock,
// no repair, a torn tail left out), but a span at a time: it calls head
// (when not nil) with the header, then fn with each stored event in seq
// order. Memory stays
// bounded however long the log is, which is what `dsh sessions show` and
// `export` need for a million-event session. The end is fixed when the scan
// starts (the last intact event then), so a session another process is
// writing yields a consistent prefix. A backend that cannot read a span at a
// time is read whole. fn's error stops the scan and is returned.
func (c *Coordinator) Scan(ctx context.Context, id session.ID, head func(session.Header) error, fn func(session.Event) error) error {
	if err := checkID(id); err != nil {
		return err
	}
	if head == nil {
		head = func(session.Header) error { return nil }
	}
	sr, ok := c.backend.(SpanReader)
	if !ok {
		h, events, err := c.Read(ctx, id)
		if err != nil {
			return err
		}
		if err := head(h); err != nil {
			return err
		}
		for _, e := range events {
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	}
	h, last, err := c.backend.Tail(ctx, id, 1)
	if err != nil {
		return err
	}
	if h.Version != session.FormatVersion {
		return versionError(id, h.Version)
	}
	if err := head(h); err != nil || len(last) == 0 {
		return err
	}
	return sr.ReadRange(ctx, id, 0, last[0].Seq+1, fn)
}

// Export streams a stored session as resuming it would see it, for copying
// it elsewhere: it holds the session's writer lock while it reads (a session
// another process is writing fails with an [*InUseError] instead of being
// read half-written), calls fn with every stored event and then with the
// closers of a final turn a crash left open ([session.InterruptedClosers])
// (head first, as for Scan). Unlike [Coordinator.Load] it leaves the stored log
// as it is (the closers are fn's alone) and keeps no more than the open
// step's events in memory.
func (c *Coordinator) Export(ctx context.Context, id session.ID, head func(session.Header) error, fn func(session.Event) error) error {
	if c.isClosed() {
		return fmt.Errorf("store: %w", ErrClosed)
	}
	if err := checkID(id); err != nil {
		return err
	}
	unlock, err := c.lockID(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	if st := c.state(id); st != nil && st.owner != nil {
		if c.sessions != nil {
			if live, ok := c.sessions.Get(id); ok && live == st.owner {
				return fmt.Errorf("store: cannot export %q: it is live in this process (%w)", id, ErrLive)
			}
		}
		if err := c.drainLocked(ctx, st.owner); err != nil {
			return err
		}
	}
	defer c.unlockIfUntracked(id)
	if err := c.backend.Lock(ctx, id); err != nil {
		return err
	}
	var open openStep
	err = c.Scan(ctx, id, head, func(e session.Event) error {
		open.add(e)
		return fn(e)
	})
	if err != nil {
		return err
	}
	closers, err := session.InterruptedClosers(open.events())
	if err != nil {
		return fmt.Errorf("store: closing the open turn of %q: %w", id, err)
	}
	for _, e := range closers {
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// openStep keeps what [session.InterruptedClosers] needs of a log read in
// order: the open turn's turn/start and the events since its last step/end
// (that step/end included, so the last event is always there). What comes
// before a step/end only sets state a step/end resets.
type openStep struct {
	start *session.Event
	tail  []session.Event
}

func (o *openStep) add(e session.Event) {
	switch e.Type {
	case session.TypeTurnStart:
		o.start, o.tail = &e, nil
		return
	case session.TypeTurnEnd:
		o.start, o.tail = nil, nil
		return
	case session.TypeStepEnd:
		o.tail = o.tail[:0]
	}
	if o.start != nil {
		o.tail = append(o.tail, e)
	}
}

func (o *openStep) events() []session.Event {
	if o.start == nil {
		return nil
	}
	return append([]session.Event{*o.start}, o.tail...)
}
