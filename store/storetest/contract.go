package storetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

var contractCases = []contractCase{
	// The persistence contract (core spec §6.5, items 1–8).
	{"RoundTrip", roundTrip},
	{"CrashRecoveryKeepsInterruptedTurn", crashRecovery},
	{"InterruptedToolCall", interruptedToolCall},
	{"ListExcludesUnmaterialized", listExcludesLazy},
	{"ListIncludesMaterialized", listIncludes},
	{"RejectsReappend", rejectsReappend},
	{"RejectsSeqGap", rejectsGap},
	{"RejectsNonJSON", rejectsNonJSON},
	// Coordinator orchestration.
	{"LiveFlushReload", liveFlushReload},
	{"SeedLengthAndParentRoundTrip", seedLengthRoundTrip},
	{"SnapshotOnBuffer", snapshotOnBuffer},
	{"AppendSnapshotsBatch", appendSnapshotsBatch},
	{"ForkSeedPersistedOnce", forkSeedOnce},
	{"ResumeAppendsFromCursor", resumeFromCursor},
	{"AttachSeedsExistingSessions", attachSeedsExisting},
	{"DisposeDrains", disposeDrains},
	{"ReloadedBackendAdoptsLiveSession", reloadedAdoptsLive},
	{"AdoptionDoesNotCloseOpenTurn", adoptionKeepsOpenTurn},
	{"NewSessionCollidingWithStoredIDRejected", collisionWithStored},
	{"AbandonedUnmaterializedIDReused", abandonedReused},
	{"AbandonedOwnerWithPendingEventsNotReclaimed", abandonedPendingKept},
	{"InitIdempotent", initIdempotent},
	{"OwnerlessCursorZeroClaimed", ownerlessClaimed},
	{"LoadedIDWithDifferentContentRejected", loadedDifferent},
	{"LoadedPrefixClaimedSuffixOnly", loadedPrefixSuffix},
	{"CwdMismatchRejected", cwdMismatch},
	{"AppendAdoptsStorageOnlyID", appendAdoptsStored},
	{"EmptyAppendStaysLazy", emptyAppendLazy},
	{"LoadMissing", loadMissing},
	{"CreateRejectsDuplicates", createDuplicates},
	{"UnknownVersionRejected", unknownVersion},
	{"FlushBeforeInit", flushBeforeInit},
	{"TornTailLoadCutsAndCloses", tornTailLoad},
	// Beyond the reference.
	{"CorruptCommittedRegion", corruptCommitted},
	{"ListSummaryFilterOrder", listSummary},
	{"Tail", tail},
	{"ReadDoesNotRepair", readNoRepair},
	{"WriteFailureKeepsBuffer", writeFailureKeepsBuffer},
	{"SeedWriteFailureRetried", seedWriteRetried},
	{"LockExcludesOtherInstances", lockExclusion},
	{"LoadAfterOwnerDisposed", loadAfterOwnerDisposed},
	{"LoadOfLiveSessionRejected", loadLiveRejected},
	{"IDsWithPathCharacters", pathIDs},
	{"ConcurrentSessions", concurrentSessions},
	{"ChurnAppendFlushReleaseReload", churn},
	{"MissedNotificationRecovered", missedNotification},
	{"ReleaseThenOtherInstanceResumes", releaseThenResume},
	{"AdoptionRetriedAfterTransientFailure", adoptionRetried},
	// Bounded memory: flushed payloads are released and read back.
	{"FlushReleasesAndReadsBack", flushReleasesAndReadsBack},
	// Streaming reads: viewers, exporters and copies never load a log whole.
	{"ScanStreamsWhatReadReturns", scanStreams},
	{"ExportClosesOpenTurnWithoutRepairing", exportClosesOpenTurn},
}

