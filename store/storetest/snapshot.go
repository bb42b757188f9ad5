package storetest

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

// The snapshot part of the contract ([store.Snapshots]): a turn end writes
// one, a resume starts from it and the events after it, and one that is
// missing, torn, stale or inconsistent is refused, the whole log replayed
// and the user told.
var snapshotCases = []contractCase{
	{"SnapshotAtTurnEnd", snapshotAtTurnEnd},
	{"SnapshotPlusTail", snapshotPlusTail},
	{"SnapshotTornTailRepaired", snapshotTornTail},
	{"SnapshotTornFallsBack", snapshotTorn},
	{"SnapshotStaleFallsBack", snapshotStale},
	{"SnapshotInconsistentFallsBack", snapshotInconsistent},
	{"SnapshotMissingSaysSo", snapshotMissing},
}

// warnings collects what a coordinator tells the user.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) add(msg string) {
	w.mu.Lock()
	w.msgs = append(w.msgs, msg)
	w.mu.Unlock()
}

func (w *warnings) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.msgs, "\n")
}

// snapAttach attaches a coordinator that snapshots every log of at least
// min events and records its warnings.
func (e *env) snapAttach(sessions *session.Live, min int) (*attached, *warnings) {
	e.t.Helper()
	w := &warnings{}
	fb := NewFaulty(e.open())
	if _, ok := fb.Backend.(store.Snapshots); !ok {
		e.t.Fatalf("%s does not implement store.Snapshots: every resume of it replays the whole log (set Factory.NoSnapshots to skip these cases and say so)", fb.Backend.Name())
	}
	scope := kernel.NewScope("store-test")
	c, err := store.Attach(scope, sessions, fb, store.Options{Logf: e.t.Logf, Warn: w.add, SnapshotMin: min})
	if err != nil {
		e.t.Fatalf("Attach: %v", err)
	}
	e.t.Cleanup(func() { _ = scope.Close() })
	return &attached{c: c, fb: fb, scope: scope}, w
}

// resume resumes id through c into st, as the agent loop does, and enters
// the session (detached at cleanup).
func (e *env) resume(c *store.Coordinator, st *session.Live, id session.ID) *session.Session {
	e.t.Helper()
	s, err := c.Resume(e.ctx, id, func(o session.Options) (*session.Session, error) { return st.Prepare(id, o) })
	if err != nil {
		e.t.Fatalf("resume %q: %v", id, err)
	}
	scope := kernel.NewScope("resumed-" + string(id))
	e.t.Cleanup(func() { _ = scope.Close() })
	e.must(scope.Effect(func(record func(func() error)) error {
		detach, err := st.Enter(s)
		if err != nil {
			return err
		}
		record(func() error { detach(); return nil })
		return st.Announce(e.ctx, s)
	}))
	return s
}

// storedSnapshot reads id's snapshot through a fresh backend instance.
func (e *env) storedSnapshot(id session.ID) *store.StoredSnapshot {
	e.t.Helper()
	b := e.open()
	defer b.Close()
	rec, _, err := b.(store.Snapshots).LoadSnapshot(e.ctx, id)
	e.must(err)
	return rec
}

// putSnapshot stores rec as id's snapshot through a fresh backend
// instance holding the lock, as a writer would.
func (e *env) putSnapshot(id session.ID, rec store.StoredSnapshot) {
	e.t.Helper()
	b := e.open()
	defer b.Close()
	e.must(b.Lock(e.ctx, id))
	e.must(b.(store.Snapshots).PutSnapshot(e.ctx, id, rec))
	e.must(b.Unlock(id))
}

// messagesJSON is the derived history, for comparing two sessions.
func messagesJSON(e *env, s *session.Session) string {
	e.t.Helper()
	msgs, err := s.Messages()
	e.must(err)
	b, err := json.Marshal(msgs)
	e.must(err)
	return string(b)
}

// replayed is the history a replay of the stored log derives.
func (e *env) replayed(id session.ID) string {
	e.t.Helper()
	h, evs := e.read(id)
	s, err := session.New(id, session.Options{Header: h, Seed: evs})
	e.must(err)
	return messagesJSON(e, s)
}

