package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dshq/dsh/session"
)

// Backend is the storage half of persistence: a handful of hooks that read
// and write one kind of medium. Everything that decides what to write and
// when (buffering, per-session ordering, adoption of live sessions, crash
// repair) lives in the [Coordinator], so every backend gets it right the
// same way.
//
// The coordinator calls the per-session hooks (Lock, Unlock, LoadStored,
// LoadLive, AppendBatch, CommitRepair) for one id at a time, never
// concurrently for the same id; hooks for different ids and List/Tail may run
// concurrently.
type Backend interface {
	// Name labels the backend in errors ("session-persistence-jsonl").
	Name() string

	// Lock takes the cross-process writer lock of id: while this backend
	// holds it, no other process (or other backend over the same storage)
	// may write the session. It is idempotent, never blocks, and fails with
	// an [*InUseError] when someone else holds the lock. The coordinator
	// locks before it reads a session it means to write and keeps the lock
	// until it forgets the session.
	Lock(ctx context.Context, id session.ID) error
	// Unlock releases the lock of id and any resource the backend keeps for
	// the session. Unlocking an id that is not locked is a no-op.
	Unlock(id session.ID) error

	// LoadStored finds id in any storage scope (for JSONL: every cwd
	// bucket). It returns nil, nil when there is no stored artifact. It
	// never writes.
	LoadStored(ctx context.Context, id session.ID) (*Stored, error)
	// LoadLive is LoadStored limited to the scope of cwd ("" is the no-cwd
	// scope). Backends without scopes ignore cwd.
	LoadLive(ctx context.Context, id session.ID, cwd string) (*Stored, error)

	// AppendBatch durably appends events (contiguous, starting at the
	// stored length) and updates the listing entry to b.Info. When
	// b.Materialized is false nothing is stored yet: the header and the
	// batch must become visible together or not at all, and an existing
	// artifact must never be overwritten. On error nothing of the batch may
	// remain visible. The caller holds the lock.
	AppendBatch(ctx context.Context, b Batch) error
	// CommitRepair cuts the torn tail named by r.Torn (when non-nil), then
	// appends r.Closers (when any) and updates the listing entry. It need
	// not be atomic: a crash in between leaves a log that loads again.
	CommitRepair(ctx context.Context, r Repair) error

	// List returns the listing entries of materialized sessions matching q,
	// newest activity first, without parsing whole logs.
	List(ctx context.Context, q Query) ([]Info, error)
	// Tail returns the header and up to n of the last complete events of id,
	// in seq order, reading a bounded amount of storage. It never writes
	// and never repairs: a torn fragment is skipped, an open turn stays
	// open. A missing session is an error wrapping [ErrNotFound].
	Tail(ctx context.Context, id session.ID, n int) (session.Header, []session.Event, error)

	// Close releases every lock and resource. The coordinator calls it
	// after its final drain.
	Close() error
}

// Stored is what a backend found for one session: its header and the longest
// contiguous prefix of intact events.
type Stored struct {
	Header session.Header
	// Events is the preserved prefix, seq == From + index. For a header
	// of an unsupported version it is empty: the backend does not
	// interpret the rest.
	Events []session.Event
	// From is the seq of the first of Events: 0, except for the part of a
	// log read after a snapshot ([Snapshots.LoadSnapshot]).
	From int64
	// Torn is non-nil when bytes or rows after Events must be cut before
	// anything is appended (a write that never completed). Its value is
	// opaque to the coordinator and handed back in [Repair.Torn].
	Torn any
}

// Batch is one durable append.
type Batch struct {
	Header session.Header
	Events []session.Event
	// Materialized reports whether the session already has a stored
	// artifact; false means this batch creates it (header and events
	// together).
	Materialized bool
	// Info is the session's listing entry after the batch.
	Info Info
}

// Repair is a crash repair: cut a torn tail, then append closers.
type Repair struct {
	Header  session.Header
	Torn    any
	Closers []session.Event
	// Info is the listing entry after the repair.
	Info Info
}