// read reads id through a brand-new backend instance without locking.
func (e *env) read(id session.ID) (session.Header, []session.Event) {
	e.t.Helper()
	b := e.open()
	defer b.Close()
	scope := kernel.NewScope("read")
	defer scope.Close()
	c, err := store.Attach(scope, nil, b, store.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	h, evs, err := c.Read(e.ctx, id)
	if err != nil {
		e.t.Fatalf("read %q: %v", id, err)
	}
	return h, store.CloneEvents(evs)
}

func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// stored creates id through the API with the given events and disposes.
func (e *env) stored(h session.Header, evs []session.Event) {
	e.t.Helper()
	a := e.attach(nil)
	e.must(a.c.Create(e.ctx, h))
	e.must(a.c.Append(e.ctx, h.ID, evs))
	a.close(e.t)
}

func roundTrip(e *env) {
	a := e.attach(nil)
	h := header("s1", "/work")
	e.must(a.c.Create(e.ctx, h))
	log := Build(0, OneTurn(1, "hello"))
	e.must(a.c.Append(e.ctx, "s1", log))
	gh, evs, err := a.c.Load(e.ctx, "s1")
	e.must(err)
	sameEvents(e.t, evs, log)
	a.close(e.t)
	gh, evs = e.reload("s1")
	if gh.Version != 0 || gh.ID != "s1" || gh.Cwd != "/work" || gh.CreatedAt != h.CreatedAt {
		e.t.Fatalf("header %+v", gh)
	}
	sameEvents(e.t, evs, log)
}

func crashRecovery(e *env) {
	h := header("crash", "/work")
	e.stored(h, append(Build(0, OneTurn(1, "one")), Build(6, []Op{TurnStart(2), StepStart(2, 1)})...))
	a := e.attach(nil)
	_, evs, err := a.c.Load(e.ctx, "crash")
	e.must(err)
	want := []string{"turn/start", "user/message", "step/start", "assistant/message", "step/end", "turn/end", "turn/start", "step/start", "step/end", "turn/end"}
	if !slices.Equal(types(evs), want) {
		e.t.Fatalf("types %v, want %v", types(evs), want)
	}
	checkSeqs(e.t, evs, 10)
	if r := lastReason(e.t, evs); r != session.EndInterrupted {
		e.t.Fatalf("last reason %q", r)
	}
	checkLog(e.t, evs)
	e.must(a.c.Append(e.ctx, "crash", Build(10, []Op{TurnStart(3), TurnEnd(3)})))
	a.close(e.t)
	_, evs = e.reload("crash")
	checkSeqs(e.t, evs, 12)
	checkLog(e.t, evs)
}

func interruptedToolCall(e *env) {
	h := header("tool", "")
	e.stored(h, append(Build(0, OneTurn(1, "one")), Build(6, []Op{TurnStart(2), StepStart(2, 1), Assistant(2, 1, "x", "call-x")})...))
	_, evs := e.reload("tool")
	tail := types(evs[len(evs)-4:])
	if !slices.Equal(tail, []string{"assistant/message", "tool/result", "step/end", "turn/end"}) {
		e.t.Fatalf("tail %v", tail)
	}
	tr, err := session.Decode[session.ToolResult](evs[len(evs)-3])
	e.must(err)
	if tr.CallID != "call-x" || !tr.IsError || tr.Error == nil || tr.Error.Code != "interrupted" {
		e.t.Fatalf("synthetic result %+v", tr)
	}
	checkLog(e.t, evs)
}

func listExcludesLazy(e *env) {
	a := e.attach(nil)
	e.must(a.c.Create(e.ctx, header("lazy", "/w")))
	infos, err := a.c.List(e.ctx, store.Query{})
	e.must(err)
	if len(infos) != 0 {
		e.t.Fatalf("listed %v", infos)
	}
}

func listIncludes(e *env) {
	a := e.attach(nil)
	e.must(a.c.Create(e.ctx, header("listed", "/w")))
	e.must(a.c.Append(e.ctx, "listed", Build(0, OneTurn(1, "  fix   the\nbuild  "))))
	infos, err := a.c.List(e.ctx, store.Query{})
	e.must(err)
	if len(infos) != 1 {
		e.t.Fatalf("listed %v", infos)
	}
	in := infos[0]
	if in.Header.ID != "listed" || in.Header.Cwd != "/w" || in.Title != "fix the build" || in.Turns != 1 || in.Events != 6 || in.LastActivity != BaseTime+5 {
		e.t.Fatalf("info %+v", in)
	}
}

func rejectsReappend(e *env) {
	a := e.attach(nil)
	e.must(a.c.Create(e.ctx, header("re", "")))
	log := Build(0, OneTurn(1, "x"))
	e.must(a.c.Append(e.ctx, "re", log))
	wantErr(e.t, a.c.Append(e.ctx, "re", log), store.ErrSeq, "expected 6 at index 0, got 0")
	a.close(e.t)
	_, evs := e.reload("re")
	checkSeqs(e.t, evs, 6)
}

func rejectsGap(e *env) {
	a := e.attach(nil)
	e.must(a.c.Create(e.ctx, header("gap", "")))
	log := Build(0, OneTurn(1, "x"))
	wantErr(e.t, a.c.Append(e.ctx, "gap", []session.Event{log[0], log[2]}), store.ErrSeq, "expected 1 at index 1, got 2")
	infos, err := a.c.List(e.ctx, store.Query{})
	e.must(err)
	if len(infos) != 0 {
		e.t.Fatalf("a rejected batch was stored: %v", infos)
	}
}

func rejectsNonJSON(e *env) {
	a := e.attach(nil)
	e.must(a.c.Create(e.ctx, header("nj", "")))
	for _, bad := range []string{``, `undefined`, `{"a":NaN}`, `{"a":Infinity}`, `{"a":1`, `function(){}`, `{"a":1}{"b":2}`} {
		ev := session.Event{Type: session.TypeUserMessage, Seq: 0, Time: BaseTime, Data: []byte(bad)}
		wantErr(e.t, a.c.Append(e.ctx, "nj", []session.Event{ev}), store.ErrNotJSON, "user/message")
	}
	// An event without a type would read back as no event: refused too.
	untyped := session.Event{Seq: 0, Time: BaseTime, Data: []byte(`{}`)}
	wantErr(e.t, a.c.Append(e.ctx, "nj", []session.Event{untyped}), store.ErrNotJSON, "no type")
}

func liveFlushReload(e *env) {
	st := newStore()
	e.attach(st)
	s, _ := e.live(st, "live", session.Options{Header: header("live", "/w")})
	e.apply(s, OneTurn(1, "hi"))
	e.flush(st, s)
	_, evs := e.read("live")
	sameEvents(e.t, evs, s.Events())
	checkLog(e.t, evs)
}

func seedLengthRoundTrip(e *env) {
	st := newStore()
	a := e.attach(st)
	h := header("child", "/w")
	h.ParentSession, h.SeedLength = "parent", 6
	seed := Build(0, OneTurn(1, "inherited"))
	s, _ := e.live(st, "child", session.Options{Header: h, Seed: seed})
	e.apply(s, OneTurn(2, "own"))
	e.flush(st, s)
	a.close(e.t)
	gh, evs := e.reload("child")
	if gh.ParentSession != "parent" || gh.SeedLength != 6 {
		e.t.Fatalf("header %+v", gh)
	}
	checkSeqs(e.t, evs, 12)
	sameEvents(e.t, evs[:6], seed)
}

func snapshotOnBuffer(e *env) {
	st := newStore()
	a := e.attach(st)
	s, _ := e.live(st, "snap", session.Options{Header: header("snap", "")})
	e.apply(s, []Op{TurnStart(1)})
	ev, err := s.Writer(ownership.Fixtures).AppendSurface(e.ctx, session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text("hello")}, Source: llm.UserSource}, session.AppendOp, nil)
	e.must(err)
	// A misbehaving holder mutates the event after it was announced.
	i := strings.Index(string(ev.Data), "hello")
	ev.Data[i] = 'J'
	e.apply(s, []Op{TurnEnd(1)})
	e.flush(st, s)
	a.close(e.t)
	_, evs := e.reload("snap")
	if !strings.Contains(string(evs[1].Data), "hello") {
		e.t.Fatalf("persisted the mutation: %s", evs[1].Data)
	}
}

