package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/session"
)

// Options configure a [Coordinator].
type Options struct {
	// Logf receives diagnostics that have no caller to return to, such as a
	// seed write that failed at adoption and will be retried by the next
	// flush. Nil discards them.
	Logf func(format string, args ...any)
	// Warn receives what the user should hear about (a resume that could
	// not use its snapshot and replayed the whole log); dsh sends it to
	// stderr. Nil sends it to Logf.
	Warn func(msg string)
	// SnapshotMin is how long a log must be before a turn end writes a
	// snapshot of it (see [Snapshots]): below it a replay costs less
	// than a millisecond, and a snapshot would only cost a write per
	// turn. 0 means 1024; negative, never.
	SnapshotMin int
}

// Coordinator is the write path shared by every backend. It mirrors the live
// sessions of a [session.Live] into a [Backend] and is the persistence
// service (create, append, load, list, tail) for everything else.
//
// Live sessions are written behind: each appended event is deep-copied into
// a per-session buffer and written at the next flush, in one durable batch.
// Operations on one session id are serialized; a failed operation never
// blocks the next one. A failed write keeps the buffer, so the next flush
// retries it and nothing is silently lost.
type Coordinator struct {
	backend  Backend
	sessions *session.Live
	opts     Options

	mu      sync.Mutex
	states  map[session.ID]*state
	bufs    map[*session.Session][]session.Event
	inits   map[*session.Session]*initRec
	idLocks map[session.ID]*idLock
	closed  bool
}

// state is what the coordinator knows of one stored (or about to be stored)
// session. Its fields are read and written only under the id lock.
type state struct {
	meta         session.Header
	cursor       int64 // next seq to store
	materialized bool
	owner        *session.Session // nil: created or loaded through the API
	// stored is the stored log from seq base on (base+len == cursor)
	// while the state is ownerless, so a live session claiming it can be
	// compared in full.
	stored []session.Event
	// base is 0, or the seq the log was read from after a snapshot that
	// covers everything before it.
	base int64
	// snapped is how many events the newest snapshot stored (or found)
	// covers.
	snapped int64
	info    Info
}

type initRec struct {
	done chan struct{}
	err  error
}

type idLock struct {
	ch   chan struct{}
	refs int
}

// Attach builds a coordinator over backend and, when sessions is not nil,
// mirrors that store into it: it listens to Created (adoption), Appended
// (write-behind buffering) and Flush (drain), and adopts the sessions already
// in the store. Closing scope stops listening, drains every buffer and
// closes the backend; its error joins every failure of that final drain.
func Attach(scope *kernel.Scope, sessions *session.Live, backend Backend, opts Options) (*Coordinator, error) {
	c := &Coordinator{
		backend:  backend,
		sessions: sessions,
		opts:     opts,
		states:   map[session.ID]*state{},
		bufs:     map[*session.Session][]session.Event{},
		inits:    map[*session.Session]*initRec{},
		idLocks:  map[session.ID]*idLock{},
	}
	// Registered first, so it runs last: listeners are gone before the
	// final drain starts.
	if err := scope.Defer(c.close); err != nil {
		return nil, err
	}
	if sessions == nil {
		return c, nil
	}
	name := kernel.Named(backend.Name())
	if err := scope.Add(sessions.Appended.Listen(c.onAppended, name)); err != nil {
		return nil, err
	}
	if err := scope.Add(sessions.Created.Listen(c.onCreated, name)); err != nil {
		return nil, err
	}
	if err := scope.Add(sessions.Flush.Use(c.Flush, name)); err != nil {
		return nil, err
	}
	for _, s := range sessions.List() {
		_ = c.initFor(context.Background(), s) // recorded; Flush reports it
	}
	return c, nil
}

// Name is the backend's name.
func (c *Coordinator) Name() string { return c.backend.Name() }

func (c *Coordinator) logf(format string, args ...any) {
	if c.opts.Logf != nil {
		c.opts.Logf(format, args...)
	}
}

func (c *Coordinator) onAppended(_ context.Context, a session.Appended) error {
	// The copy is made before taking c.mu, which every session's appends
	// and flushes share: only the buffer's append is done under it.
	e := a.Event.Clone()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.refused(a.Session) {
		return nil
	}
	c.bufs[a.Session] = append(c.bufs[a.Session], e)
	return nil
}

