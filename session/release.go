package session

import (
	"context"
	"errors"
	"fmt"
)

// Reader reads the stored events of one session with seqs in [from, to), in
// seq order, calling fn with each; the event passed to fn is the caller's
// to keep. The store installs one (see [Session.SetReader]) so that the
// payloads of flushed events need not stay in memory.
type Reader func(ctx context.Context, from, to int64, fn func(Event) error) error

// ErrReleased is wrapped by the error for a payload that was released from
// memory and cannot be read back (no reader, or the store failed).
var ErrReleased = errors.New("session: event payload was released from memory")

// SetReader installs the reader of the stored log. Without one, nothing is
// ever released.
func (s *Session) SetReader(r Reader) {
	s.mu.Lock()
	s.reader = r
	s.mu.Unlock()
}

// Release drops from memory the payloads of events before seq durable,
// which the caller (the store, after a flush) guarantees are stored and
// readable through the session's [Reader]. It works a segment at a time and
// always keeps the newest segment, so what a step, a follower or the
// window estimate reads is nearly always in memory. Events on the surface
// keep their payload (the derived history, what the next request needs, and
// compaction read them) until a replace takes them off it. A released
// event keeps its type, seq, time, surface op and sources; its Data is nil
// until read back ([Decode], [Session.Payload], [Session.Range]). It
// returns how many events are released in all.
//
// A released segment is replaced, never changed in place, so views handed
// out earlier (Events, Since) stay valid and unchanged.
func (s *Session) Release(durable int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reader == nil {
		return s.base + s.released*segmentSize
	}
	_, _ = s.der.messages(s) // the history keeps what it needs; an error stays sticky for Messages
	limit := min(durable, int64(s.der.processed))
	var onSurface map[int64]bool
	surface := func() map[int64]bool {
		if onSurface == nil {
			onSurface = make(map[int64]bool, len(s.der.nodes))
			for _, n := range s.der.nodes {
				onSurface[n.seq] = true
			}
		}
		return onSurface
	}
	// Surface events of segments released earlier keep their payload;
	// those a replace (compaction, pruning) took off the surface since
	// lose it now, a segment at a time.
	var seg []Event // the copy of segment k being changed
	k := -1
	for _, seq := range s.der.dropped {
		if seq < int64(s.base) {
			continue // a kept event: it stays, like the snapshot it came with
		}
		j := (int(seq) - s.base) / segmentSize
		if j >= s.released {
			continue // slimmed against the surface when its segment goes
		}
		if j != k {
			if k >= 0 {
				s.segs[k] = pack(seg)
			}
			seg, k = s.segs[j].events(), j
		}
		if e := &seg[(int(seq)-s.base)%segmentSize]; releasable(*e) {
			e.Data, e.back = nil, s
		}
	}
	if k >= 0 {
		s.segs[k] = pack(seg)
	}
	s.der.dropped = s.der.dropped[:0]
	for k := s.released; k < len(s.segs)-1; k++ {
		seg := s.segs[k]
		if seg.len() < segmentSize || int64(s.base+(k+1)*segmentSize) > limit {
			break
		}
		s.segs[k] = pack(slim(s, seg.ev, surface()))
		s.released = k + 1
	}
	return s.base + s.released*segmentSize
}

// releasable reports whether e's payload may leave memory once stored:
// any payload, small ones too (turn and step markers, checkpoints, small
// messages: a few a step, ~0.9 KB a step kept for the life of a session
// when they stayed). What reads old ones folds with [Session.Each], which
// reads them back in batches; [Decode] on one reads it back alone.
func releasable(e Event) bool {
	return e.Data != nil
}

// smallPayload is the size up to which a payload still held (an event on
// the surface) is packed into its segment's buffer rather than kept whole.
const smallPayload = 256

// slim returns a copy of seg whose events keep their payload only while
// they are on the surface (the next request's history is built from those,
// and compaction reads them).
func slim(s *Session, seg []Event, onSurface map[int64]bool) []Event {
	out := make([]Event, len(seg))
	for i, e := range seg {
		e.msg = nil
		if !onSurface[e.Seq] && releasable(e) {
			e.Data, e.back = nil, s
		}
		out[i] = e
	}
	return out
}

// Released reports how many leading events have their payload released
// (those before [Session.Base] count: they are not held at all).
func (s *Session) Released() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base + s.released*segmentSize
}

// Payload returns e with its payload, reading it back from the store when
// it was released.
func (s *Session) Payload(ctx context.Context, e Event) (Event, error) {
	if e.Data != nil {
		return e, nil
	}
	var got Event
	found := false
	err := s.Range(ctx, e.Seq, e.Seq+1, func(r Event) error {
		got, found = r, true
		return nil
	})
	if err != nil {
		return e, err
	}
	if !found {
		return e, fmt.Errorf("session: event %d of %q is not in the log: %w", e.Seq, s.id, ErrReleased)
	}
	return got, nil
}