// twoTurns writes a live session of two closed turns (one with a tool
// step) through a coordinator snapshotting at every turn end, and returns
// its length after turn 1 and at the end.
func (e *env) twoTurns(id session.ID, failSecond bool) (first, total int64) {
	st := newStore()
	a, _ := e.snapAttach(st, 1)
	s, _ := e.live(st, id, session.Options{Header: header(id, "/w")})
	e.apply(s, OneTurn(1, "one"))
	e.flush(st, s)
	first = int64(s.Len())
	if failSecond {
		a.fb.FailNext("PutSnapshot", errors.New("snapshot write failed"))
	}
	e.apply(s, []Op{TurnStart(2), User("two")})
	e.apply(s, ToolStep(2, 1, int64(s.Len()), 3, "call-1"))
	e.apply(s, []Op{TurnEnd(2)})
	e.flush(st, s)
	total = int64(s.Len())
	a.close(e.t)
	return first, total
}

func snapshotAtTurnEnd(e *env) {
	_, total := e.twoTurns("snap", false)
	if rec := e.storedSnapshot("snap"); rec == nil || rec.Covers != total || rec.Summary.Events != total || rec.Summary.Turns != 2 {
		e.t.Fatalf("after two turns (%d events) the stored snapshot is %+v", total, rec)
	}
	st := newStore()
	a, w := e.snapAttach(st, 1)
	s := e.resume(a.c, st, "snap")
	if s.Base() != total || int64(s.Len()) != total {
		e.t.Fatalf("resumed at base %d with %d events, want the snapshot's %d", s.Base(), s.Len(), total)
	}
	if got, want := messagesJSON(e, s), e.replayed("snap"); got != want {
		e.t.Fatalf("history from the snapshot:\n%s\nfrom a replay:\n%s", got, want)
	}
	if msg := w.all(); msg != "" {
		e.t.Fatalf("a usable snapshot warned: %s", msg)
	}
	// The resumed session is written after what it resumed, and its next
	// turn end writes a newer snapshot.
	e.apply(s, OneTurn(3, "three"))
	e.flush(st, s)
	if n, _ := a.fb.Counts(); n != 6 {
		e.t.Fatalf("wrote %d events, want 6", n)
	}
	a.close(e.t)
	_, evs := e.reload("snap")
	checkSeqs(e.t, evs, int(total)+6)
	checkLog(e.t, evs)
	if rec := e.storedSnapshot("snap"); rec == nil || rec.Covers != total+6 {
		e.t.Fatalf("the resumed session's turn end stored %+v, want a snapshot of %d events", rec, total+6)
	}
}

func snapshotPlusTail(e *env) {
	first, total := e.twoTurns("tail", true)
	if rec := e.storedSnapshot("tail"); rec == nil || rec.Covers != first {
		e.t.Fatalf("stored snapshot %+v, want the one of turn 1 (%d events)", rec, first)
	}
	// A third turn left open: the process died in it.
	st := newStore()
	a, _ := e.snapAttach(st, -1)
	s := e.resume(a.c, st, "tail")
	e.apply(s, []Op{TurnStart(3), User("three"), StepStart(3, 1)})
	e.flush(st, s)
	a.close(e.t)

	st = newStore()
	a, w := e.snapAttach(st, 1)
	s = e.resume(a.c, st, "tail")
	// The open step and turn are closed: step/end, turn/end.
	if s.Base() != first || int64(s.Len()) != total+3+2 {
		e.t.Fatalf("resumed at base %d with %d events, want base %d and %d events (the open turn closed)", s.Base(), s.Len(), first, total+5)
	}
	if s.Turns().Open {
		e.t.Fatal("the interrupted turn is still open")
	}
	if got, want := messagesJSON(e, s), e.replayed("tail"); got != want {
		e.t.Fatalf("history from snapshot and tail:\n%s\nfrom a replay:\n%s", got, want)
	}
	if msg := w.all(); msg != "" {
		e.t.Fatalf("a usable snapshot warned: %s", msg)
	}
	a.close(e.t)
	_, evs := e.reload("tail")
	checkSeqs(e.t, evs, int(total)+5)
	checkLog(e.t, evs)
	if r := lastReason(e.t, evs); r != session.EndInterrupted {
		e.t.Fatalf("the open turn was closed %q", r)
	}
}