func appendSnapshotsBatch(e *env) {
	a := e.attach(nil)
	e.must(a.c.Create(e.ctx, header("batch", "")))
	log := Build(0, OneTurn(1, "hello"))
	want := store.CloneEvents(log)
	e.must(a.c.Append(e.ctx, "batch", log))
	copy(log[1].Data, strings.Repeat("x", len(log[1].Data)))
	log[1].Type = "mutated"
	a.close(e.t)
	_, evs := e.reload("batch")
	sameEvents(e.t, evs, want)
}

func forkSeedOnce(e *env) {
	st := newStore()
	a := e.attach(st)
	seed := Build(0, OneTurn(1, "parent prompt"))
	h := header("fork", "/w")
	h.ParentSession, h.SeedLength = "parent", len(seed)
	s, _ := e.live(st, "fork", session.Options{Header: h, Seed: seed})
	if n, _ := a.fb.Counts(); n != 6 {
		e.t.Fatalf("adoption wrote %d events, want the 6 of the seed", n)
	}
	e.flush(st, s)
	e.flush(st, s)
	if n, b := a.fb.Counts(); n != 6 || b != 1 {
		e.t.Fatalf("wrote %d events in %d batches, want 6 in 1", n, b)
	}
	gh, evs := e.read("fork")
	sameEvents(e.t, evs, seed)
	if gh.ParentSession != "parent" || gh.SeedLength != 6 {
		e.t.Fatalf("header %+v", gh)
	}
}

func resumeFromCursor(e *env) {
	e.stored(header("r", "/w"), Build(0, OneTurn(1, "one")))
	st := newStore()
	a := e.attach(st)
	h, evs, err := a.c.Load(e.ctx, "r")
	e.must(err)
	s, _ := e.live(st, "r", session.Options{Header: h, Seed: evs})
	if n, _ := a.fb.Counts(); n != 0 {
		e.t.Fatalf("resume rewrote %d events", n)
	}
	e.apply(s, []Op{TurnStart(2), TurnEnd(2)})
	e.flush(st, s)
	if n, _ := a.fb.Counts(); n != 2 {
		e.t.Fatalf("wrote %d events, want 2", n)
	}
	a.close(e.t)
	gh, evs := e.reload("r")
	if gh.CreatedAt != h.CreatedAt {
		e.t.Fatalf("createdAt changed: %d → %d", h.CreatedAt, gh.CreatedAt)
	}
	checkSeqs(e.t, evs, 8)
	checkLog(e.t, evs)
}

func attachSeedsExisting(e *env) {
	st := newStore()
	s, _ := e.live(st, "early", session.Options{Header: header("early", "/w")})
	e.apply(s, OneTurn(1, "before the backend"))
	e.attach(st)
	_, evs := e.read("early")
	checkSeqs(e.t, evs, 6)
	e.apply(s, OneTurn(2, "after"))
	e.flush(st, s)
	_, evs = e.read("early")
	checkSeqs(e.t, evs, 12)
}

func disposeDrains(e *env) {
	st := newStore()
	a := e.attach(st)
	s, _ := e.live(st, "drain", session.Options{Header: header("drain", "")})
	e.apply(s, OneTurn(1, "never flushed"))
	a.close(e.t)
	_, evs := e.reload("drain")
	checkSeqs(e.t, evs, 6)
}

func reloadedAdoptsLive(e *env) {
	st := newStore()
	a1 := e.attach(st)
	s, _ := e.live(st, "hmr", session.Options{Header: header("hmr", "/w")})
	e.apply(s, OneTurn(1, "one"))
	e.flush(st, s)
	a1.close(e.t)
	e.apply(s, OneTurn(2, "while no backend"))
	a2 := e.attach(st)
	if n, _ := a2.fb.Counts(); n != 6 {
		e.t.Fatalf("adoption wrote %d events, want the 6 of the live suffix", n)
	}
	e.apply(s, OneTurn(3, "after"))
	e.flush(st, s)
	_, evs := e.read("hmr")
	sameEvents(e.t, evs, s.Events())
	checkSeqs(e.t, evs, 18)
}

func adoptionKeepsOpenTurn(e *env) {
	st := newStore()
	a1 := e.attach(st)
	s, _ := e.live(st, "open", session.Options{Header: header("open", "/w")})
	e.apply(s, append(OneTurn(1, "one"), TurnStart(2), StepStart(2, 1)))
	e.flush(st, s)
	a1.close(e.t)
	e.f.Tear(e.t, e.dir, "open")
	e.attach(st)
	_, evs := e.read("open")
	checkSeqs(e.t, evs, 8)
	if evs[7].Type != session.TypeStepStart {
		e.t.Fatalf("adoption closed the live turn: %v", types(evs))
	}
	e.apply(s, []Op{Assistant(2, 1, "done"), StepEnd(2, 1), TurnEnd(2)})
	e.flush(st, s)
	_, evs = e.read("open")
	checkSeqs(e.t, evs, 11)
	checkLog(e.t, evs)
	if r := lastReason(e.t, evs); r != session.EndCompleted {
		e.t.Fatalf("reason %q", r)
	}
}

