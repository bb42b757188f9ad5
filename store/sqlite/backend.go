package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/dshq/dsh/internal/private"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/internal/eventjson"
	"github.com/dshq/dsh/store/internal/flock"
)

// Name labels this backend in errors.
const Name = "session-persistence-sqlite"

// SchemaVersion is the table layout this build reads and writes, stamped in
// PRAGMA user_version. A fresh database is stamped with it; any other
// non-zero value is refused (there are no migrations). It is 5, not the
// reference's 4, because the sessions table carries the listing columns.
const SchemaVersion = 5

// Memory is the path of a private in-memory database.
const Memory = ":memory:"

const schema = `
CREATE TABLE IF NOT EXISTS sessions(
	id TEXT PRIMARY KEY,
	version INTEGER NOT NULL,
	created_at INTEGER NOT NULL,
	cwd TEXT,
	parent_session TEXT,
	seed_length INTEGER,
	title TEXT NOT NULL DEFAULT '',
	last_activity INTEGER NOT NULL DEFAULT 0,
	turns INTEGER NOT NULL DEFAULT 0,
	event_count INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX IF NOT EXISTS sessions_by_activity ON sessions(last_activity DESC, id);
CREATE INDEX IF NOT EXISTS sessions_by_cwd ON sessions(cwd, last_activity DESC, id);
CREATE TABLE IF NOT EXISTS events(
	session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	seq INTEGER NOT NULL,
	type TEXT NOT NULL,
	time INTEGER NOT NULL,
	event TEXT NOT NULL,
	PRIMARY KEY(session_id, seq)
) STRICT, WITHOUT ROWID;
`

// Options configure a [Backend].
type Options struct {
	// NoSync sets synchronous=OFF: commits survive a crash of the process
	// but not of the machine. For tests, benchmarks and scratch stores.
	NoSync bool
}

// Backend stores sessions in one SQLite database (WAL mode): a sessions
// table with the header and listing columns, and one events row per event.
// It implements [store.Backend]; use it through a [store.Coordinator].
type Backend struct {
	path     string
	db       *sql.DB
	lockRoot string // "" for an in-memory database

	writeMu sync.Mutex // one write transaction at a time in this process

	mu      sync.Mutex
	handles map[session.ID]*flock.Lock
	readers []*rawReader // idle, for long loads (file databases only)
	closed  bool
}

var _ store.Backend = (*Backend)(nil)

// Open opens (creating when missing, with parent directories mode 0700) the
// database at path, or a private in-memory database for [Memory].
func Open(path string, opts Options) (*Backend, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty path")
	}
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlite: database path %q must not contain '?'", path)
	}
	b := &Backend{path: path, handles: map[session.ID]*flock.Lock{}}
	if path != Memory {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		if err := private.MkdirAll(filepath.Dir(abs)); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		b.path = abs
		b.lockRoot = abs + "-locks"
		if err := createPrivate(abs); err != nil {
			return nil, err
		}
	}
	syncMode := "FULL"
	if opts.NoSync {
		syncMode = "OFF"
	}
	dsn := b.path + "?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=synchronous(" + syncMode + ")"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: opening %s: %w", b.path, err)
	}
	// An in-memory database exists per connection: it gets exactly one.
	// A file gets a few, so long loads can read in parallel; writes are
	// serialized in this process by writeMu (SQLite allows one writer).
	conns := maxParts
	if b.path == Memory {
		conns = 1
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxLifetime(0)
	b.db = db
	if err := b.initSchema(); err != nil {
		db.Close()
		return nil, b.wrap(err)
	}
	return b, nil
}

// createPrivate creates the database file 0600 before SQLite opens it, and
// tightens an existing one and its WAL and SHM. SQLite would create the file
// 0644 (less the umask); it creates the WAL and SHM with the mode of the
// database file, so a private database keeps them private too.
func createPrivate(path string) error {
	f, err := private.OpenFile(path, os.O_RDONLY|os.O_CREATE)
	if err != nil {
		return fmt.Errorf("sqlite: creating the session database %s: %w", path, err)
	}
	f.Close()
	private.TightenAll(nil, path+"-wal", path+"-shm")
	return nil
}

