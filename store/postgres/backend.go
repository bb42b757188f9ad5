package postgres

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/internal/eventjson"
)

// Name labels this backend in errors.
const Name = "session-persistence-postgres"

// DefaultSchema holds dsh's tables unless configured otherwise.
const DefaultSchema = "dsh"

// DefaultLeaseTTL is how long a lease outlives its holder's last renewal.
const DefaultLeaseTTL = 30 * time.Second

// Options configure a [Backend].
type Options struct {
	// URL is the connection string.
	URL string
	// Schema holds the tables (default [DefaultSchema]).
	Schema string
	// LeaseTTL is the lease duration (default [DefaultLeaseTTL]); leases
	// are renewed every third of it, and by every write.
	LeaseTTL time.Duration
	// Host is the host identity leases record (default: the hostname).
	Host string
	// MaxConns bounds the pool (default 8).
	MaxConns int
	// NoSync sets synchronous_commit off for dsh's connections: a commit
	// returns before its WAL record is flushed, so a crash of the database
	// server (not of dsh) may lose the last commits, never tear one. For
	// tests, benchmarks and scratch stores.
	NoSync bool
	// Now is the clock leases are judged by. Nil uses the database's
	// clock, the one clock every host shares (a host whose clock runs
	// ahead would otherwise see live leases as expired); tests inject one.
	Now func() time.Time
	// RetryFor is how long an operation that failed because the database
	// was unreachable (restarting, failing over, a dropped connection) is
	// retried before its error is returned (default 60s; negative: no
	// retries).
	RetryFor time.Duration
	// Logf receives what has no caller to return to: retries while the
	// database is unreachable, leases lost to another holder.
	Logf func(format string, args ...any)
	// OnLost is called (from the renewal goroutine) when a lease this
	// backend held turns out to belong to someone else: the holder stops
	// writing that session; its next append fails with [store.ErrFenced].
	OnLost func(id session.ID, err error)
	// migrations replaces the schema history (tests).
	migrations []migration
}

// Backend stores sessions in PostgreSQL: a sessions table (header and
// listing columns), an events table keyed by (session_id, seq), and a
// leases table holding each session's writer lease with its fencing token.
// It implements [store.Backend], [store.Leaser] and [store.Watcher]; use it
// through a [store.Coordinator].
type Backend struct {
	pool    *pgxpool.Pool
	connCfg *pgx.ConnConfig // for the listener's own connection
	opts    Options
	schema  string
	channel string
	secret  secretScrubber
	self    holderIdent

	mu      sync.Mutex
	leases  map[session.ID]*held
	closed  bool
	stop    context.CancelFunc
	done    chan struct{} // the renewal goroutine has returned
	watch   *listener
	closeMu sync.Once
}

// held is a lease this backend holds (or held until it was fenced).
type held struct {
	token int64
	lost  *store.FencedError
}

// holderIdent is what a lease records about its holder.
type holderIdent struct {
	id       string // unique per backend instance
	host     string
	pid      int
	pidStart int64
	machine  string
}

var (
	_ store.Backend = (*Backend)(nil)
	_ store.Leaser  = (*Backend)(nil)
	_ store.Watcher = (*Backend)(nil)
)

// Open connects, brings the schema up to date (see [Migrate]) and starts
// the lease renewal.
func Open(ctx context.Context, o Options) (*Backend, error) {
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if err := checkSchema(o.Schema); err != nil {
		return nil, err
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 8
	}
	if o.RetryFor == 0 {
		o.RetryFor = 60 * time.Second
	}
	if o.migrations == nil {
		o.migrations = migrations
	}
	cfg, err := pgxpool.ParseConfig(o.URL)
	if err != nil {
		// The driver's message quotes the input, redacted best effort:
		// never risk a password in an error.
		return nil, errors.New("postgres: the connection string does not parse (set it as a postgres:// URL or key=value pairs)")
	}
	cfg.MaxConns = int32(o.MaxConns)
	cfg.ConnConfig.RuntimeParams["search_path"] = o.Schema
	if o.NoSync {
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "dsh"
	}
	host := o.Host
	if host == "" {
		host, _ = os.Hostname()
	}
	b := &Backend{
		connCfg: cfg.ConnConfig.Copy(),
		opts:    o,
		schema:  o.Schema,
		channel: o.Schema + "_events",
		secret:  newScrubber(&cfg.ConnConfig.Config),
		self: holderIdent{id: randomID(), host: host, pid: os.Getpid(),
			pidStart: processStart(os.Getpid()), machine: machineKey()},
		leases: map[session.ID]*held{},
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, b.wrap("connecting", err)
	}
	b.pool = pool
	// The migration runs on the pool's first connection (its search_path
	// may name the schema before it exists). A current schema costs one
	// query.
	if _, err := b.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	rctx, stop := context.WithCancel(context.Background())
	b.stop, b.done = stop, make(chan struct{})
	go b.renewLoop(rctx)
	return b, nil
}