// refused reports whether the session's adoption was refused for good: it
// will never be written, so buffering its events would only keep a second
// copy of its log in memory. c.mu is held.
func (c *Coordinator) refused(s *session.Session) bool {
	r := c.inits[s]
	if r == nil {
		return false
	}
	select {
	case <-r.done:
		return r.err != nil && refusal(r.err)
	default:
		return false
	}
}

// onCreated adopts a new live session. Adoption failures do not fail the
// creation: a refusal (an id collision) is recorded and returned by every
// Flush of that session, which the agent loop reports; any other failure
// (I/O, a lock held by another process) is returned by the next Flush,
// which tries the adoption again.
func (c *Coordinator) onCreated(ctx context.Context, s *session.Session) error {
	if err := c.initFor(ctx, s); err != nil {
		c.logf("store: adopting session %q: %v", s.ID(), err)
	}
	return nil
}

// lockID serializes operations on one id.
func (c *Coordinator) lockID(ctx context.Context, id session.ID) (func(), error) {
	c.mu.Lock()
	l := c.idLocks[id]
	if l == nil {
		l = &idLock{ch: make(chan struct{}, 1)}
		c.idLocks[id] = l
	}
	l.refs++
	c.mu.Unlock()
	release := func() {
		c.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(c.idLocks, id)
		}
		c.mu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

func (c *Coordinator) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *Coordinator) state(id session.ID) *state {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.states[id]
}

func (c *Coordinator) setState(id session.ID, st *state) {
	c.mu.Lock()
	if st == nil {
		delete(c.states, id)
	} else {
		c.states[id] = st
	}
	c.mu.Unlock()
}

// unlockIfUntracked releases the backend lock of id unless a state keeps it.
// Called (under the id lock) on every path that may have locked without
// creating a state.
func (c *Coordinator) unlockIfUntracked(id session.ID) {
	if c.state(id) == nil {
		if err := c.backend.Unlock(id); err != nil {
			c.logf("store: unlocking %q: %v", id, err)
		}
	}
}

