package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/internal/eventjson"
	"github.com/dshq/dsh/store/storetest"
)

// splitSmall makes loads of a few hundred rows read in four concurrent
// parts, the path a long session takes, for the rest of the test.
func splitSmall(t *testing.T) {
	oldRows, oldProcs := minPartRows, runtime.GOMAXPROCS(4)
	minPartRows = 100
	t.Cleanup(func() { minPartRows = oldRows; runtime.GOMAXPROCS(oldProcs) })
}

// seedLog stores evs as session id.
func seedLog(t *testing.T, dir string, id session.ID, evs []session.Event) {
	t.Helper()
	b, err := Open(dbPath(dir), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	storetest.Seed(t, b, session.Header{ID: id, CreatedAt: storetest.BaseTime}, evs)
}

func loadStored(t *testing.T, dir string, id session.ID) (*store.Stored, error) {
	t.Helper()
	b, err := Open(dbPath(dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	return b.LoadStored(context.Background(), id)
}

var eventCmp = cmpopts.IgnoreUnexported(session.Event{})

// TestLoadInParts reads one session in four concurrent seq ranges and checks
// the result against what was written, including when the stored event
// count (which only splits the work) is wrong in either direction, and
// that holes and bad rows are found in whichever part they fall.
func TestLoadInParts(t *testing.T) {
	splitSmall(t)
	evs := storetest.BigLog(600)
	n := len(evs)
	dir := t.TempDir()
	seedLog(t, dir, "s", evs)

	check := func(t *testing.T) {
		t.Helper()
		st, err := loadStored(t, dir, "s")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(evs, st.Events, eventCmp); d != "" {
			t.Fatalf("loaded events differ (-written +loaded):\n%s", d)
		}
		if st.Torn != nil {
			t.Fatalf("torn %v for an intact log", st.Torn)
		}
	}
	t.Run("intact", check)
	for _, count := range []int{0, 3, n / 2, n + 1, n + 250, 4 * n} {
		t.Run(fmt.Sprintf("count=%d", count), func(t *testing.T) {
			raw(t, dir, func(db *sql.DB) { exec(t, db, `UPDATE sessions SET event_count = ?`, count) })
			check(t)
		})
	}
	raw(t, dir, func(db *sql.DB) { exec(t, db, `UPDATE sessions SET event_count = ?`, n) })

	corrupt := func(t *testing.T, mutate string, seq int, want string) {
		t.Helper()
		var typ, text string
		var at int64
		raw(t, dir, func(db *sql.DB) {
			if err := db.QueryRow(`SELECT type, time, event FROM events WHERE seq = ?`, seq).Scan(&typ, &at, &text); err != nil {
				t.Fatal(err)
			}
			exec(t, db, mutate, seq)
		})
		_, err := loadStored(t, dir, "s")
		raw(t, dir, func(db *sql.DB) {
			exec(t, db, `INSERT OR REPLACE INTO events(session_id, seq, type, time, event) VALUES('s', ?, ?, ?, ?)`, seq, typ, at, text)
		})
		var ce *store.CorruptError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
			t.Fatalf("load: %v, want a corruption error containing %q", err, want)
		}
	}
	// Positions in the second, third and fourth quarter of the log, and the
	// last rows of the first two parts (a part one row short leaves a gap
	// that must be closed up, or the next part's first row is not where
	// the check looks); each a committed row (the log ends with a
	// turn/end).
	for _, seq := range []int{n/4 + 7, n/2 + 1, 3*n/4 + 3, n/4 - 1, n/2 - 1} {
		t.Run(fmt.Sprintf("hole@%d", seq), func(t *testing.T) {
			corrupt(t, `DELETE FROM events WHERE seq = ?`, seq,
				fmt.Sprintf("seq gap in committed region (expected %d, got %d)", seq, seq+1))
			check(t)
		})
		t.Run(fmt.Sprintf("garbage@%d", seq), func(t *testing.T) {
			corrupt(t, `UPDATE events SET event = 'not json' WHERE seq = ?`, seq,
				fmt.Sprintf("unparsable committed event at seq %d", seq))
			check(t)
		})
	}
}

// TestLoadTornTailInParts: rows after the last turn/end that end in a bad
// row are a torn tail, kept up to the bad row, even when the tail lies past
// the stored count in the last part.
func TestLoadTornTailInParts(t *testing.T) {
	splitSmall(t)
	evs := storetest.BigLog(600)
	dir := t.TempDir()
	seedLog(t, dir, "s", evs)
	n := len(evs)
	more := storetest.Build(int64(n), []storetest.Op{storetest.TurnStart(99), storetest.User("unfinished")})
	raw(t, dir, func(db *sql.DB) {
		for _, e := range more {
			line, err := eventjson.AppendEvent(nil, e)
			if err != nil {
				t.Fatal(err)
			}
			exec(t, db, `INSERT INTO events(session_id, seq, type, time, event) VALUES('s', ?, ?, ?, ?)`,
				e.Seq, e.Type, e.Time, strings.TrimSuffix(string(line), "\n"))
		}
		exec(t, db, `INSERT INTO events(session_id, seq, type, time, event) VALUES('s', ?, 'x', 0, '{"type":')`, n+len(more))
	})
	st, err := loadStored(t, dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(append(evs, more...), st.Events, eventCmp); d != "" {
		t.Fatalf("loaded events differ (-want +loaded):\n%s", d)
	}
	if st.Torn != int64(n+len(more)) {
		t.Fatalf("torn = %v, want %d", st.Torn, n+len(more))
	}
}

// TestConcurrentLoads runs loads of one session side by side on one
// backend: each takes its own pooled readers, and all see the same log.
func TestConcurrentLoads(t *testing.T) {
	splitSmall(t)
	evs := storetest.BigLog(600)
	dir := t.TempDir()
	seedLog(t, dir, "s", evs)
	b, err := Open(dbPath(dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			for range 5 {
				st, err := b.LoadStored(context.Background(), "s")
				if err == nil && len(st.Events) != len(evs) {
					err = fmt.Errorf("loaded %d events, want %d", len(st.Events), len(evs))
				}
				if err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	idle := len(b.readers)
	b.mu.Unlock()
	if idle == 0 || idle > maxParts {
		t.Fatalf("%d idle readers after the loads, want 1..%d", idle, maxParts)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.reader(); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("reader after Close: %v, want ErrClosed", err)
	}
}

func TestRawReaderCancelled(t *testing.T) {
	dir := t.TempDir()
	seedLog(t, dir, "s", storetest.BigLog(100))
	r, err := openRawReader(dbPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rows := 0
	err = r.readRange(ctx, "s", 0, 1<<62, true, func(int64, []byte) { rows++ })
	if !errors.Is(err, context.Canceled) || rows != 0 {
		t.Fatalf("read %d rows, err %v; want none and context.Canceled", rows, err)
	}
	// The statement was reset: the same reader reads again.
	if err := r.readRange(context.Background(), "s", 0, 1<<62, true, func(int64, []byte) { rows++ }); err != nil || rows < 100 {
		t.Fatalf("second read: %d rows, %v", rows, err)
	}
}

func TestRawReaderMissingFile(t *testing.T) {
	_, err := openRawReader(dbPath(t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "unable to open") {
		t.Fatalf("open of a missing database: %v", err)
	}
}

// TestCancelledAppendIsAllOrNothing cancels appends at arbitrary moments:
// an append that reports failure stored nothing (so retrying it works), and
// one that reports success stored everything. The driver reports a context
// cancelled during a statement as that statement's failure even when it
// completed, which once made a committed batch look failed.
func TestCancelledAppendIsAllOrNothing(t *testing.T) {
	bg := context.Background()
	b, err := Open(dbPath(t.TempDir()), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	scope := kernel.NewScope("cancel")
	defer scope.Close()
	c, err := store.Attach(scope, nil, b, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs := storetest.Build(0, storetest.OneTurn(1, "hi"))
	failed := 0
	for i := range 300 {
		id := session.ID(fmt.Sprintf("s%d", i))
		if err := c.Create(bg, session.Header{ID: id, CreatedAt: 1}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(bg)
		time.AfterFunc(time.Duration(i%40)*25*time.Microsecond, cancel)
		aerr := c.Append(ctx, id, evs)
		cancel()
		if aerr == nil {
			continue
		}
		failed++
		if err := c.Append(bg, id, evs); err != nil {
			t.Fatalf("append %d failed (%v), and its retry failed too: %v", i, aerr, err)
		}
		if _, got, err := c.Read(bg, id); err != nil || len(got) != len(evs) {
			t.Fatalf("after the retry of append %d: %d events, %v", i, len(got), err)
		}
	}
	t.Logf("%d of 300 appends were cut by their context", failed)
}

// A long range read (a scan, read without the memory map) and the short
// read-backs around it return the same events as a whole load, through
// the same pooled readers.
func TestReadRangeScanAndReadBack(t *testing.T) {
	old := scanRows
	scanRows = 50
	t.Cleanup(func() { scanRows = old })
	dir := t.TempDir()
	var evs []session.Event
	for turn := 1; len(evs) < 300; turn++ {
		evs = append(evs, storetest.Build(int64(len(evs)), storetest.OneTurn(turn, fmt.Sprintf("prompt %d", turn)))...)
	}
	seedLog(t, dir, "scan", evs)
	b, err := Open(dbPath(dir), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	read := func(from, to int64) []session.Event {
		t.Helper()
		var got []session.Event
		if err := b.ReadRange(ctx, "scan", from, to, func(e session.Event) error {
			got = append(got, e)
			return nil
		}); err != nil {
			t.Fatalf("ReadRange(%d, %d): %v", from, to, err)
		}
		return got
	}
	n := int64(len(evs))
	for range 3 {
		if diff := cmp.Diff(evs, read(0, n), cmpopts.IgnoreUnexported(session.Event{})); diff != "" {
			t.Fatalf("scan: %s", diff)
		}
		if diff := cmp.Diff(evs[10:20], read(10, 20), cmpopts.IgnoreUnexported(session.Event{})); diff != "" {
			t.Fatalf("read-back: %s", diff)
		}
	}
}

// TestReadRangeRowsOfEverySize reads rows far smaller and larger than the
// scratch buffer a range read reuses, in both orders, and keeps every
// event until the read ends: each must still hold its own payload (a row
// that grew the buffer, or a later row written over it, must not show
// through an event already handed out).
func TestReadRangeRowsOfEverySize(t *testing.T) {
	dir := t.TempDir()
	var evs []session.Event
	for turn := 1; len(evs) < 120; turn++ {
		evs = append(evs, storetest.Build(int64(len(evs)), storetest.OneTurn(turn, fmt.Sprintf("prompt %d", turn)))...)
	}
	sizes := []int{3, scratchBlock * 3, 10, scratchBlock - 1, scratchBlock + 1, 0, arenaBlock + 7, 1}
	for i := range evs {
		pad := strings.Repeat(string(rune('a'+i%26)), sizes[i%len(sizes)])
		evs[i].Data = json.RawMessage(fmt.Sprintf(`{"pad":%q,"i":%d}`, pad, i))
	}
	seedLog(t, dir, "sizes", evs)
	b, err := Open(dbPath(dir), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var got []session.Event
	if err := b.ReadRange(context.Background(), "sizes", 0, int64(len(evs)), func(e session.Event) error {
		got = append(got, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(evs) {
		t.Fatalf("read %d events, wrote %d", len(got), len(evs))
	}
	for i := range evs {
		// Payloads compared apart: a diff of megabyte strings is slow.
		if !bytes.Equal(got[i].Data, evs[i].Data) {
			t.Fatalf("event %d: payload %.60s… (%d bytes), wrote %.60s… (%d bytes)", i, got[i].Data, len(got[i].Data), evs[i].Data, len(evs[i].Data))
		}
		got[i].Data, evs[i].Data = nil, nil
	}
	if diff := cmp.Diff(evs, got, eventCmp); diff != "" {
		t.Fatalf("events read back (-written +read): %s", diff)
	}
}