// Migrate brings the schema the options name up to this build's version
// and reports what it did ("dsh store migrate"); Open does the same.
func Migrate(ctx context.Context, o Options) (MigrationResult, error) {
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if err := checkSchema(o.Schema); err != nil {
		return MigrationResult{}, err
	}
	if o.migrations == nil {
		o.migrations = migrations
	}
	cfg, err := pgx.ParseConfig(o.URL)
	if err != nil {
		return MigrationResult{}, errors.New("postgres: the connection string does not parse (set it as a postgres:// URL or key=value pairs)")
	}
	b := &Backend{connCfg: cfg, opts: o, schema: o.Schema, secret: newScrubber(&cfg.Config)}
	return b.migrate(ctx)
}

func (b *Backend) migrate(ctx context.Context) (MigrationResult, error) {
	var res MigrationResult
	err := b.retry(ctx, "migrating the schema", func(ctx context.Context) error {
		if b.pool == nil {
			conn, err := pgx.ConnectConfig(ctx, b.connCfg)
			if err != nil {
				return err
			}
			defer conn.Close(context.WithoutCancel(ctx))
			res, err = migrate(ctx, conn, b.schema, b.opts.migrations)
			return err
		}
		conn, err := b.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		res, err = migrate(ctx, conn.Conn(), b.schema, b.opts.migrations)
		return err
	})
	if err != nil {
		return res, b.wrap("schema "+b.schema, err)
	}
	return res, nil
}

func randomID() string {
	var x [8]byte
	_, _ = rand.Read(x[:])
	return hex.EncodeToString(x[:])
}

// Name implements [store.Backend].
func (b *Backend) Name() string { return Name }

// Ping checks that the database answers and reports the schema version
// this backend found.
func (b *Backend) Ping(ctx context.Context) (version int, err error) {
	err = b.pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&version)
	return version, b.wrap("reaching the database", err)
}

// Schema is the schema holding the tables.
func (b *Backend) Schema() string { return b.schema }

// Host is the host identity this backend's leases record.
func (b *Backend) Host() string { return b.self.host }

func (b *Backend) logf(format string, args ...any) {
	if b.opts.Logf != nil {
		b.opts.Logf(format, args...)
	}
}

// wrap names the backend and what failed, and keeps the password out.
func (b *Backend) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	var fenced *store.FencedError
	if errors.As(err, &fenced) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return b.secret.scrub(fmt.Errorf("postgres: %s: %w", what, err))
}

// now is the lease clock's current time as a query argument: nil lets the
// database use its own.
func (b *Backend) now() any {
	if b.opts.Now == nil {
		return nil
	}
	return b.opts.Now()
}

// ---- ids ----

// encodeText makes a string storable as PostgreSQL text, which cannot hold
// NUL: NUL and '%' become %00 and %25, injectively; anything else is
// stored as it is, so ordinary ids read naturally in SQL.
func encodeText(s string) string {
	if !strings.ContainsAny(s, "\x00%") {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 0:
			sb.WriteString("%00")
		case '%':
			sb.WriteString("%25")
		default:
			sb.WriteByte(s[i])
		}
	}
	return sb.String()
}

