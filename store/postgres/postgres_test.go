package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/dshq/dsh/internal/pgtest"
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

// schemaOf maps a storetest directory to a schema of the test database:
// the same directory is the same storage, also in a crash child.
func schemaOf(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return "st_" + hex.EncodeToString(sum[:10])
}

var (
	schemasMu sync.Mutex
	schemas   = map[string]bool{}
)

func openDir(dir string, o Options) (*Backend, error) {
	o.URL = os.Getenv(pgtest.EnvURL)
	o.Schema = schemaOf(dir)
	schemasMu.Lock()
	schemas[o.Schema] = true
	schemasMu.Unlock()
	return Open(context.Background(), o)
}

// dropSchemas drops every schema the factory made, when t ends.
func dropSchemas(t *testing.T) {
	url := pgtest.URL(t)
	t.Cleanup(func() {
		schemasMu.Lock()
		defer schemasMu.Unlock()
		for s := range schemas {
			pgtest.DropSchema(t, url, s)
			delete(schemas, s)
		}
	})
}

// raw runs one statement in dir's schema, as another program would.
func raw(t testing.TB, dir string, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = schemaOf(dir)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

var factory = storetest.Factory{
	Open: func(dir string) (store.Backend, error) { return openDir(dir, Options{}) },
	Tear: func(t testing.TB, dir string, id session.ID) {
		raw(t, dir, `INSERT INTO events(session_id, seq, type, time, event)
			SELECT $1, max(seq)+1, 'assistant/chunk', 0, convert_to('{"type":"assistant/chunk","seq":', 'UTF8') FROM events WHERE session_id = $1`, key(id))
	},
	SetVersion: func(t testing.TB, dir string, id session.ID, v int) {
		raw(t, dir, `UPDATE sessions SET version = $1 WHERE id = $2`, v, key(id))
	},
	Corrupt: func(t testing.TB, dir string, id session.ID) string {
		raw(t, dir, `UPDATE events SET event = convert_to('{"type":"step/start","seq":2,"st', 'UTF8') WHERE session_id = $1 AND seq = 2`, key(id))
		return "unparsable committed event at seq 2"
	},
}

func TestContract(t *testing.T) {
	dropSchemas(t)
	storetest.Run(t, factory)
}

// TestCrash kills the writing process with SIGKILL at random moments, 200
// times over four chains of children (each resuming the log the previous
// one left, which on this host needs no lease expiry: the dead holder's
// process is gone).
func TestCrash(t *testing.T) {
	dropSchemas(t)
	storetest.Crash(t, factory, storetest.CrashRuns(200), 4, 40*time.Millisecond)
}

func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}