func collisionWithStored(e *env) {
	e.stored(header("c", "/w"), Build(0, OneTurn(1, "stored")))
	st := newStore()
	e.attach(st)
	s, _ := e.live(st, "c", session.Options{Header: header("c", "/w")}) // creation itself succeeds
	e.apply(s, []Op{TurnStart(1)})
	wantErr(e.t, st.FlushSession(e.ctx, s), store.ErrCollision, "does not match this live session")
	_, evs := e.read("c")
	checkSeqs(e.t, evs, 6)
}

func abandonedReused(e *env) {
	st := newStore()
	e.attach(st)
	_, scope1 := e.live(st, "x", session.Options{Header: header("x", "/w")})
	e.must(scope1.Close())
	s2, _ := e.live(st, "x", session.Options{Header: header("x", "/w")})
	e.apply(s2, OneTurn(1, "second owner"))
	e.flush(st, s2)
	_, evs := e.read("x")
	checkSeqs(e.t, evs, 6)
}

func abandonedPendingKept(e *env) {
	st := newStore()
	a := e.attach(st)
	s1, scope1 := e.live(st, "y", session.Options{Header: header("y", "/w")})
	e.apply(s1, []Op{TurnStart(1)})
	e.must(scope1.Close())
	s2, _ := e.live(st, "y", session.Options{Header: header("y", "/w")})
	wantErr(e.t, st.FlushSession(e.ctx, s2), store.ErrCollision, "already bound to a different live session")
	// Dispose stores the first owner's event and reports the collision.
	wantErr(e.t, a.scope.Close(), store.ErrCollision, "dispose failed")
	_, evs := e.read("y")
	checkSeqs(e.t, evs, 1)
}

func initIdempotent(e *env) {
	st := newStore()
	a := e.attach(st)
	s, _ := e.live(st, "i", session.Options{Header: header("i", ""), Seed: Build(0, OneTurn(1, "seed"))})
	e.must(st.Created.Emit(e.ctx, s))
	e.must(st.Created.Emit(e.ctx, s))
	e.flush(st, s)
	if n, b := a.fb.Counts(); n != 6 || b != 1 {
		e.t.Fatalf("wrote %d events in %d batches", n, b)
	}
}

func ownerlessClaimed(e *env) {
	st := newStore()
	a := e.attach(st)
	e.must(a.c.Create(e.ctx, header("o", "/w")))
	seed := Build(0, OneTurn(1, "seed"))
	e.live(st, "o", session.Options{Header: header("o", "/w"), Seed: seed})
	_, evs := e.read("o")
	sameEvents(e.t, evs, seed)
}

func loadedDifferent(e *env) {
	e.stored(header("d", "/w"), Build(0, OneTurn(1, "one")))
	st := newStore()
	a := e.attach(st)
	h, _, err := a.c.Load(e.ctx, "d")
	e.must(err)
	s, _ := e.live(st, "d", session.Options{Header: h, Seed: Build(0, OneTurn(1, "other"))})
	wantErr(e.t, st.FlushSession(e.ctx, s), store.ErrCollision, "6 event(s) that do not match")
}

func loadedPrefixSuffix(e *env) {
	e.stored(header("p", "/w"), Build(0, OneTurn(1, "one")))
	st := newStore()
	a := e.attach(st)
	h, evs, err := a.c.Load(e.ctx, "p")
	e.must(err)
	seed := append(slices.Clone(evs), Build(6, OneTurn(2, "two"))...)
	e.live(st, "p", session.Options{Header: h, Seed: seed})
	if n, _ := a.fb.Counts(); n != 6 {
		e.t.Fatalf("wrote %d events, want the 6 of the suffix", n)
	}
	_, got := e.read("p")
	sameEvents(e.t, got, seed)
}

func cwdMismatch(e *env) {
	for i, c := range []struct{ stored, live string }{{"/a", "/b"}, {"", "/b"}, {"/a", ""}} {
		id := session.ID(fmt.Sprintf("cwd-%d", i))
		e.stored(header(id, c.stored), Build(0, OneTurn(1, "one")))
		st := newStore()
		a := e.attach(st)
		h, evs, err := a.c.Load(e.ctx, id)
		e.must(err)
		h.Cwd = c.live
		s, _ := e.live(st, id, session.Options{Header: h, Seed: evs})
		wantErr(e.t, st.FlushSession(e.ctx, s), store.ErrCollision, "different cwd")
	}
}

func appendAdoptsStored(e *env) {
	e.stored(header("adopt", "/w"), append(Build(0, OneTurn(1, "one")), Build(6, []Op{TurnStart(2), StepStart(2, 1)})...))
	a := e.attach(nil)
	wantErr(e.t, a.c.Append(e.ctx, "adopt", Build(8, []Op{TurnStart(3)})), store.ErrSeq, "expected 10")
	e.must(a.c.Append(e.ctx, "adopt", Build(10, []Op{TurnStart(3), TurnEnd(3)})))
	a.close(e.t)
	_, evs := e.reload("adopt")
	checkSeqs(e.t, evs, 12)
	checkLog(e.t, evs)
}

func emptyAppendLazy(e *env) {
	a := e.attach(nil)
	e.must(a.c.Create(e.ctx, header("empty", "")))
	e.must(a.c.Append(e.ctx, "empty", nil))
	infos, err := a.c.List(e.ctx, store.Query{})
	e.must(err)
	if len(infos) != 0 {
		e.t.Fatalf("listed %v", infos)
	}
	a.close(e.t)
	a2 := e.attach(nil)
	e.must(a2.c.Create(e.ctx, header("empty", "")))
}