func snapshotTornTail(e *env) {
	_, total := e.twoTurns("cut-tail", false)
	e.f.Tear(e.t, e.dir, "cut-tail")
	st := newStore()
	a, w := e.snapAttach(st, 1)
	s := e.resume(a.c, st, "cut-tail")
	if s.Base() != total || int64(s.Len()) != total {
		e.t.Fatalf("resumed at base %d with %d events, want the snapshot's %d", s.Base(), s.Len(), total)
	}
	if msg := w.all(); msg != "" {
		e.t.Fatalf("a usable snapshot warned: %s", msg)
	}
	e.apply(s, OneTurn(3, "three"))
	e.flush(st, s)
	a.close(e.t)
	_, evs := e.reload("cut-tail")
	checkSeqs(e.t, evs, int(total)+6)
	checkLog(e.t, evs)
}

// fallsBack resumes id and checks that the whole log was replayed and the
// warning says why.
func (e *env) fallsBack(id session.ID, want int64, why string) {
	e.t.Helper()
	st := newStore()
	a, w := e.snapAttach(st, 1)
	s := e.resume(a.c, st, id)
	if s.Base() != 0 || int64(s.Len()) != want {
		e.t.Fatalf("resumed at base %d with %d events, want a replay of all %d", s.Base(), s.Len(), want)
	}
	if got, want := messagesJSON(e, s), e.replayed(id); got != want {
		e.t.Fatalf("history:\n%s\nfrom a replay:\n%s", got, want)
	}
	if msg := w.all(); !strings.Contains(msg, why) || !strings.Contains(msg, "replayed all") {
		e.t.Fatalf("warned %q, want it to say %q and that it replayed", msg, why)
	}
	a.close(e.t)
}

func snapshotTorn(e *env) {
	_, total := e.twoTurns("damaged", false)
	rec := e.storedSnapshot("damaged")
	rec.Data[len(rec.Data)/2] ^= 0x20
	e.putSnapshot("damaged", *rec)
	e.fallsBack("damaged", total, "its snapshot is torn or damaged")
}

// snapshotOf is a snapshot of a log made of ops, taken in memory.
func (e *env) snapshotOf(id session.ID, ops []Op) store.StoredSnapshot {
	e.t.Helper()
	evs := Build(0, ops)
	s, err := session.New(id, session.Options{Header: header(id, "/w"), Seed: evs})
	e.must(err)
	sn, err := s.Snapshot(e.ctx)
	e.must(err)
	data, err := sn.Encode()
	e.must(err)
	return store.StoredSnapshot{Covers: sn.Covers(), Summary: store.NewInfo(header(id, "/w"), evs).Summary, Data: data}
}

func snapshotStale(e *env) {
	one := OneTurn(1, "one")
	e.stored(header("short", "/w"), Build(0, one))
	// The snapshot of a log longer than the stored one (a repair cut
	// what it covers, or it belongs to a log that was replaced).
	e.putSnapshot("short", e.snapshotOf("short", append(append([]Op(nil), one...), OneTurn(2, "two")...)))
	e.fallsBack("short", int64(len(one)), "its snapshot is stale")
}

func snapshotInconsistent(e *env) {
	ops := append(OneTurn(1, "one"), OneTurn(2, "two")...)
	e.stored(header("changed", "/w"), Build(0, ops))
	// A snapshot as long as the log, of a log whose last event differs.
	other := append([]Op(nil), ops...)
	other[len(other)-1] = Op{Type: session.TypeTurnEnd, Data: session.TurnEnd{Turn: 2, Reason: session.EndReason{Kind: session.EndAborted}}}
	e.putSnapshot("changed", e.snapshotOf("changed", other))
	e.fallsBack("changed", int64(len(ops)), "its snapshot is inconsistent with the log")
}

func snapshotMissing(e *env) {
	ops := append(OneTurn(1, "one"), OneTurn(2, "two")...)
	e.stored(header("old", "/w"), Build(0, ops))
	e.fallsBack("old", int64(len(ops)), "has no snapshot")
	// A short log replays without a word: that is the plan, not a
	// fallback.
	st := newStore()
	a, w := e.snapAttach(st, 1000)
	if s := e.resume(a.c, st, "old"); s.Base() != 0 {
		e.t.Fatalf("resumed at base %d", s.Base())
	}
	if msg := w.all(); msg != "" {
		e.t.Fatalf("a short log's replay warned: %s", msg)
	}
}
