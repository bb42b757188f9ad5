// Package postgres stores sessions in PostgreSQL (driver
// github.com/jackc/pgx/v5), so that many hosts share one store: any host
// resumes any session, and anyone follows a session as it runs elsewhere.
//
// # Layout
//
// A schema of its own (default "dsh") holds a sessions table (the header
// and the listing columns: title, last activity, turns, event count), an
// events table with one row per event keyed by (session_id, seq), whose
// event column holds the event's canonical JSON bytes exactly as the JSONL
// backend writes them, and a leases table. The layout is versioned:
// migrations (migrate.go) run on open in one transaction under an advisory
// lock, and `dsh store migrate` runs them explicitly; a schema newer than
// the build is refused.
//
// # Writes and fencing
//
// Every write is one statement, so one round trip and one transaction: the
// write_events function checks (and renews) the writer's lease by its
// fencing token, creates the session on its first batch, checks that the
// batch continues the stored log, inserts the rows, updates the listing
// columns and NOTIFYs the session's followers. The primary key makes a
// second writer's insert of a seq fail even without the lease check.
//
// A session's writer lock is a lease (see [store.Leaser]): Lock acquires
// it with a token one greater than the last, a goroutine renews every held
// lease every third of its TTL (default 30s), and a lease expires when its
// holder stops renewing. A holder whose lease was taken over gets a
// [*store.FencedError] at its next write, and [Options.OnLost] as soon as a
// renewal finds out. On the holder's own machine a dead holder is noticed
// at once (its process is gone), so resuming after a crash on one host
// needs no wait; another host waits for the expiry (store.AwaitLease).
//
// # Outages
//
// An operation that fails because the database is unreachable (a restart,
// a failover, a dropped connection) is retried with backoff for up to
// [Options.RetryFor], each retry reported through [Options.Logf]. A write
// whose connection dropped after it committed is recognised on retry (its
// events are already stored, byte for byte) and not written twice.
//
// # Reads
//
// Loads stream rows from one snapshot and parse them with the shared fast
// decoder, copying row bytes into large blocks rather than one allocation
// per event. Listing reads the sessions table only; the tail reads the
// last rows by primary key.
package postgres