func loadMissing(e *env) {
	a := e.attach(nil)
	_, _, err := a.c.Load(e.ctx, "nope")
	wantErr(e.t, err, store.ErrNotFound, `"nope" not found`)
	_, _, err = a.c.Read(e.ctx, "nope")
	wantErr(e.t, err, store.ErrNotFound, "")
	_, _, err = a.c.Tail(e.ctx, "nope", 5)
	wantErr(e.t, err, store.ErrNotFound, "")
}

func createDuplicates(e *env) {
	a := e.attach(nil)
	e.must(a.c.Create(e.ctx, header("dup", "/w")))
	wantErr(e.t, a.c.Create(e.ctx, header("dup", "/w")), store.ErrExists, "already exists in this backend")
	e.must(a.c.Append(e.ctx, "dup", Build(0, OneTurn(1, "x"))))
	a.close(e.t)
	a2 := e.attach(nil)
	wantErr(e.t, a2.c.Create(e.ctx, header("dup", "/elsewhere")), store.ErrExists, "already has a persisted log")
	wantErr(e.t, a2.c.Create(e.ctx, header("dup", "")), store.ErrExists, "already has a persisted log")
}

func unknownVersion(e *env) {
	e.stored(header("v", "/w"), Build(0, OneTurn(1, "x")))
	e.f.SetVersion(e.t, e.dir, "v", 7)
	a := e.attach(nil)
	_, _, err := a.c.Load(e.ctx, "v")
	wantErr(e.t, err, store.ErrVersion, "unsupported session format version 7")
	_, _, err = a.c.Read(e.ctx, "v")
	wantErr(e.t, err, store.ErrVersion, "")
	_, _, err = a.c.Tail(e.ctx, "v", 3)
	wantErr(e.t, err, store.ErrVersion, "")
	wantErr(e.t, a.c.Append(e.ctx, "v", Build(6, []Op{TurnStart(2)})), store.ErrVersion, "")
	st := newStore()
	a2 := e.attach(st)
	_ = a2
	s, _ := e.live(st, "v", session.Options{Header: header("v", "/w")})
	wantErr(e.t, st.FlushSession(e.ctx, s), nil, "")
}

func flushBeforeInit(e *env) {
	st := newStore()
	a := e.attach(st)
	s, err := st.Prepare("f", session.Options{Header: header("f", "")})
	e.must(err)
	detach, err := st.Enter(s) // entered, never announced
	e.must(err)
	defer detach()
	e.apply(s, OneTurn(1, "x"))
	e.must(a.c.Flush(e.ctx, s))
	_, evs := e.read("f")
	checkSeqs(e.t, evs, 6)
}

func tornTailLoad(e *env) {
	e.stored(header("torn", "/w"), append(Build(0, OneTurn(1, "one")), Build(6, []Op{TurnStart(2), StepStart(2, 1)})...))
	e.f.Tear(e.t, e.dir, "torn")
	_, evs := e.reload("torn")
	checkSeqs(e.t, evs, 10)
	checkLog(e.t, evs)
	if r := lastReason(e.t, evs); r != session.EndInterrupted {
		e.t.Fatalf("reason %q", r)
	}
	_, again := e.reload("torn")
	sameEvents(e.t, again, evs)
}

func corruptCommitted(e *env) {
	if e.f.Corrupt == nil {
		e.t.Skip("factory has no Corrupt")
	}
	e.stored(header("bad", "/w"), append(Build(0, OneTurn(1, "one")), Build(6, OneTurn(2, "two"))...))
	want := e.f.Corrupt(e.t, e.dir, "bad")
	a := e.attach(nil)
	_, _, err := a.c.Load(e.ctx, "bad")
	wantErr(e.t, err, store.ErrCorrupt, want)
	// Nothing was cut or appended.
	_, _, err = a.c.Load(e.ctx, "bad")
	wantErr(e.t, err, store.ErrCorrupt, want)
}

func listSummary(e *env) {
	a := e.attach(nil)
	add := func(id session.ID, cwd string, turns int) {
		e.must(a.c.Create(e.ctx, header(id, cwd)))
		var evs []session.Event
		for n := 1; n <= turns; n++ {
			evs = append(evs, Build(int64(len(evs)), OneTurn(n, fmt.Sprintf("%s prompt %d", id, n)))...)
		}
		e.must(a.c.Append(e.ctx, id, evs))
	}
	add("a1", "/a", 1)
	add("a2", "/a", 3)
	add("b1", "/b", 2)
	add("n1", "", 4)
	long := strings.Repeat("word ", 40)
	e.must(a.c.Create(e.ctx, header("long", "/b")))
	e.must(a.c.Append(e.ctx, "long", Build(0, OneTurn(1, long))))
	infos, err := a.c.List(e.ctx, store.Query{})
	e.must(err)
	var ids []session.ID
	for _, in := range infos {
		ids = append(ids, in.Header.ID)
	}
	// Newest activity first: more events → later times in built logs.
	if want := []session.ID{"n1", "a2", "b1", "a1", "long"}; !slices.Equal(ids, want) {
		e.t.Fatalf("order %v, want %v", ids, want)
	}
	if infos[1].Turns != 3 || infos[1].Title != "a2 prompt 1" || infos[1].Events != 18 {
		e.t.Fatalf("a2 %+v", infos[1])
	}
	lt := infos[4].Title
	if !strings.HasSuffix(lt, "…") || len([]rune(lt)) > store.TitleRunes {
		e.t.Fatalf("long title %q", lt)
	}
	onlyA, err := a.c.List(e.ctx, store.Query{Cwd: "/a"})
	e.must(err)
	if len(onlyA) != 2 || onlyA[0].Header.ID != "a2" || onlyA[1].Header.ID != "a1" {
		e.t.Fatalf("cwd /a: %v", onlyA)
	}
	one, err := a.c.List(e.ctx, store.Query{Limit: 1})
	e.must(err)
	if len(one) != 1 || one[0].Header.ID != "n1" {
		e.t.Fatalf("limit: %v", one)
	}
	a.close(e.t)
	// Another instance sees the same listing.
	a2 := e.attach(nil)
	again, err := a2.c.List(e.ctx, store.Query{})
	e.must(err)
	if !slices.EqualFunc(again, infos, func(x, y store.Info) bool { return x == y }) {
		e.t.Fatalf("listing differs across instances:\n%v\n%v", again, infos)
	}
}