// initFor runs the adoption of s once per Session object; later calls wait
// for and return the first result.
func (c *Coordinator) initFor(ctx context.Context, s *session.Session) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("store: %w", ErrClosed)
	}
	if r := c.inits[s]; r != nil {
		c.mu.Unlock()
		select {
		case <-r.done:
			return r.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r := &initRec{done: make(chan struct{})}
	c.inits[s] = r
	c.mu.Unlock()

	// What the session started from: its whole seed, or for one resumed
	// from a snapshot the events after it.
	seed := s.Since(s.Base())
	r.err = c.adoptSerialized(ctx, s, seed)
	c.mu.Lock()
	switch {
	case r.err != nil && refusal(r.err):
		// Refused for good: what was buffered will never be written.
		delete(c.bufs, s)
	case r.err != nil:
		// Interrupted or failed (I/O, a lock another process holds), not
		// refused: the next flush tries again.
		delete(c.inits, s)
	}
	close(r.done)
	c.mu.Unlock()
	return r.err
}

// refusal reports adoption failures that retrying cannot fix.
func refusal(err error) bool {
	return errors.Is(err, ErrCollision) || errors.Is(err, ErrExists) || errors.Is(err, ErrVersion) || errors.Is(err, ErrInvalidID)
}

func (c *Coordinator) adoptSerialized(ctx context.Context, s *session.Session, seed []session.Event) error {
	unlock, err := c.lockID(ctx, s.ID())
	if err != nil {
		return err
	}
	defer unlock()
	defer c.unlockIfUntracked(s.ID())
	if c.sessions != nil {
		// A session object that left the live set (its agent disposed,
		// Release done or about to run) is never adopted again: a flush
		// of it still in flight would otherwise bind the id back to it,
		// and its successor, loaded from the store, would be refused as a
		// collision and lose everything it appends. Checked under the id
		// lock, so a Release that follows the detach finds this adoption
		// complete and undoes it.
		if live, ok := c.sessions.Get(s.ID()); !ok || live != s {
			return fmt.Errorf("store: session %q left the live set; its flush stores nothing: %w", s.ID(), ErrNotLive)
		}
	}
	if err := c.adopt(ctx, s, seed); err != nil {
		return err
	}
	if sr, ok := c.backend.(SpanReader); ok {
		id := s.ID()
		s.SetReader(func(ctx context.Context, from, to int64, fn func(session.Event) error) error {
			return sr.ReadRange(ctx, id, from, to, fn)
		})
	} else {
		c.logf("store: %s cannot read a log a span at a time: session %q keeps its whole log in memory", c.backend.Name(), s.ID())
	}
	// Persist the seed (a fork's inherited prefix, a claimed suffix) now,
	// exactly once. A failure is not an adoption failure: the events stay
	// pending and the next flush retries and reports.
	if err := c.drainLocked(ctx, s); err != nil {
		c.logf("store: writing the seed of %q: %v (will retry at the next flush)", s.ID(), err)
	}
	return nil
}

func cwdLabel(cwd string) string {
	if cwd == "" {
		return "(none)"
	}
	return cwd
}

// adopt binds a live session to its stored state: the four cases of the
// adoption contract. The id lock is held.
func (c *Coordinator) adopt(ctx context.Context, s *session.Session, seed []session.Event) error {
	id, h := s.ID(), s.Header()
	if err := checkID(id); err != nil {
		return err
	}
	if st := c.state(id); st != nil {
		switch {
		case st.owner == s:
			return nil
		case st.owner == nil:
			// Created or loaded through the API (a resume): claim it.
			if st.base != s.Base() {
				return fmt.Errorf("store: session %q was loaded from seq %d, the live session starts at %d (%w)", id, st.base, s.Base(), ErrCollision)
			}
			if st.meta.Cwd != h.Cwd {
				return fmt.Errorf("store: session %q already persisted at a different cwd (persisted: %s, live: %s) (%w)",
					id, cwdLabel(st.meta.Cwd), cwdLabel(h.Cwd), ErrCollision)
			}
			if !SeedCoversPrefix(seed, st.stored) {
				return fmt.Errorf("store: session %q already persisted with %d event(s) that do not match this live session (%w)",
					id, st.cursor, ErrCollision)
			}
			st.owner, st.stored = s, nil
			return nil
		default:
			// Bound to another live session object. Reclaim the id only
			// when that session never wrote and has nothing pending.
			if st.materialized || c.pendingLocked(st.owner, st) {
				return fmt.Errorf("store: session %q already bound to a different live session in this backend (%w)", id, ErrCollision)
			}
			c.setState(id, nil)
			c.mu.Lock()
			delete(c.bufs, st.owner)
			c.mu.Unlock()
		}
	}
	if err := c.backend.Lock(ctx, id); err != nil {
		return err
	}
	stored, err := c.backend.LoadLive(ctx, id, h.Cwd)
	if err != nil {
		return err
	}
	if stored != nil {
		if stored.Header.Version != session.FormatVersion {
			return versionError(id, stored.Header.Version)
		}
		if base := s.Base(); base > int64(len(stored.Events)) || !SeedCoversPrefix(seed, stored.Events[base:]) {
			return fmt.Errorf("store: session %q already has a persisted log on disk that does not match this live session (%w)", id, ErrCollision)
		}
		info := NewInfo(stored.Header, stored.Events)
		if stored.Torn != nil {
			// The live session is authoritative and may still close its
			// own turn: cut the torn bytes, add no closers.
			if err := c.backend.CommitRepair(ctx, Repair{Header: stored.Header, Torn: stored.Torn, Info: info}); err != nil {
				return err
			}
		}
		c.setState(id, &state{meta: stored.Header, cursor: int64(len(stored.Events)), materialized: true, owner: s, info: info})
		return nil
	}
	if other, err := c.backend.LoadStored(ctx, id); err != nil {
		return err
	} else if other != nil {
		return fmt.Errorf("store: session %q already has a persisted log on disk; load/resume it instead of creating (%w)", id, ErrExists)
	}
	c.setState(id, &state{meta: h, owner: s, info: NewInfo(h, nil)})
	return nil
}

// pendingLocked reports whether s has events that are not stored yet.
func (c *Coordinator) pendingLocked(s *session.Session, st *state) bool {
	c.mu.Lock()
	n := len(c.bufs[s])
	c.mu.Unlock()
	return n > 0 || int64(s.Len()) > st.cursor
}

// checkID refuses ids no backend can store faithfully: empty, or not valid
// UTF-8 (JSON and SQLite text would silently replace the bad bytes).
func checkID(id session.ID) error {
	if id == "" {
		return fmt.Errorf("store: empty session id: %w", ErrInvalidID)
	}
	if !utf8.ValidString(string(id)) {
		return fmt.Errorf("store: session id %q is not valid UTF-8: %w", id, ErrInvalidID)
	}
	return nil
}

func versionError(id session.ID, v int) error {
	return fmt.Errorf("store: unsupported session format version %d for %q (only v%d is supported): %w", v, id, session.FormatVersion, ErrVersion)
}

// Flush writes every event of s that is not stored yet, in one durable batch.
// It is the Flush listener of the session store; the agent loop runs it
// before the first request of a turn, after every step and at every turn
// end. It reports an adoption failure (an id collision) and any write
// failure; after a write failure the events stay pending for the next
// flush.
func (c *Coordinator) Flush(ctx context.Context, s *session.Session) error {
	if err := c.initFor(ctx, s); err != nil {
		return err
	}
	unlock, err := c.lockID(ctx, s.ID())
	if err != nil {
		return err
	}
	defer unlock()
	return c.drainLocked(ctx, s)
}

// drainLocked writes log[cursor:] of s, using the buffered snapshots (taken
// when each event was announced) and falling back to the live log for
// events whose notification has not reached the buffer. The id lock is
// held.
func (c *Coordinator) drainLocked(ctx context.Context, s *session.Session) error {
	id := s.ID()
	c.mu.Lock()
	st := c.states[id]
	buf := c.bufs[s]
	c.mu.Unlock()
	if st == nil || st.owner != s {
		if len(buf) == 0 {
			return nil
		}
		return fmt.Errorf("store: session %q is no longer bound to this live session; %d event(s) cannot be stored (%w)", id, len(buf), ErrCollision)
	}
	live := s.Since(st.cursor) // never released: only stored events are
	n := st.cursor + int64(len(live))
	if n > st.cursor {
		batch := make([]session.Event, 0, n-st.cursor)
		j := 0
		for seq := st.cursor; seq < n; seq++ {
			for j < len(buf) && buf[j].Seq < seq {
				j++
			}
			if j < len(buf) && buf[j].Seq == seq {
				batch = append(batch, buf[j])
				j++
			} else {
				batch = append(batch, live[seq-st.cursor].Clone())
			}
		}
		if err := c.appendCore(ctx, st, batch); err != nil {
			return err
		}
	}
	// What is stored can be read back: the session need not keep it.
	s.Release(st.cursor)
	if len(live) > 0 && c.snapshotDue(s, st, live) {
		c.snapshot(ctx, s, st)
	}
	c.mu.Lock()
	b := c.bufs[s]
	k := 0
	for k < len(b) && b[k].Seq < st.cursor {
		k++
	}
	if k == len(b) {
		delete(c.bufs, s)
	} else if k > 0 {
		c.bufs[s] = append([]session.Event(nil), b[k:]...)
	}
	c.mu.Unlock()
	return nil
}

// appendCore checks and writes one batch. The id lock is held.
func (c *Coordinator) appendCore(ctx context.Context, st *state, events []session.Event) error {
	if len(events) == 0 {
		return nil
	}
	for i, e := range events {
		if e.Seq != st.cursor+int64(i) {
			return fmt.Errorf("store: append seq mismatch for %q: expected %d at index %d, got %d (%w)",
				st.meta.ID, st.cursor+int64(i), i, e.Seq, ErrSeq)
		}
	}
	if err := AssertSerializable(events); err != nil {
		return err
	}
	info := st.info
	info.Header = st.meta
	info.Summary = info.Summary.Add(events)
	if err := c.backend.AppendBatch(ctx, Batch{Header: st.meta, Events: events, Materialized: st.materialized, Info: info}); err != nil {
		return fmt.Errorf("store: appending %d event(s) to %q: %w", len(events), st.meta.ID, err)
	}
	st.materialized = true
	st.cursor += int64(len(events))
	st.info = info
	if st.owner == nil {
		st.stored = append(st.stored, events...)
	}
	return nil
}

// Create registers a new session for writing through [Coordinator.Append].
// Nothing is written until the first non-empty append, so a created but
// never appended session is not listed. It fails when the id is tracked
// here or already stored (in any cwd scope), and with an [*InUseError] when
// another process holds it.
func (c *Coordinator) Create(ctx context.Context, meta session.Header) error {
	if c.isClosed() {
		return fmt.Errorf("store: %w", ErrClosed)
	}
	id := meta.ID
	if err := checkID(id); err != nil {
		return err
	}
	if meta.Version != session.FormatVersion {
		return versionError(id, meta.Version)
	}
	unlock, err := c.lockID(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	if c.state(id) != nil {
		return fmt.Errorf("store: session %q already exists in this backend (%w)", id, ErrExists)
	}
	defer c.unlockIfUntracked(id)
	if err := c.backend.Lock(ctx, id); err != nil {
		return err
	}
	stored, err := c.backend.LoadStored(ctx, id)
	if err != nil {
		return err
	}
	if stored != nil {
		return fmt.Errorf("store: session %q already has a persisted log on disk; load/resume it instead of creating (%w)", id, ErrExists)
	}
	c.setState(id, &state{meta: meta, info: NewInfo(meta, nil)})
	return nil
}

// Append durably stores events, which must continue the stored log (the
// first seq is the stored length, then +1 each). The batch is copied before
// Append returns. An empty batch is a no-op. An id not tracked here is
// loaded first (repairing a crashed tail), then appended to.
func (c *Coordinator) Append(ctx context.Context, id session.ID, events []session.Event) error {
	if c.isClosed() {
		return fmt.Errorf("store: %w", ErrClosed)
	}
	if err := checkID(id); err != nil {
		return err
	}
	if err := AssertSerializable(events); err != nil {
		return err
	}
	batch := CloneEvents(events)
	unlock, err := c.lockID(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	if len(batch) == 0 {
		return nil
	}
	st := c.state(id)
	if st == nil {
		if _, _, err := c.loadCore(ctx, id); err != nil {
			return err
		}
		st = c.state(id)
	}
	return c.appendCore(ctx, st, batch)
}

// Load returns a stored session for resuming it: the header and the whole
// log. A final turn left open by a crash is closed with
// [session.InterruptedClosers], and the closers are stored before Load
// returns; a torn, never completed write is cut. The session stays tracked
// (and locked against other processes) without an owner, so a live session
// created from exactly this header and these events claims it without
// rewriting anything. The returned events are shared: treat them as
// read-only.
func (c *Coordinator) Load(ctx context.Context, id session.ID) (session.Header, []session.Event, error) {
	if c.isClosed() {
		return session.Header{}, nil, fmt.Errorf("store: %w", ErrClosed)
	}
	if err := checkID(id); err != nil {
		return session.Header{}, nil, err
	}
	unlock, err := c.lockID(ctx, id)
	if err != nil {
		return session.Header{}, nil, err
	}
	defer unlock()
	if err := c.dropOwner(ctx, id); err != nil {
		return session.Header{}, nil, err
	}
	return c.loadCore(ctx, id)
}

// loadCore loads, repairs and tracks id. The id lock is held.
func (c *Coordinator) loadCore(ctx context.Context, id session.ID) (session.Header, []session.Event, error) {
	defer c.unlockIfUntracked(id)
	if err := c.backend.Lock(ctx, id); err != nil {
		return session.Header{}, nil, err
	}
	stored, err := c.backend.LoadStored(ctx, id)
	if err != nil {
		return session.Header{}, nil, err
	}
	if stored == nil {
		return session.Header{}, nil, fmt.Errorf("store: session %q not found: %w", id, ErrNotFound)
	}
	if stored.Header.Version != session.FormatVersion {
		return session.Header{}, nil, versionError(id, stored.Header.Version)
	}
	closers, err := session.InterruptedClosers(openTurn(stored.Events))
	if err != nil {
		return session.Header{}, nil, fmt.Errorf("store: repairing %q: %w", id, err)
	}
	events := stored.Events
	if len(closers) > 0 {
		events = append(events[:len(events):len(events)], closers...)
	}
	info := NewInfo(stored.Header, events)
	if stored.Torn != nil || len(closers) > 0 {
		if err := c.backend.CommitRepair(ctx, Repair{Header: stored.Header, Torn: stored.Torn, Closers: closers, Info: info}); err != nil {
			return session.Header{}, nil, fmt.Errorf("store: repairing %q: %w", id, err)
		}
	}
	c.setState(id, &state{meta: stored.Header, cursor: int64(len(events)), materialized: true, stored: events, info: info})
	return stored.Header, events, nil
}

// openTurn returns the events of the final turn when it is open (from its
// turn/start), else nil. InterruptedClosers resets its state at every
// turn/start, so handing it only this suffix gives the same closers without
// decoding the whole log.
func openTurn(events []session.Event) []session.Event {
	for i := len(events) - 1; i >= 0; i-- {
		switch events[i].Type {
		case session.TypeTurnEnd:
			return nil
		case session.TypeTurnStart:
			return events[i:]
		}
	}
	return nil
}

// Read returns a stored session as it is, for viewing: no lock, no repair
// (an open final turn stays open, a torn tail is left out). Events pending
// in this process's buffers are not included.
func (c *Coordinator) Read(ctx context.Context, id session.ID) (session.Header, []session.Event, error) {
	if err := checkID(id); err != nil {
		return session.Header{}, nil, err
	}
	stored, err := c.backend.LoadStored(ctx, id)
	if err != nil {
		return session.Header{}, nil, err
	}
	if stored == nil {
		return session.Header{}, nil, fmt.Errorf("store: session %q not found: %w", id, ErrNotFound)
	}
	if stored.Header.Version != session.FormatVersion {
		return session.Header{}, nil, versionError(id, stored.Header.Version)
	}
	return stored.Header, stored.Events, nil
}

// Tail returns the header and the last n stored events of id, reading a
// bounded amount of storage (for viewers following a session).
func (c *Coordinator) Tail(ctx context.Context, id session.ID, n int) (session.Header, []session.Event, error) {
	if err := checkID(id); err != nil {
		return session.Header{}, nil, err
	}
	return c.backend.Tail(ctx, id, n)
}

// List returns the listing entries of stored sessions, newest activity
// first.
func (c *Coordinator) List(ctx context.Context, q Query) ([]Info, error) {
	return c.backend.List(ctx, q)
}

// Release stores whatever the session id still has pending, then forgets it
// and drops its writer lock, so another process may resume it. A session
// whose lease another process took over ([ErrFenced]) is forgotten too,
// its pending events dropped, and the error returned. The agent
// registry calls it when an agent is disposed. It is a no-op for an
// untracked id.
func (c *Coordinator) Release(ctx context.Context, id session.ID) error {
	unlock, err := c.lockID(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	st := c.state(id)
	if st == nil {
		return nil
	}
	var lost error
	if st.owner != nil {
		if err := c.drainLocked(ctx, st.owner); err != nil {
			if !errors.Is(err, ErrFenced) {
				return err
			}
			// Another process holds the session now: what is pending can
			// never be written, and keeping it would only hold memory
			// (a long-lived server releases every disposed agent).
			lost = err
		}
		c.mu.Lock()
		delete(c.bufs, st.owner)
		delete(c.inits, st.owner)
		c.mu.Unlock()
	}
	c.setState(id, nil)
	return errors.Join(lost, c.backend.Unlock(id))
}

// close is the scope disposer: drain every session, then close the backend.
func (c *Coordinator) close() error {
	ctx := context.Background()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	seen := map[*session.Session]bool{}
	var all []*session.Session
	add := func(s *session.Session) {
		if s != nil && !seen[s] {
			seen[s] = true
			all = append(all, s)
		}
	}
	for s := range c.bufs {
		add(s)
	}
	// Every live owner of a state was adopted through initFor, so it is in
	// inits: reading st.owner here would race with adoption, which writes
	// it under the id lock, not c.mu.
	for s := range c.inits {
		add(s)
	}
	c.mu.Unlock()
	slices.SortFunc(all, func(a, b *session.Session) int { return cmp.Compare(a.ID(), b.ID()) })
	var errs []error
	for _, s := range all {
		if err := c.Flush(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	c.mu.Lock()
	c.closed = true
	c.bufs = map[*session.Session][]session.Event{}
	c.mu.Unlock()
	cerr := c.backend.Close()
	if len(errs) > 0 {
		return fmt.Errorf("store: %s dispose failed: %w", c.backend.Name(), errors.Join(errs...))
	}
	return cerr
}