// withTx runs fn in a BEGIN IMMEDIATE transaction (taking the write lock up
// front, so two processes never deadlock upgrading), committing on success
// and rolling back on any error.
func (b *Backend) withTx(ctx context.Context, fn func(c *sql.Conn) error) (err error) {
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	c, err := b.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		// A context cancelled while BEGIN ran is reported as its failure
		// even when the transaction did start: end it, or the pooled
		// connection's next user finds a transaction already open.
		_, _ = c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return err
	}
	defer func() {
		if err != nil {
			_, _ = c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	if err := fn(c); err != nil {
		return err
	}
	// Once every statement succeeded the transaction is committed whatever
	// happens to ctx: the driver reports a context cancelled during a
	// statement as that statement's failure even when it completed, and a
	// COMMIT that reached the database but reported failure would leave the
	// coordinator believing the batch unwritten (its retry then collides
	// with the stored rows, and the session can never be written again).
	_, err = c.ExecContext(context.WithoutCancel(ctx), "COMMIT")
	return err
}

func (b *Backend) initSchema() error {
	ctx := context.Background()
	return b.withTx(ctx, func(c *sql.Conn) error {
		var v int
		if err := c.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return fmt.Errorf("sqlite: reading the schema version of %s: %w", b.path, err)
		}
		switch v {
		case SchemaVersion:
			// A database made before snapshots gains their table: it
			// holds derived data only, so older builds that ignore it
			// lose nothing.
			if _, err := c.ExecContext(ctx, snapshotSchema); err != nil {
				return fmt.Errorf("sqlite: creating the snapshots table in %s: %w", b.path, err)
			}
			return nil
		case 0:
			if _, err := c.ExecContext(ctx, schema+snapshotSchema); err != nil {
				return fmt.Errorf("sqlite: creating the schema in %s: %w", b.path, err)
			}
			_, err := c.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(SchemaVersion))
			return err
		default:
			return fmt.Errorf("sqlite: session database at %q has schema version %d, incompatible with this build (%d)", b.path, v, SchemaVersion)
		}
	})
}

// Path is the database path (absolute, or [Memory]).
func (b *Backend) Path() string { return b.path }

// Name implements [store.Backend].
func (b *Backend) Name() string { return Name }

// Lock implements [store.Backend]: flock(2) on <db>-locks/<id>.lock (an
// in-memory database is private to this backend and needs no file).
func (b *Backend) Lock(ctx context.Context, id session.ID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	enc, err := store.EncodeSegment(string(id))
	if err != nil {
		return fmt.Errorf("sqlite: session id %q: %w", id, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return fmt.Errorf("sqlite: %w", store.ErrClosed)
	}
	if _, ok := b.handles[id]; ok {
		return nil
	}
	var l *flock.Lock
	if b.lockRoot != "" {
		l, err = flock.Acquire(filepath.Join(b.lockRoot, enc+".lock"))
		if err != nil {
			var held *flock.HeldError
			if errors.As(err, &held) {
				return &store.InUseError{ID: id, PID: held.PID}
			}
			return fmt.Errorf("sqlite: locking session %q: %w", id, err)
		}
	}
	b.handles[id] = l
	return nil
}

// Unlock implements [store.Backend].
func (b *Backend) Unlock(id session.ID) error {
	b.mu.Lock()
	l, ok := b.handles[id]
	delete(b.handles, id)
	b.mu.Unlock()
	if !ok {
		return nil
	}
	return l.Release()
}

func (b *Backend) locked(id session.ID) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return fmt.Errorf("sqlite: %w", store.ErrClosed)
	}
	if _, ok := b.handles[id]; !ok {
		return fmt.Errorf("sqlite: session %q is not locked by this backend", id)
	}
	return nil
}

