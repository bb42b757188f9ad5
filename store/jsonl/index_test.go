package jsonl

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/storetest"
)

func listIDs(t *testing.T, h *harness, q store.Query) map[session.ID]store.Info {
	t.Helper()
	infos, err := h.c.List(h.ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	out := map[session.ID]store.Info{}
	for _, in := range infos {
		out[in.Header.ID] = in
	}
	return out
}

func seedSessions(t *testing.T, h *harness, n int) {
	t.Helper()
	for i := range n {
		s := h.live(session.ID(fmt.Sprintf("s%d", i)), fmt.Sprintf("/p/%d", i%3))
		h.apply(s, storetest.OneTurn(1, fmt.Sprintf("prompt %d", i)))
		if err := h.st.FlushSession(h.ctx, s); err != nil {
			t.Fatal(err)
		}
	}
}

func TestIndexRebuiltWhenMissingOrGarbled(t *testing.T) {
	root := t.TempDir()
	h := newHarness(t, root, Options{NoSync: true})
	seedSessions(t, h, 9)
	want := listIDs(t, h, store.Query{})
	if len(want) != 9 {
		t.Fatalf("listed %d", len(want))
	}
	idx := filepath.Join(root, indexFile)
	if err := os.Remove(idx); err != nil {
		t.Fatal(err)
	}
	got := listIDs(t, h, store.Query{})
	if len(got) != 9 || got["s4"] != want["s4"] {
		t.Fatalf("after removing the index: %v", got)
	}
	if data, err := os.ReadFile(idx); err != nil || bytes.Count(data, []byte("\n")) != 9 {
		t.Fatalf("index not rebuilt: %v %q", err, data)
	}
	// Garbage and a torn record are skipped.
	appendFile(t, idx, "garbage\n{\"file\":\"x\"}\n{\"file\":")
	got = listIDs(t, h, store.Query{Cwd: "/p/1"})
	if len(got) != 3 || got["s4"] != want["s4"] {
		t.Fatalf("after garbling the index: %v", got)
	}
}

func TestIndexStaleLogsRescanned(t *testing.T) {
	root := t.TempDir()
	h := newHarness(t, root, Options{NoSync: true})
	s := h.live("stale", "/w")
	h.apply(s, storetest.OneTurn(1, "first prompt"))
	if err := h.st.FlushSession(h.ctx, s); err != nil {
		t.Fatal(err)
	}
	p := logPath(t, root, "stale")
	// Another writer (or a crash before its index record) grew the log.
	var extra []byte
	for _, e := range storetest.Build(6, storetest.OneTurn(2, "second")) {
		line, _ := appendEventLine(e)
		extra = append(extra, line...)
	}
	appendFile(t, p, string(extra))
	got := listIDs(t, h, store.Query{})["stale"]
	if got.Events != 12 || got.Turns != 2 || got.Title != "first prompt" || got.LastActivity != storetest.BaseTime+11 {
		t.Fatalf("incremental rescan: %+v", got)
	}
	// A torn tail is not counted; cutting it (shrinking the file) still
	// lists right.
	appendFile(t, p, `{"type":"turn/start","seq":12,"ti`)
	if got := listIDs(t, h, store.Query{})["stale"]; got.Events != 12 {
		t.Fatalf("torn tail counted: %+v", got)
	}
	if err := os.Truncate(p, size(t, p)-int64(len(extra))-33); err != nil {
		t.Fatal(err)
	}
	if got := listIDs(t, h, store.Query{})["stale"]; got.Events != 6 || got.Turns != 1 {
		t.Fatalf("after shrinking: %+v", got)
	}
	// A log that is not a session log is not listed.
	if err := os.MkdirAll(filepath.Join(root, noCwdBucket), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, noCwdBucket, "junk.jsonl"), []byte("not a header\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := listIDs(t, h, store.Query{}); len(got) != 1 {
		t.Fatalf("listed %v", got)
	}
}

func TestIndexCompacts(t *testing.T) {
	defer func(a, b int) { checkEvery, listSlack = a, b }(checkEvery, listSlack)
	defer func(m int64) { minCompactBytes = m }(minCompactBytes)
	checkEvery, listSlack, minCompactBytes = 1, 4, 2048
	root := t.TempDir()
	h := newHarness(t, root, Options{NoSync: true})
	seedSessions(t, h, 3)
	s := h.live("busy", "/w")
	for turn := 1; turn <= 40; turn++ {
		h.apply(s, []storetest.Op{storetest.TurnStart(turn), storetest.TurnEnd(turn)})
		if err := h.st.FlushSession(h.ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	idx := filepath.Join(root, indexFile)
	data, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n >= 40 {
		t.Fatalf("index has %d records after 43 writes: never compacted", n)
	}
	got := listIDs(t, h, store.Query{})
	if len(got) != 4 || got["busy"].Turns != 40 {
		t.Fatalf("listing after compaction: %v", got)
	}
	appendFile(t, idx, strings.Repeat(string(data), 3))
	listIDs(t, h, store.Query{})
	data, _ = os.ReadFile(idx)
	if n := bytes.Count(data, []byte("\n")); n != 4 {
		t.Fatalf("listing did not compact: %d records", n)
	}
}

func TestTailLongLinesAndHeader(t *testing.T) {
	root := t.TempDir()
	h := newHarness(t, root, Options{NoSync: true})
	cwd := "/" + strings.Repeat("very-long-directory-name/", 500) // > 8 KiB header
	s := h.live("long", cwd)
	big := strings.Repeat("x", 200<<10)
	h.apply(s, []storetest.Op{storetest.TurnStart(1), storetest.User(big), storetest.StepStart(1, 1),
		storetest.Assistant(1, 1, big), storetest.StepEnd(1, 1), storetest.TurnEnd(1)})
	if err := h.st.FlushSession(h.ctx, s); err != nil {
		t.Fatal(err)
	}
	hdr, evs, err := h.c.Tail(h.ctx, "long", 4)
	if err != nil {
		t.Fatal(err)
	}
	if hdr.Cwd != cwd || len(evs) != 4 || evs[0].Seq != 2 || evs[1].Type != session.TypeAssistantMessage {
		t.Fatalf("tail: %q %d %v", hdr.Cwd[:20], len(evs), evs)
	}
	am, err := session.Decode[session.AssistantMessage](evs[1])
	if err != nil || llm.TextOf(am.Content) != big {
		t.Fatalf("big event: %v", err)
	}
	// A torn fragment longer than a read chunk is skipped.
	appendFile(t, logPath(t, root, "long"), `{"type":"turn/start","seq":6,"data":"`+strings.Repeat("y", 150<<10))
	_, evs, err = h.c.Tail(h.ctx, "long", 2)
	if err != nil || len(evs) != 2 || evs[1].Seq != 5 {
		t.Fatalf("tail over a torn fragment: %v %v", err, evs)
	}
	infos, err := h.c.List(h.ctx, store.Query{Cwd: cwd})
	if err != nil || len(infos) != 1 || infos[0].Title == "" {
		t.Fatalf("list with a long header: %v %v", err, infos)
	}
}

func TestStaleLockFileDoesNotBlock(t *testing.T) {
	root := t.TempDir()
	enc, _ := store.EncodeSegment("stale-lock")
	if err := os.MkdirAll(filepath.Join(root, locksDir), 0o700); err != nil {
		t.Fatal(err)
	}
	// Left by a process that died: flock is gone, the file remains.
	if err := os.WriteFile(filepath.Join(root, locksDir, enc+".lock"), []byte("999999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, root, Options{NoSync: true})
	s := h.live("stale-lock", "")
	h.apply(s, storetest.OneTurn(1, "x"))
	if err := h.st.FlushSession(h.ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Release(h.ctx, "stale-lock"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, locksDir, enc+".lock")); !os.IsNotExist(err) {
		t.Fatalf("lock file still there after release: %v", err)
	}
}

// TestIndexConcurrentFlushesAndCompaction flushes many sessions at once
// with the index checked at every record and compacted whenever it grows
// past a small size, so record writes, the read-locked size checks and
// compactions interleave: the listing afterwards has every session with
// every turn it flushed (a record lost to a compaction would show an older
// turn count; a read of compactAt outside its lock fails under -race).
func TestIndexConcurrentFlushesAndCompaction(t *testing.T) {
	defer func(a, b int) { checkEvery, listSlack = a, b }(checkEvery, listSlack)
	defer func(m int64) { minCompactBytes = m }(minCompactBytes)
	checkEvery, listSlack, minCompactBytes = 1, 4, 2048
	h := newHarness(t, t.TempDir(), Options{NoSync: true})
	const sessions, turns = 12, 15
	ss := make([]*session.Session, sessions)
	for i := range ss {
		ss[i] = h.live(session.ID(fmt.Sprintf("c%d", i)), "/w")
	}
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Go(func() { flushTurns(t, h, s, turns, func() {}) })
	}
	wg.Wait()
	got := listIDs(t, h, store.Query{})
	for _, s := range ss {
		if in, ok := got[s.ID()]; !ok || in.Turns != turns {
			t.Errorf("%s listed as %+v (present %v), want %d turns", s.ID(), in, ok, turns)
		}
	}
	data, err := os.ReadFile(filepath.Join(h.root, indexFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n >= sessions*turns {
		t.Errorf("index has %d records after %d writes: never compacted", n, sessions*turns)
	}
}