func decodeText(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			switch s[i+1 : i+3] {
			case "00":
				sb.WriteByte(0)
				i += 2
				continue
			case "25":
				sb.WriteByte('%')
				i += 2
				continue
			}
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

func key(id session.ID) string { return encodeText(string(id)) }

func nullText(s string) any {
	if s == "" {
		return nil
	}
	return encodeText(s)
}

// ---- reading ----

const headerQuery = "SELECT version, created_at, cwd, parent_session, seed_length, event_count FROM sessions WHERE id = $1"

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func readHeader(ctx context.Context, q querier, id session.ID) (h session.Header, count int64, ok bool, err error) {
	h.ID = id
	var cwd, parent *string
	var seed *int32
	err = q.QueryRow(ctx, headerQuery, key(id)).Scan(&h.Version, &h.CreatedAt, &cwd, &parent, &seed, &count)
	if errors.Is(err, pgx.ErrNoRows) {
		return h, 0, false, nil
	}
	if err != nil {
		return h, 0, false, err
	}
	if cwd != nil {
		h.Cwd = decodeText(*cwd)
	}
	if parent != nil {
		h.ParentSession = session.ID(decodeText(*parent))
	}
	if seed != nil {
		h.SeedLength = int(*seed)
	}
	return h, count, true, nil
}

// arena hands out copies of row bytes from large blocks: an event's Data
// aliases its row's bytes, and one allocation per row would dominate a
// long load.
type arena struct {
	block []byte
	next  int // the size of the next block: small reads stay small
}

func (a *arena) copy(b []byte) []byte {
	const maxBlock = 1 << 20
	if len(b) > maxBlock/4 {
		return append([]byte(nil), b...)
	}
	if cap(a.block)-len(a.block) < len(b) {
		a.next = min(max(2*a.next, 16<<10, 2*len(b)), maxBlock)
		a.block = make([]byte, 0, a.next)
	}
	n := len(a.block)
	a.block = append(a.block, b...)
	return a.block[n:len(a.block):len(a.block)]
}

// scanEvents streams rows of (seq, event) and calls fn with each parsed
// event; ok is false for a row whose bytes are not an event (it then holds
// only its seq).
func scanEvents(rows pgx.Rows, fn func(e session.Event, ok bool) bool) error {
	defer rows.Close()
	var a arena
	for rows.Next() {
		raw := rows.RawValues()
		if len(raw) != 2 || len(raw[0]) != 8 {
			return fmt.Errorf("unexpected row shape")
		}
		seq := int64(binary.BigEndian.Uint64(raw[0]))
		e, ok := eventjson.Parse(a.copy(raw[1]))
		if !ok {
			e = session.Event{Seq: seq}
		}
		if !fn(e, ok) {
			break
		}
	}
	return rows.Err()
}

func (b *Backend) load(ctx context.Context, id session.ID) (*store.Stored, error) {
	var st *store.Stored
	err := b.retry(ctx, "loading "+strconv.Quote(string(id)), func(ctx context.Context) error {
		var err error
		st, err = b.loadOnce(ctx, id)
		return err
	})
	if err != nil {
		return nil, b.wrap("loading "+strconv.Quote(string(id)), err)
	}
	return st, nil
}

func (b *Backend) loadOnce(ctx context.Context, id session.ID) (*store.Stored, error) {
	// One snapshot for the header and the rows, in one round trip with
	// the planner told to read the primary key in order: on a table whose
	// statistics lag (a bulk copy, a session that grew fast) it would
	// otherwise pick a bitmap scan and an external sort, 3-4× slower.
	tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL enable_sort = off; SET LOCAL enable_bitmapscan = off"})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	h, count, ok, err := readHeader(ctx, tx, id)
	if err != nil || !ok {
		return nil, err
	}
	st := &store.Stored{Header: h}
	if h.Version != session.FormatVersion {
		return st, nil
	}
	rows, err := tx.Query(ctx, "SELECT seq, event FROM events WHERE session_id = $1 ORDER BY seq", key(id))
	if err != nil {
		return nil, err
	}
	events := make([]session.Event, 0, count)
	bad := make([]bool, 0, count) // rows that do not parse
	err = scanEvents(rows, func(e session.Event, ok bool) bool {
		bad = append(bad, !ok)
		events = append(events, e)
		return true
	})
	if err != nil {
		return nil, err
	}
	keep, err := store.CommittedRows(events, bad)
	if err != nil {
		return nil, fmt.Errorf("session %q: %w", id, err)
	}
	st.Events = events[:keep:keep]
	if keep < len(events) {
		st.Torn = int64(keep)
	}
	return st, nil
}

// LoadStored implements [store.Backend].
func (b *Backend) LoadStored(ctx context.Context, id session.ID) (*store.Stored, error) {
	return b.load(ctx, id)
}

// LoadLive implements [store.Backend]; a database has no cwd scopes.
func (b *Backend) LoadLive(ctx context.Context, id session.ID, _ string) (*store.Stored, error) {
	return b.load(ctx, id)
}

// ReadFrom returns the header and the intact stored events of id from seq
// from on (for followers). It never repairs.
func (b *Backend) ReadFrom(ctx context.Context, id session.ID, from int64) (session.Header, []session.Event, error) {
	var (
		h   session.Header
		out []session.Event
	)
	err := b.retry(ctx, "reading "+strconv.Quote(string(id)), func(ctx context.Context) error {
		var (
			ok  bool
			err error
		)
		out = out[:0]
		h, _, ok, err = readHeader(ctx, b.pool, id)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("session %q not found: %w", id, store.ErrNotFound)
		}
		if h.Version != session.FormatVersion {
			return fmt.Errorf("unsupported session format version %d for %q (only v%d is supported): %w", h.Version, id, session.FormatVersion, store.ErrVersion)
		}
		rows, err := b.pool.Query(ctx, "SELECT seq, event FROM events WHERE session_id = $1 AND seq >= $2 ORDER BY seq", key(id), from)
		if err != nil {
			return err
		}
		next := from
		return scanEvents(rows, func(e session.Event, ok bool) bool {
			if !ok || e.Seq != next {
				return false // a torn row or a hole: stop before it
			}
			out = append(out, e)
			next++
			return true
		})
	})
	if err != nil {
		return h, nil, b.wrap("reading "+strconv.Quote(string(id)), err)
	}
	return h, out, nil
}