// Close implements [store.Backend].
func (b *Backend) Close() error {
	b.mu.Lock()
	hs := b.handles
	b.handles = map[session.ID]*flock.Lock{}
	wasClosed := b.closed
	b.closed = true
	readers := b.readers
	b.readers = nil
	b.mu.Unlock()
	for _, r := range readers {
		r.close()
	}
	var errs []error
	for _, l := range hs {
		if err := l.Release(); err != nil {
			errs = append(errs, err)
		}
	}
	if !wasClosed {
		if err := b.db.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func readHeader(ctx context.Context, q querier, id session.ID) (session.Header, bool, error) {
	var (
		h      = session.Header{ID: id}
		cwd    sql.NullString
		parent sql.NullString
		seed   sql.NullInt64
	)
	err := q.QueryRowContext(ctx, "SELECT version, created_at, cwd, parent_session, seed_length FROM sessions WHERE id = ?", string(id)).
		Scan(&h.Version, &h.CreatedAt, &cwd, &parent, &seed)
	if errors.Is(err, sql.ErrNoRows) {
		return h, false, nil
	}
	if err != nil {
		return h, false, fmt.Errorf("sqlite: %w", err)
	}
	h.Cwd, h.ParentSession, h.SeedLength = cwd.String, session.ID(parent.String), int(seed.Int64)
	return h, true, nil
}

// query runs a query on a driver connection directly and hands each row's
// values to fn, skipping database/sql's per-row locking and reflective
// Scan.
func (b *Backend) query(ctx context.Context, query string, args []any, cols int, fn func(v []driver.Value) (more bool)) error {
	c, err := b.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	defer c.Close()
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	err = c.Raw(func(dc any) error {
		q, ok := dc.(driver.QueryerContext)
		if !ok {
			return errors.New("driver connection cannot query")
		}
		rows, err := q.QueryContext(ctx, query, named)
		if err != nil {
			return err
		}
		defer rows.Close()
		dest := make([]driver.Value, cols)
		for {
			if err := rows.Next(dest); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			if !fn(dest) {
				return nil
			}
		}
	})
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return nil
}

// textOf views a TEXT (or copies a BLOB) column value as bytes; ok is false
// for anything else (NULL, a number).
func textOf(v driver.Value) (text []byte, ok bool) {
	switch x := v.(type) {
	case string:
		// The driver hands TEXT columns over as fresh strings that nothing
		// else holds: view its bytes instead of copying them (an event's
		// Data aliases them, and logged data is read-only by contract).
		return unsafe.Slice(unsafe.StringData(x), len(x)), true
	case []byte:
		return append([]byte(nil), x...), true
	}
	return nil, false
}

// A long session is read in up to maxParts seq ranges of at least
// minPartRows rows, concurrently, each on its own connection and parsed by
// the goroutine that reads it: reading a row costs about half a microsecond
// and parsing it as much again, so a second core halves the load of a long
// session.
const maxParts = 4

// minPartRows is a variable so that tests can split short sessions.
var minPartRows int64 = 20_000

// readRange calls fn with every events row of id with lo <= seq < hi, in
// seq order; text is nil for a value that is not text, and with keep the
// caller may keep it (otherwise it is valid only until fn returns, see
// [rawReader.readRange]). A file database is read through a pooled [rawReader]; the
// private in-memory database, which only the driver's one connection can
// see, through the driver.
func (b *Backend) readRange(ctx context.Context, id session.ID, lo, hi int64, keep bool, fn func(seq int64, text []byte)) error {
	if b.path == Memory {
		return b.query(ctx, rangeQuery, []any{string(id), lo, hi}, 2, func(v []driver.Value) bool {
			seq, _ := v[0].(int64)
			text, _ := textOf(v[1])
			fn(seq, text)
			return true
		})
	}
	r, err := b.reader()
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	// A long range is a scan (an export, a transcript): read it through
	// the page cache, not the memory map, whose every touched page would
	// stay resident in this process — 240 MB of RSS to export a
	// 1M-event session, against 35 MB.
	// Its page cache is kept small too: a scan reads each page once, so
	// SQLite's default 2 MB cache only holds what will not be read again.
	scan := hi-lo > scanRows
	if scan {
		err = r.exec("PRAGMA mmap_size = 0; PRAGMA cache_size = -" + strconv.Itoa(scanCacheKiB))
	}
	if err == nil {
		err = r.readRange(ctx, string(id), lo, hi, keep, fn)
	}
	if err == nil && scan {
		err = r.exec(mmapPragma + "; PRAGMA cache_size = -2000")
	}
	if err != nil {
		r.close()
		return fmt.Errorf("sqlite: %w", err)
	}
	b.release(r)
	return nil
}

// scanRows is the length above which a range read does not use the memory
// map: longer than any read-back of released payloads (a few segments of
// 256 events), shorter than a session worth streaming. A variable for tests.
var scanRows int64 = 16 << 10

// scanCacheKiB is a scan's page cache (SQLite's default is 2,000 KiB).
const scanCacheKiB = 256

// reader takes an idle raw reader from the pool, or opens one.
func (b *Backend) reader() (*rawReader, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, store.ErrClosed
	}
	if n := len(b.readers); n > 0 {
		r := b.readers[n-1]
		b.readers = b.readers[:n-1]
		b.mu.Unlock()
		return r, nil
	}
	b.mu.Unlock()
	return openRawReader(b.path)
}

// release returns r to the pool (keeping at most maxParts idle), or closes
// it.
func (b *Backend) release(r *rawReader) {
	b.mu.Lock()
	if !b.closed && len(b.readers) < maxParts {
		b.readers = append(b.readers, r)
		r = nil
	}
	b.mu.Unlock()
	if r != nil {
		r.close()
	}
}

// readRows reads every events row of id in seq order into events (by
// position); bad marks the rows whose text does not parse, which hold only
// their seq. n is the stored event count: it sizes the result and (with
// split) divides the work, and the rows found decide the length.
func (b *Backend) readRows(ctx context.Context, id session.ID, n int64, split bool) (events []session.Event, bad []bool, err error) {
	parts := int64(1)
	if split && b.path != Memory {
		parts = max(1, min(int64(runtime.GOMAXPROCS(0)), maxParts, n/minPartRows))
	}
	// Each part fills its own slots of the shared slices; rows past n
	// (possible only in the last, open-ended part) go to extra.
	events, bad = make([]session.Event, n), make([]bool, n)
	filled := make([]int64, parts)
	errs := make([]error, parts)
	var extra []session.Event
	var extraBad []bool
	read := func(i int64) {
		lo, hi := n*i/parts, n*(i+1)/parts
		end := hi
		if i == parts-1 {
			end = math.MaxInt64
		}
		pos := lo
		errs[i] = b.readRange(ctx, id, lo, end, true, func(seq int64, text []byte) {
			e, ok := eventjson.Parse(text)
			if !ok {
				e = session.Event{Seq: seq}
			}
			if pos < hi {
				events[pos], bad[pos] = e, !ok
				pos++
			} else {
				extra, extraBad = append(extra, e), append(extraBad, !ok)
			}
		})
		filled[i] = pos - lo
	}
	var wg sync.WaitGroup
	for i := int64(1); i < parts; i++ {
		wg.Go(func() { read(i) })
	}
	read(0)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	// A part that found fewer rows than its range (a hole in seq) leaves
	// empty slots: close them up, so position order is row order.
	w := filled[0]
	for i := int64(1); i < parts; i++ {
		if lo := n * i / parts; w != lo {
			copy(events[w:], events[lo:lo+filled[i]])
			copy(bad[w:], bad[lo:lo+filled[i]])
		}
		w += filled[i]
	}
	return append(events[:w], extra...), append(bad[:w], extraBad...), nil
}

func (b *Backend) load(ctx context.Context, id session.ID) (*store.Stored, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h, ok, err := readHeader(ctx, b.db, id)
	if err != nil || !ok {
		return nil, err
	}
	st := &store.Stored{Header: h}
	if h.Version != session.FormatVersion {
		return st, nil
	}
	var n int64
	if err := b.db.QueryRowContext(ctx, "SELECT event_count FROM sessions WHERE id = ?", string(id)).Scan(&n); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	all, bad, err := b.readRows(ctx, id, n, true)
	if err != nil {
		return nil, err
	}
	keep, err := store.CommittedRows(all, bad)
	if err != nil || keep < len(all) {
		// Parts read on separate connections see separate snapshots: a
		// write committed between them (another process repairing or
		// appending) can look like a hole or a torn row. Before reporting
		// one, read again in one statement, one snapshot.
		if all, bad, err = b.readRows(ctx, id, n, false); err != nil {
			return nil, err
		}
		keep, err = store.CommittedRows(all, bad)
	}
	if err != nil {
		var ce *store.CorruptError
		if errors.As(err, &ce) && b.path != Memory {
			ce.Path = b.path
		}
		return nil, fmt.Errorf("sqlite: session %q: %w", id, err)
	}
	st.Events = all[:keep:keep]
	if keep < len(all) {
		st.Torn = int64(keep)
	}
	return st, nil
}

// LoadStored implements [store.Backend].
func (b *Backend) LoadStored(ctx context.Context, id session.ID) (*store.Stored, error) {
	st, err := b.load(ctx, id)
	return st, b.wrap(err)
}

// LoadLive implements [store.Backend]; a database has no cwd scopes.
func (b *Backend) LoadLive(ctx context.Context, id session.ID, _ string) (*store.Stored, error) {
	st, err := b.load(ctx, id)
	return st, b.wrap(err)
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func insertEvents(ctx context.Context, c *sql.Conn, id session.ID, events []session.Event) error {
	if len(events) == 0 {
		return nil
	}
	stmt, err := c.PrepareContext(ctx, "INSERT INTO events(session_id, seq, type, time, event) VALUES(?, ?, ?, ?, ?)")
	if err != nil {
		return err
	}
	defer stmt.Close()
	var line []byte
	for _, e := range events {
		if line, err = eventjson.AppendEvent(line[:0], e); err != nil {
			return err
		}
		if _, err := stmt.ExecContext(ctx, string(id), e.Seq, e.Type, e.Time, string(line[:len(line)-1])); err != nil {
			return fmt.Errorf("inserting %q (seq %d): %w", e.Type, e.Seq, err)
		}
	}
	return nil
}

func updateSummary(ctx context.Context, c *sql.Conn, info store.Info) error {
	_, err := c.ExecContext(ctx, "UPDATE sessions SET title = ?, last_activity = ?, turns = ?, event_count = ? WHERE id = ?",
		info.Title, info.LastActivity, info.Turns, info.Events, string(info.Header.ID))
	return err
}

// AppendBatch implements [store.Backend]: one transaction; the first batch
// inserts the sessions row with it.
func (b *Backend) AppendBatch(ctx context.Context, batch store.Batch) error {
	id := batch.Header.ID
	if err := b.locked(id); err != nil {
		return err
	}
	err := b.withTx(ctx, func(c *sql.Conn) error {
		if !batch.Materialized {
			_, exists, err := readHeader(ctx, c, id)
			if err != nil {
				return err
			}
			if exists {
				return fmt.Errorf("sqlite: refusing to materialize %q: a log already exists in the database (load/resume it instead): %w", id, store.ErrExists)
			}
			h := batch.Header
			var seed any
			if h.SeedLength != 0 {
				seed = h.SeedLength
			}
			if _, err := c.ExecContext(ctx, "INSERT INTO sessions(id, version, created_at, cwd, parent_session, seed_length) VALUES(?, ?, ?, ?, ?, ?)",
				string(id), h.Version, h.CreatedAt, nullString(h.Cwd), nullString(string(h.ParentSession)), seed); err != nil {
				return err
			}
		} else if len(batch.Events) > 0 {
			var last int64
			if err := c.QueryRowContext(ctx, "SELECT coalesce(max(seq), -1) FROM events WHERE session_id = ?", string(id)).Scan(&last); err != nil {
				return err
			}
			if first := batch.Events[0].Seq; first != last+1 {
				return fmt.Errorf("sqlite: the stored log of %q ends at seq %d, cannot append seq %d: %w", id, last, first, store.ErrSeq)
			}
		}
		if err := insertEvents(ctx, c, id, batch.Events); err != nil {
			return err
		}
		return updateSummary(ctx, c, batch.Info)
	})
	if err != nil && !strings.HasPrefix(err.Error(), "sqlite:") {
		err = fmt.Errorf("sqlite: appending to %q: %w", id, err)
	}
	return b.wrap(err)
}

// CommitRepair implements [store.Backend]: one transaction deleting the torn
// rows and inserting the closers.
func (b *Backend) CommitRepair(ctx context.Context, r store.Repair) error {
	id := r.Header.ID
	if err := b.locked(id); err != nil {
		return err
	}
	err := b.withTx(ctx, func(c *sql.Conn) error {
		if r.Torn != nil {
			from, ok := r.Torn.(int64)
			if !ok {
				return fmt.Errorf("bad torn marker %T", r.Torn)
			}
			if _, err := c.ExecContext(ctx, "DELETE FROM events WHERE session_id = ? AND seq >= ?", string(id), from); err != nil {
				return err
			}
		}
		if err := insertEvents(ctx, c, id, r.Closers); err != nil {
			return err
		}
		return updateSummary(ctx, c, r.Info)
	})
	if err != nil {
		return b.wrap(fmt.Errorf("sqlite: repairing %q: %w", id, err))
	}
	return nil
}

// List implements [store.Backend]: the sessions table, newest activity
// first.
func (b *Backend) List(ctx context.Context, q store.Query) ([]store.Info, error) {
	infos, err := b.list(ctx, q)
	return infos, b.wrap(err)
}

func (b *Backend) list(ctx context.Context, q store.Query) ([]store.Info, error) {
	query := "SELECT id, version, created_at, cwd, parent_session, seed_length, title, last_activity, turns, event_count FROM sessions"
	var args []any
	if q.Cwd != "" {
		query += " WHERE cwd = ?"
		args = append(args, q.Cwd)
	}
	query += " ORDER BY last_activity DESC, id"
	if q.Limit > 0 {
		query += " LIMIT " + strconv.Itoa(q.Limit)
	}
	rows, err := b.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	defer rows.Close()
	var out []store.Info
	for rows.Next() {
		var (
			in           store.Info
			id           string
			cwd, parent  sql.NullString
			seed         sql.NullInt64
			title        string
			last, events int64
			turns        int
		)
		if err := rows.Scan(&id, &in.Header.Version, &in.Header.CreatedAt, &cwd, &parent, &seed, &title, &last, &turns, &events); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		in.Header.ID, in.Header.Cwd, in.Header.ParentSession, in.Header.SeedLength = session.ID(id), cwd.String, session.ID(parent.String), int(seed.Int64)
		in.Title, in.LastActivity, in.Turns, in.Events = title, last, turns, events
		out = append(out, in)
	}
	return out, rows.Err()
}

// Tail implements [store.Backend]: the last n rows by primary key.
func (b *Backend) Tail(ctx context.Context, id session.ID, n int) (session.Header, []session.Event, error) {
	h, events, err := b.tail(ctx, id, n)
	return h, events, b.wrap(err)
}

func (b *Backend) tail(ctx context.Context, id session.ID, n int) (session.Header, []session.Event, error) {
	h, ok, err := readHeader(ctx, b.db, id)
	if err != nil {
		return h, nil, err
	}
	if !ok {
		return h, nil, fmt.Errorf("sqlite: session %q not found: %w", id, store.ErrNotFound)
	}
	if h.Version != session.FormatVersion {
		return h, nil, fmt.Errorf("sqlite: unsupported session format version %d for %q (only v%d is supported): %w", h.Version, id, session.FormatVersion, store.ErrVersion)
	}
	if n <= 0 {
		return h, nil, nil
	}
	// A few extra rows, so a torn row or two at the end do not shorten the
	// answer.
	var out []session.Event // newest first
	next := int64(-1)
	err = b.query(ctx, "SELECT seq, event FROM events WHERE session_id = ? ORDER BY seq DESC LIMIT ?", []any{string(id), int64(n + 16)}, 2, func(v []driver.Value) bool {
		text, ok := textOf(v[1])
		var e session.Event
		if ok {
			e, ok = eventjson.Parse(text)
		}
		if ok && (next == -1 || e.Seq == next) {
			out = append(out, e)
			next = e.Seq - 1
		} else if len(out) > 0 {
			return false // a hole before the run we have
		}
		return len(out) < n
	})
	if err != nil {
		return h, nil, err
	}
	slices.Reverse(out)
	return h, out, nil
}