func tail(e *env) {
	var evs []session.Event
	for n := 1; n <= 3; n++ {
		evs = append(evs, Build(int64(len(evs)), OneTurn(n, "p"))...)
	}
	evs = append(evs, Build(18, []Op{TurnStart(4), StepStart(4, 1)})...)
	e.stored(header("tail", "/w"), evs)
	a := e.attach(nil)
	h, got, err := a.c.Tail(e.ctx, "tail", 5)
	e.must(err)
	if h.ID != "tail" || h.Cwd != "/w" {
		e.t.Fatalf("header %+v", h)
	}
	sameEvents(e.t, got, evs[15:])
	_, got, err = a.c.Tail(e.ctx, "tail", 1000)
	e.must(err)
	sameEvents(e.t, got, evs)
	_, got, err = a.c.Tail(e.ctx, "tail", 0)
	e.must(err)
	if len(got) != 0 {
		e.t.Fatalf("tail 0 returned %d", len(got))
	}
	e.f.Tear(e.t, e.dir, "tail")
	_, got, err = a.c.Tail(e.ctx, "tail", 3)
	e.must(err)
	sameEvents(e.t, got, evs[17:])
}

func readNoRepair(e *env) {
	e.stored(header("ro", ""), append(Build(0, OneTurn(1, "one")), Build(6, []Op{TurnStart(2)})...))
	_, evs := e.read("ro")
	checkSeqs(e.t, evs, 7)
	_, evs = e.read("ro")
	checkSeqs(e.t, evs, 7)
	_, evs = e.reload("ro")
	checkSeqs(e.t, evs, 8)
}

var errDiskFull = errors.New("no space left on device (injected)")

func writeFailureKeepsBuffer(e *env) {
	st := newStore()
	a := e.attach(st)
	s, _ := e.live(st, "full", session.Options{Header: header("full", "/w")})
	e.apply(s, OneTurn(1, "one"))
	a.fb.FailNext("AppendBatch", errDiskFull)
	wantErr(e.t, st.FlushSession(e.ctx, s), errDiskFull, "")
	e.apply(s, OneTurn(2, "two"))
	a.fb.FailNext("AppendBatch", errDiskFull)
	wantErr(e.t, st.FlushSession(e.ctx, s), errDiskFull, "")
	e.flush(st, s)
	if n, b := a.fb.Counts(); n != 12 || b != 1 {
		e.t.Fatalf("wrote %d events in %d batches, want 12 in 1", n, b)
	}
	e.apply(s, OneTurn(3, "three"))
	e.flush(st, s)
	_, evs := e.read("full")
	sameEvents(e.t, evs, s.Events())
	checkLog(e.t, evs)
}

func seedWriteRetried(e *env) {
	st := newStore()
	a := e.attach(st)
	a.fb.FailNext("AppendBatch", errDiskFull)
	seed := Build(0, OneTurn(1, "parent"))
	h := header("retry", "/w")
	h.ParentSession, h.SeedLength = "parent", 6
	s, _ := e.live(st, "retry", session.Options{Header: h, Seed: seed})
	if n, _ := a.fb.Counts(); n != 0 {
		e.t.Fatalf("wrote %d", n)
	}
	e.flush(st, s)
	_, evs := e.read("retry")
	sameEvents(e.t, evs, seed)
}

func lockExclusion(e *env) {
	a1 := e.attach(nil)
	e.must(a1.c.Create(e.ctx, header("locked", "/w")))
	e.must(a1.c.Append(e.ctx, "locked", Build(0, OneTurn(1, "x"))))
	a2 := e.attach(nil)
	_, _, err := a2.c.Load(e.ctx, "locked")
	wantErr(e.t, err, store.ErrInUse, fmt.Sprintf("session locked is in use by another dsh process (pid %d)", os.Getpid()))
	var inUse *store.InUseError
	if !errors.As(err, &inUse) || inUse.PID != os.Getpid() || inUse.ID != "locked" {
		e.t.Fatalf("error %#v", err)
	}
	wantErr(e.t, a2.c.Append(e.ctx, "locked", Build(6, []Op{TurnStart(2)})), store.ErrInUse, "")
	wantErr(e.t, a2.c.Create(e.ctx, header("locked", "/w")), store.ErrInUse, "")
	// A live session with that id in the second instance cannot write either.
	st := newStore()
	a3 := e.attach(st)
	_ = a3
	s, _ := e.live(st, "locked", session.Options{Header: header("locked", "/w")})
	wantErr(e.t, st.FlushSession(e.ctx, s), store.ErrInUse, "")
	// Readers are never blocked.
	if _, _, err := a2.c.Read(e.ctx, "locked"); err != nil {
		e.t.Fatal(err)
	}
	if _, err := a2.c.List(e.ctx, store.Query{}); err != nil {
		e.t.Fatal(err)
	}
	// Released: the other instance may resume now.
	e.must(a1.c.Release(e.ctx, "locked"))
	_, evs, err := a2.c.Load(e.ctx, "locked")
	e.must(err)
	checkSeqs(e.t, evs, 6)
	e.must(a2.c.Append(e.ctx, "locked", Build(6, []Op{TurnStart(2), TurnEnd(2)})))
}