// List implements [store.Backend]: the sessions table, newest activity
// first.
func (b *Backend) List(ctx context.Context, q store.Query) ([]store.Info, error) {
	query := "SELECT id, version, created_at, cwd, parent_session, seed_length, title, last_activity, turns, event_count FROM sessions"
	var args []any
	if q.Cwd != "" {
		query += " WHERE cwd = $1"
		args = append(args, encodeText(q.Cwd))
	}
	query += " ORDER BY last_activity DESC, id"
	if q.Limit > 0 {
		query += " LIMIT " + strconv.Itoa(q.Limit)
	}
	var out []store.Info
	err := b.retry(ctx, "listing sessions", func(ctx context.Context) error {
		out = out[:0]
		rows, err := b.pool.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				in          store.Info
				id          string
				cwd, parent *string
				seed        *int32
			)
			if err := rows.Scan(&id, &in.Header.Version, &in.Header.CreatedAt, &cwd, &parent, &seed, &in.Title, &in.LastActivity, &in.Turns, &in.Events); err != nil {
				return err
			}
			in.Header.ID = session.ID(decodeText(id))
			if cwd != nil {
				in.Header.Cwd = decodeText(*cwd)
			}
			if parent != nil {
				in.Header.ParentSession = session.ID(decodeText(*parent))
			}
			if seed != nil {
				in.Header.SeedLength = int(*seed)
			}
			out = append(out, in)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, b.wrap("listing sessions", err)
	}
	return out, nil
}

