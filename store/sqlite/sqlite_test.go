package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/storetest"
)

func TestMain(m *testing.M) {
	if storetest.CrashChild(factory) {
		return
	}
	goleak.VerifyTestMain(m)
}

func dbPath(dir string) string { return filepath.Join(dir, "sessions.db") }

// raw opens a second, plain handle on the database, as another program would.
func raw(t testing.TB, dir string, fn func(db *sql.DB)) {
	t.Helper()
	db, err := sql.Open("sqlite", dbPath(dir)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fn(db)
}

func exec(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatal(err)
	}
}

var factory = storetest.Factory{
	Open: func(dir string) (store.Backend, error) { return Open(dbPath(dir), Options{}) },
	Tear: func(t testing.TB, dir string, id session.ID) {
		raw(t, dir, func(db *sql.DB) {
			exec(t, db, `INSERT INTO events(session_id, seq, type, time, event) SELECT ?, max(seq)+1, 'assistant/chunk', 0, '{"type":"assistant/chunk","seq":' FROM events WHERE session_id = ?`, string(id), string(id))
		})
	},
	SetVersion: func(t testing.TB, dir string, id session.ID, v int) {
		raw(t, dir, func(db *sql.DB) { exec(t, db, `UPDATE sessions SET version = ? WHERE id = ?`, v, string(id)) })
	},
	Corrupt: func(t testing.TB, dir string, id session.ID) string {
		raw(t, dir, func(db *sql.DB) {
			exec(t, db, `UPDATE events SET event = '{"type":"step/start","seq":2,"st' WHERE session_id = ? AND seq = 2`, string(id))
		})
		return "unparsable committed event at seq 2"
	},
}

func TestContract(t *testing.T) { storetest.Run(t, factory) }

func TestCrash(t *testing.T) {
	storetest.Crash(t, factory, storetest.CrashRuns(100), 4, 40*time.Millisecond)
}

func TestSchemaVersion(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(dbPath(dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	raw(t, dir, func(db *sql.DB) {
		var v int
		if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != SchemaVersion {
			t.Fatalf("user_version %d %v", v, err)
		}
		var mode string
		if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
			t.Fatalf("journal_mode %q %v", mode, err)
		}
		exec(t, db, "PRAGMA user_version = 4")
	})
	_, err = Open(dbPath(dir), Options{})
	want := `has schema version 4, incompatible with this build (5)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("open: %v, want %q", err, want)
	}
}

func TestMemory(t *testing.T) {
	ctx := context.Background()
	b, err := Open(Memory, Options{})
	if err != nil {
		t.Fatal(err)
	}
	scope := kernel.NewScope("mem")
	c, err := store.Attach(scope, nil, b, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	log := storetest.Build(0, storetest.OneTurn(1, "in memory"))
	if err := c.Create(ctx, session.Header{ID: "m", CreatedAt: 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.Append(ctx, "m", log); err != nil {
		t.Fatal(err)
	}
	_, evs, err := c.Load(ctx, "m")
	if err != nil || len(evs) != 6 {
		t.Fatalf("load: %v %d", err, len(evs))
	}
	if err := scope.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRejectsQuestionMarkPath(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "a?b.db"), Options{}); err == nil {
		t.Fatal("want an error")
	}
}