func loadAfterOwnerDisposed(e *env) {
	st := newStore()
	a := e.attach(st)
	s, scope := e.live(st, "again", session.Options{Header: header("again", "/w")})
	e.apply(s, OneTurn(1, "one"))
	e.apply(s, []Op{TurnStart(2), TurnEnd(2)}) // not flushed
	e.must(scope.Close())                      // the agent is disposed
	h, evs, err := a.c.Load(e.ctx, "again")
	e.must(err)
	checkSeqs(e.t, evs, 8)
	s2, _ := e.live(st, "again", session.Options{Header: h, Seed: evs})
	e.apply(s2, OneTurn(3, "three"))
	e.flush(st, s2)
	_, got := e.read("again")
	sameEvents(e.t, got, s2.Events())
	checkLog(e.t, got)
}

func loadLiveRejected(e *env) {
	st := newStore()
	a := e.attach(st)
	s, _ := e.live(st, "busy", session.Options{Header: header("busy", "/w")})
	e.apply(s, append(OneTurn(1, "one"), TurnStart(2)))
	e.flush(st, s)
	_, _, err := a.c.Load(e.ctx, "busy")
	wantErr(e.t, err, store.ErrLive, "")
	e.apply(s, []Op{TurnEnd(2)})
	e.flush(st, s)
	_, evs := e.read("busy")
	checkLog(e.t, evs)
}

func pathIDs(e *env) {
	ids := []session.ID{"a/b", "..", ".", "/etc/passwd", "a\x00b", "a~b", "ü-日本-😀", "plain-ID_1.2", "..\\..\\evil", "CON", "~002E"}
	a := e.attach(nil)
	wantErr(e.t, a.c.Create(e.ctx, header("x\xffy", "")), nil, "not valid UTF-8")
	for i, id := range ids {
		e.must(a.c.Create(e.ctx, header(id, fmt.Sprintf("/cwd/%d", i%2))))
		e.must(a.c.Append(e.ctx, id, Build(0, OneTurn(1, string(id)))))
	}
	infos, err := a.c.List(e.ctx, store.Query{})
	e.must(err)
	var got []session.ID
	for _, in := range infos {
		got = append(got, in.Header.ID)
	}
	slices.Sort(got)
	want := slices.Clone(ids)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		e.t.Fatalf("listed %q, want %q", got, want)
	}
	a.close(e.t)
	for _, id := range ids {
		h, evs := e.reload(id)
		if h.ID != id {
			e.t.Fatalf("header id %q, want %q", h.ID, id)
		}
		checkSeqs(e.t, evs, 6)
	}
	_, _, err = e.attach(nil).c.Load(e.ctx, "")
	wantErr(e.t, err, nil, "empty")
}