// Query filters a listing.
type Query struct {
	// Cwd, when set, keeps only sessions whose header has exactly this
	// working directory.
	Cwd string
	// Limit, when positive, keeps only the first Limit entries.
	Limit int
}

// Info is one listing entry: the header plus a summary that is maintained
// on every write, so listing never parses logs.
type Info struct {
	Header session.Header `json:"header"`
	Summary
}

// Errors. Match them with errors.Is; the messages carry the details.
var (
	// ErrNotFound: no stored session with that id.
	ErrNotFound = errors.New("session not found")
	// ErrExists: create of an id that is tracked or already stored.
	ErrExists = errors.New("session already exists")
	// ErrCollision: a live session's id is bound to a different log.
	ErrCollision = errors.New("id collision")
	// ErrCorrupt: the committed part of a log cannot be read.
	ErrCorrupt = errors.New("corrupt session log")
	// ErrVersion: a header of a format version this build does not read.
	ErrVersion = errors.New("unsupported session format version")
	// ErrSeq: a batch does not continue the stored log.
	ErrSeq = errors.New("append seq mismatch")
	// ErrNotJSON: an event whose data is not a JSON value.
	ErrNotJSON = errors.New("non-JSON event data")
	// ErrInUse: another process (or backend instance) holds the session.
	ErrInUse = errors.New("session in use")
	// ErrLive: the session is bound to a live session of this process.
	ErrLive = errors.New("session is live")
	// ErrInvalidID: an empty id, or one that is not valid UTF-8.
	ErrInvalidID = errors.New("invalid session id")
	// ErrClosed: the coordinator or backend was closed.
	ErrClosed = errors.New("session persistence is closed")
	// ErrNotLive: a flush of a live session object that has left the live
	// set (its agent was disposed) and is no longer adopted.
	ErrNotLive = errors.New("session is no longer live here")
)

// InUseError reports a session whose writer lock another process holds.
type InUseError struct {
	ID  session.ID
	PID int // 0 when unknown
	// Host names the holder's host when the lock is a lease ([Leaser]);
	// Remaining is how long its lease has left unless renewed.
	Host      string
	Lease     bool
	Remaining time.Duration
}

func (e *InUseError) Error() string {
	pid := "pid unknown"
	if e.PID > 0 {
		pid = fmt.Sprintf("pid %d", e.PID)
	}
	msg := fmt.Sprintf("session %s is in use by another dsh process (%s)", e.ID, pid)
	if e.Host != "" {
		msg += " on host " + e.Host
	}
	if e.Lease {
		msg += fmt.Sprintf("; its lease runs %s more unless renewed (dsh -r %s --takeover takes it over)", e.Remaining.Round(time.Second), e.ID)
	}
	return msg
}

// Is makes errors.Is(err, ErrInUse) true.
func (e *InUseError) Is(target error) bool { return target == ErrInUse }

// CorruptError reports unreadable committed data. Line is the 1-based line
// of the log file (the header is line 1) for JSONL; Seq names the row for
// SQLite (-1 when not applicable).
type CorruptError struct {
	Path   string
	Line   int
	Seq    int64
	Detail string
}

func (e *CorruptError) Error() string {
	if e.Path != "" {
		return e.Path + ": corrupt session log: " + e.Detail
	}
	return "corrupt session log: " + e.Detail
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// SpanReader is the part of a [Backend] that reads a stored log a span at
// a time, without loading it whole. The coordinator installs it as the
// [session.Reader] of every live session it writes, which lets a session
// release the payloads of flushed events from memory; viewers and
// exporters stream with it.
type SpanReader interface {
	// ReadRange calls fn with each stored event of id whose seq is in
	// [from, to), in seq order; the event is fn's to keep. A range past the
	// stored end is an error wrapping [ErrNotFound]; fn's error stops the
	// read and is returned.
	ReadRange(ctx context.Context, id session.ID, from, to int64, fn func(session.Event) error) error
}