// Range calls fn with each event whose seq is in [from, to), in seq order,
// with its payload: those in memory directly, released ones read back from
// the store in one read per run. No lock is held while fn runs. fn's error
// stops the range and is returned.
func (s *Session) Range(ctx context.Context, from, to int64, fn func(Event) error) error {
	s.mu.Lock()
	from = max(from, 0)
	to = min(to, int64(s.n))
	segs := append([]segment(nil), s.segs...)
	base := s.base
	released := int64(base + s.released*segmentSize)
	reader := s.reader
	s.mu.Unlock()
	seq := from
	if seq < min(released, to) {
		end := min(released, to)
		if reader == nil {
			return fmt.Errorf("session: events %d-%d of %q: no store to read them from: %w", seq, end-1, s.id, ErrReleased)
		}
		want := seq
		err := reader(ctx, seq, end, func(e Event) error {
			var mem Event
			if want >= int64(base) {
				mem = segAt(segs, base, int(want))
			} else {
				mem = Event{Seq: want, Type: e.Type} // not held: the seq is the check
			}
			if e.Seq != want || e.Type != mem.Type {
				return fmt.Errorf("session: reading back event %d of %q: the store has %q at seq %d, memory has %q: %w",
					want, s.id, e.Type, e.Seq, mem.Type, ErrReleased)
			}
			want++
			e.back = nil
			return fn(e)
		})
		if err != nil {
			if errors.Is(err, ErrReleased) {
				return err
			}
			return fmt.Errorf("session: reading back events %d-%d of %q: %w: %w", seq, end-1, s.id, err, ErrReleased)
		}
		if want != end {
			return fmt.Errorf("session: reading back events %d-%d of %q: the store returned only up to %d: %w", seq, end-1, s.id, want-1, ErrReleased)
		}
		seq = end
	}
	for ; seq < to; seq++ { // memory: nothing to wait for, so ctx is not consulted
		if err := fn(segAt(segs, base, int(seq))); err != nil {
			return err
		}
	}
	return nil
}

// Log returns the whole log with every payload, reading released ones back.
// It holds the whole log in memory: viewers and exporters stream with
// [Session.Range] instead.
func (s *Session) Log(ctx context.Context) ([]Event, error) {
	out := make([]Event, 0, s.Len())
	err := s.Range(ctx, 0, int64(cap(out)), func(e Event) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// Each calls fn, in seq order, with each event held from seq from on (as
// [Session.Scan] sees them) that want accepts, with its payload. want is
// given the event as memory holds it (its type, seq, time, op and
// sources; its payload only when held), so a fold over one or two types
// of a long log decides without reading anything back. The payloads of
// wanted events that were released are read back from the store in
// batches: those near each other in one read (see [eachGap]), at most
// [eachBatch] wanted events held at a time, so a fold over thousands of
// released step markers costs a few reads, not one each (as [Decode] on
// each would). fn's error stops the fold and is returned; so is a failed
// read back (wrapping [ErrReleased]).
func (s *Session) Each(ctx context.Context, from int64, want func(Event) bool, fn func(Event) error) error {
	batch := make([]Event, 0, 16)
	flush := func() error {
		if err := s.fill(ctx, batch); err != nil {
			return err
		}
		for _, e := range batch {
			if err := fn(e); err != nil {
				return err
			}
		}
		batch = batch[:0]
		return nil
	}
	for e := range s.Scan(from) {
		if !want(e) {
			continue
		}
		if batch = append(batch, e); len(batch) == eachBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

const (
	// eachBatch is how many wanted events [Session.Each] gathers before
	// reading their released payloads back: it bounds what a fold holds.
	eachBatch = 256
	// eachGap is how far apart (in seqs) two released events may be and
	// still be read back in one read of the store: the events between are
	// read and dropped, which costs less than another read (a JSONL read
	// opens the file and fills a 64 KiB buffer) while they are a few
	// steps' worth.
	eachGap = 64
)

// fill reads back, in place, the payloads of the released events of evs
// (in seq order): one read of the store per run of them no more than
// eachGap apart.
func (s *Session) fill(ctx context.Context, evs []Event) error {
	for i := 0; i < len(evs); {
		if !evs[i].IsReleased() {
			i++
			continue
		}
		j, last := i+1, i // evs[i:j] is the run; last its newest released event
		for j < len(evs) && (!evs[j].IsReleased() || evs[j].Seq-evs[last].Seq <= eachGap) {
			if evs[j].IsReleased() {
				last = j
			}
			j++
		}
		k := i
		err := s.Range(ctx, evs[i].Seq, evs[last].Seq+1, func(e Event) error {
			for k <= last && evs[k].Seq < e.Seq {
				k++
			}
			if k <= last && evs[k].Seq == e.Seq && evs[k].IsReleased() {
				evs[k] = e
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, e := range evs[i : last+1] {
			if e.IsReleased() {
				return fmt.Errorf("session: event %d of %q was not read back: %w", e.Seq, s.id, ErrReleased)
			}
		}
		i = last + 1
	}
	return nil
}