func concurrentSessions(e *env) {
	st := newStore()
	a := e.attach(st)
	const n, turns = 8, 4
	var wg sync.WaitGroup
	errs := make(chan error, n)
	var sessions []*session.Session
	for i := range n {
		id := session.ID(fmt.Sprintf("conc-%d", i))
		s, _ := e.live(st, id, session.Options{Header: header(id, "/w")})
		sessions = append(sessions, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := 1; t <= turns; t++ {
				start := int64(s.Len())
				ops := []Op{TurnStart(t), User("go")}
				ops = append(ops, ToolStep(t, 1, start+2, 5, llm.CallID(fmt.Sprintf("c%d", t)))...)
				ops = append(ops, TurnEnd(t))
				if err := Apply(context.Background(), s, ops); err != nil {
					errs <- err
					return
				}
				if err := st.FlushSession(context.Background(), s); err != nil {
					errs <- err
					return
				}
				if _, err := a.c.List(context.Background(), store.Query{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.t.Fatal(err)
	}
	a.close(e.t)
	for _, s := range sessions {
		_, evs := e.reload(s.ID())
		sameEvents(e.t, evs, s.Events())
		checkLog(e.t, evs)
	}
}

func missedNotification(e *env) {
	st := newStore()
	a := e.attach(st)
	s, _ := e.live(st, "missed", session.Options{Header: header("missed", "")})
	// A listener registered in front fails once, so the coordinator never
	// hears of that event; it is in the log all the same.
	fail := true
	dispose := st.Appended.Listen(func(_ context.Context, ap session.Appended) error {
		if fail && ap.Event.Type == session.TypeUserMessage {
			fail = false
			return errors.New("observer failed")
		}
		return nil
	}, kernel.Prepend())
	defer dispose()
	e.apply(s, []Op{TurnStart(1)})
	if err := Apply(e.ctx, s, []Op{User("lost?")}); err == nil {
		e.t.Fatal("want the observer error")
	}
	e.apply(s, []Op{TurnEnd(1)})
	e.flush(st, s)
	a.close(e.t)
	_, evs := e.reload("missed")
	sameEvents(e.t, evs, s.Events())
}

func releaseThenResume(e *env) {
	st := newStore()
	a1 := e.attach(st)
	s, scope := e.live(st, "handoff", session.Options{Header: header("handoff", "/w")})
	e.apply(s, OneTurn(1, "one"))
	e.apply(s, []Op{TurnStart(2), StepStart(2, 1)}) // left open: the process "dies"
	e.must(scope.Close())
	e.must(a1.c.Release(e.ctx, "handoff"))
	// Another instance resumes: the open turn is closed as interrupted.
	st2 := newStore()
	a2 := e.attach(st2)
	h, evs, err := a2.c.Load(e.ctx, "handoff")
	e.must(err)
	checkSeqs(e.t, evs, 10)
	s2, _ := e.live(st2, "handoff", session.Options{Header: h, Seed: evs})
	e.apply(s2, OneTurn(3, "three"))
	e.flush(st2, s2)
	if n, _ := a2.fb.Counts(); n != 6 {
		e.t.Fatalf("wrote %d events, want 6", n)
	}
	_, got := e.read("handoff")
	sameEvents(e.t, got, s2.Events())
	checkLog(e.t, got)
}

func adoptionRetried(e *env) {
	st := newStore()
	a := e.attach(st)
	a.fb.FailNext("LoadLive", errDiskFull)
	s, _ := e.live(st, "transient", session.Options{Header: header("transient", "/w")})
	e.apply(s, OneTurn(1, "one"))
	a.fb.FailNext("LoadLive", errDiskFull)
	wantErr(e.t, st.FlushSession(e.ctx, s), errDiskFull, "")
	e.flush(st, s)
	_, evs := e.read("transient")
	sameEvents(e.t, evs, s.Events())
}

// scan collects what Coordinator.Scan streams, checking the header comes
// first.
func scan(e *env, c *store.Coordinator, id session.ID) (session.Header, []session.Event, error) {
	var h session.Header
	var got []session.Event
	headed := false
	err := c.Scan(e.ctx, id, func(hh session.Header) error {
		h, headed = hh, true
		return nil
	}, func(ev session.Event) error {
		if !headed {
			e.t.Fatal("an event before the header")
		}
		got = append(got, ev)
		return nil
	})
	return h, got, err
}

func scanStreams(e *env) {
	h := header("scan", "/w")
	e.stored(h, append(Build(0, OneTurn(1, "one")), Build(6, []Op{TurnStart(2), StepStart(2, 1)})...))
	if e.f.Tear != nil {
		e.f.Tear(e.t, e.dir, "scan")
	}
	_, want := e.read("scan")
	a := e.attach(nil)
	// A scan never loads the log whole: with the whole-log read failing it
	// still streams every stored event (a torn tail left out, an open turn
	// left open, as Read).
	a.fb.FailNext("LoadStored", errors.New("LoadStored must not be called (injected)"))
	gh, got, err := scan(e, a.c, "scan")
	e.must(err)
	if gh.ID != "scan" || gh.Cwd != "/w" || gh.CreatedAt != h.CreatedAt {
		e.t.Fatalf("header %+v", gh)
	}
	sameEvents(e.t, got, want)
	checkSeqs(e.t, got, 8)
	// fn's error stops the scan and is returned.
	stop := errors.New("stop here")
	n := 0
	err = a.c.Scan(e.ctx, "scan", nil, func(session.Event) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		e.t.Fatalf("after %d events: %v", n, err)
	}
	_, _, err = scan(e, a.c, "nope")
	wantErr(e.t, err, store.ErrNotFound, "")
	if e.f.Corrupt != nil {
		e.stored(header("scanbad", "/w"), append(Build(0, OneTurn(1, "one")), Build(6, OneTurn(2, "two"))...))
		e.f.Corrupt(e.t, e.dir, "scanbad")
		_, _, err := scan(e, a.c, "scanbad")
		wantErr(e.t, err, store.ErrCorrupt, "")
	}
}

func exportClosesOpenTurn(e *env) {
	h := header("exp", "/w")
	open := append(Build(0, OneTurn(1, "one")), Build(6, []Op{TurnStart(2), StepStart(2, 1), Assistant(2, 1, "x", "call-x")})...)
	e.stored(h, open)
	// Another instance holding the session: export refuses rather than
	// read a log being written.
	holder := e.attach(nil)
	_, _, err := holder.c.Load(e.ctx, "exp")
	e.must(err)
	a := e.attach(nil)
	err = a.c.Export(e.ctx, "exp", nil, func(session.Event) error { return nil })
	wantErr(e.t, err, store.ErrInUse, "")
	e.must(holder.c.Release(e.ctx, "exp"))
	holder.close(e.t)
	// The holder's Load repaired the log; store an open one again.
	e.stored(header("exp2", "/w"), open)
	var got []session.Event
	var gh session.Header
	e.must(a.c.Export(e.ctx, "exp2", func(hh session.Header) error {
		gh = hh
		return nil
	}, func(ev session.Event) error {
		got = append(got, ev)
		return nil
	}))
	if gh.ID != "exp2" {
		e.t.Fatalf("header %+v", gh)
	}
	// What Export streams is what resuming sees: the stored events and
	// the closers Load would store.
	_, want := e.reload("exp2")
	sameEvents(e.t, got, want)
	if tail := types(got[len(got)-3:]); !slices.Equal(tail, []string{"tool/result", "step/end", "turn/end"}) {
		e.t.Fatalf("tail %v", tail)
	}
	// Export itself stored nothing: a fresh store (reload repaired the
	// log, so use a third copy) still ends open.
	e.stored(header("exp3", "/w"), open)
	e.must(a.c.Export(e.ctx, "exp3", nil, func(session.Event) error { return nil }))
	_, after := e.read("exp3")
	checkSeqs(e.t, after, len(open))
	// The lock is dropped after the export: another instance may resume.
	b := e.attach(nil)
	_, _, err = b.c.Load(e.ctx, "exp3")
	e.must(err)
}