// Tail implements [store.Backend]: the last n rows by primary key.
func (b *Backend) Tail(ctx context.Context, id session.ID, n int) (session.Header, []session.Event, error) {
	var (
		h   session.Header
		out []session.Event // newest first
	)
	err := b.retry(ctx, "reading the tail of "+strconv.Quote(string(id)), func(ctx context.Context) error {
		out = out[:0]
		var (
			ok  bool
			err error
		)
		h, _, ok, err = readHeader(ctx, b.pool, id)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("session %q not found: %w", id, store.ErrNotFound)
		}
		if h.Version != session.FormatVersion {
			return fmt.Errorf("unsupported session format version %d for %q (only v%d is supported): %w", h.Version, id, session.FormatVersion, store.ErrVersion)
		}
		if n <= 0 {
			return nil
		}
		// A few extra rows, so a torn row or two at the end do not shorten
		// the answer.
		rows, err := b.pool.Query(ctx, "SELECT seq, event FROM events WHERE session_id = $1 ORDER BY seq DESC LIMIT $2", key(id), n+16)
		if err != nil {
			return err
		}
		next := int64(-1)
		return scanEvents(rows, func(e session.Event, ok bool) bool {
			if ok && (next == -1 || e.Seq == next) {
				out = append(out, e)
				next = e.Seq - 1
			} else if len(out) > 0 {
				return false // a hole before the run we have
			}
			return len(out) < n
		})
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrVersion) {
			return h, nil, fmt.Errorf("postgres: %w", err)
		}
		return h, nil, b.wrap("reading the tail of "+strconv.Quote(string(id)), err)
	}
	slices.Reverse(out)
	return h, out, nil
}

// ---- writing ----

// AppendBatch implements [store.Backend]: one statement, so one round trip
// and one transaction, that checks the lease's fencing token, checks that
// the batch continues the stored log, inserts the events and the listing
// update, and rings the doorbell at commit.
func (b *Backend) AppendBatch(ctx context.Context, batch store.Batch) error {
	id := batch.Header.ID
	h, err := b.heldLease(id)
	if err != nil {
		return err
	}
	err = b.retry(ctx, "appending to "+strconv.Quote(string(id)), func(ctx context.Context) error {
		return b.write(ctx, id, h.token, batch.Header, !batch.Materialized, nil, batch.Events, batch.Info)
	})
	if err != nil && (isCode(err, codeSeq) || isUnique(err)) {
		// A retried write whose first attempt did commit (the connection
		// dropped before the answer came) finds its own events stored:
		// keep what matches, write the rest.
		err = b.reconcile(ctx, id, h.token, batch, err)
	}
	return b.fail(id, h.token, "appending to "+strconv.Quote(string(id)), err)
}

// reconcile finishes a batch that is partly stored already: the stored
// header and the events from the batch's first seq must be exactly a
// prefix of what the batch holds, else cause is returned.
func (b *Backend) reconcile(ctx context.Context, id session.ID, token int64, batch store.Batch, cause error) error {
	if len(batch.Events) == 0 {
		return cause
	}
	first := batch.Events[0].Seq
	h, stored, err := b.ReadFrom(ctx, id, first)
	if err != nil {
		return cause
	}
	if h.CreatedAt != batch.Header.CreatedAt || h.Cwd != batch.Header.Cwd || h.ParentSession != batch.Header.ParentSession || h.SeedLength != batch.Header.SeedLength {
		return cause
	}
	if len(stored) > len(batch.Events) {
		return cause
	}
	for i := range stored {
		if !store.EventsEqual(stored[i], batch.Events[i]) {
			return cause
		}
	}
	rest := batch.Events[len(stored):]
	b.logf("postgres: %d event(s) of %q were already stored by an attempt whose answer was lost; writing the other %d", len(stored), id, len(rest))
	return b.retry(ctx, "appending to "+strconv.Quote(string(id)), func(ctx context.Context) error {
		return b.write(ctx, id, token, batch.Header, false, nil, rest, batch.Info)
	})
}

// CommitRepair implements [store.Backend]: one fenced statement that cuts
// the torn rows and appends the closers.
func (b *Backend) CommitRepair(ctx context.Context, r store.Repair) error {
	id := r.Header.ID
	h, err := b.heldLease(id)
	if err != nil {
		return err
	}
	var cut *int64
	if r.Torn != nil {
		from, ok := r.Torn.(int64)
		if !ok {
			return fmt.Errorf("postgres: repairing %q: bad torn marker %T", id, r.Torn)
		}
		cut = &from
	}
	err = b.retry(ctx, "repairing "+strconv.Quote(string(id)), func(ctx context.Context) error {
		return b.write(ctx, id, h.token, r.Header, false, cut, r.Closers, r.Info)
	})
	return b.fail(id, h.token, "repairing "+strconv.Quote(string(id)), err)
}

