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

// releasable reports whether e's payload may leave memory once stored: not
// a small one (turn and step markers and the like: a read back would cost
// far more than the bytes, and scans read them often), except a chunk's or
// a tool call's. A tool call is one of the few events of every step, and
// its payload is read only as it is appended (derivation, hooks, the
// front ends' live views) or by what reads pages of the log from the store
// anyway (transcripts, replays, repairing an open step); nothing scans the
// tool calls memory holds.
func releasable(e Event) bool {
	return e.Data != nil && (len(e.Data) > smallPayload || e.Type == TypeAssistantChunk || e.Type == TypeToolCall)
}

// smallPayload is the size up to which a payload stays in memory (but a
// streamed chunk's never does: chunks are most of a log's events).
const smallPayload = 256

// slim returns a copy of seg whose events keep their payload only while
// they are on the surface (the next request's history is built from those,
// and compaction reads them) or small.
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