const writeSQL = "SELECT write_events($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)"

func (b *Backend) write(ctx context.Context, id session.ID, token int64, h session.Header, create bool, cut *int64, events []session.Event, info store.Info) error {
	n := len(events)
	seqs, types, times, rows := make([]int64, n), make([]string, n), make([]int64, n), make([][]byte, n)
	var buf []byte
	ends := make([]int, n)
	for i, e := range events {
		var err error
		if buf, err = eventjson.AppendEvent(buf, e); err != nil {
			return err
		}
		ends[i] = len(buf) - 1 // without the newline
		seqs[i], types[i], times[i] = e.Seq, strings.ToValidUTF8(strings.ReplaceAll(e.Type, "\x00", ""), "\uFFFD"), e.Time
	}
	start := 0
	for i, end := range ends {
		rows[i] = buf[start:end:end]
		start = end + 1
	}
	var seed any
	if h.SeedLength != 0 {
		seed = int32(h.SeedLength)
	}
	title := strings.ToValidUTF8(strings.ReplaceAll(info.Title, "\x00", "\uFFFD"), "\uFFFD")
	_, err := b.pool.Exec(ctx, writeSQL, key(id), token, b.now(), b.opts.LeaseTTL, b.channel,
		create, h.Version, h.CreatedAt, nullText(h.Cwd), nullText(string(h.ParentSession)), seed,
		cut, title, info.LastActivity, int32(info.Turns),
		seqs, types, times, rows)
	return err
}

// fail turns a write error into the error the coordinator sees: a lost
// lease becomes a [*store.FencedError] (and is remembered, so later writes
// fail at once), the rest is wrapped.
func (b *Backend) fail(id session.ID, token int64, what string, err error) error {
	if err == nil {
		return nil
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code {
		case codeFenced:
			return b.fenced(id, token, parseLeaseDetail(id, pg.Detail))
		case codeSeq:
			return fmt.Errorf("postgres: the stored log of %q ends at seq %s, cannot append after it: %w", id, pg.Detail, store.ErrSeq)
		case "23505": // unique_violation
			if pg.ConstraintName == "sessions_pkey" {
				return fmt.Errorf("postgres: refusing to materialize %q: a log already exists in the database (load/resume it instead): %w", id, store.ErrExists)
			}
			return fmt.Errorf("postgres: %s: another writer stored these seqs first (%s): %w", what, pg.Message, store.ErrSeq)
		}
	}
	return b.wrap(what, err)
}

const (
	codeFenced = "DSHFN"
	codeSeq    = "DSHSQ"
)

func isCode(err error, code string) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == code
}

func isUnique(err error) bool { return isCode(err, "23505") }

func parseLeaseDetail(id session.ID, detail string) store.Lease {
	l := store.Lease{ID: id}
	parts := strings.SplitN(detail, " ", 3)
	if len(parts) == 3 {
		l.Token, _ = strconv.ParseInt(parts[0], 10, 64)
		l.Holder.PID, _ = strconv.Atoi(parts[1])
		l.Holder.Host = parts[2]
	}
	return l
}

// Close implements [store.Backend]: it stops renewing, releases every lease
// it holds and closes the pool.
func (b *Backend) Close() error {
	var errs []error
	b.closeMu.Do(func() {
		b.mu.Lock()
		b.closed = true
		leases := b.leases
		b.leases = map[session.ID]*held{}
		w := b.watch
		b.watch = nil
		b.mu.Unlock()
		if b.stop != nil {
			b.stop()
			<-b.done
		}
		if w != nil {
			w.close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for id, h := range leases {
			if h.lost == nil {
				if err := b.release(ctx, id, h.token); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if b.pool != nil {
			b.pool.Close()
		}
	})
	return errors.Join(errs...)
}

var errClosed = fmt.Errorf("postgres: %w", store.ErrClosed)
