// Package sqlite stores sessions in one SQLite database (modernc.org/sqlite,
// pure Go, WAL mode): a sessions table (header plus listing columns: title,
// last activity, turns, event count) and an events table with one row per
// event, keyed by (session_id, seq) and clustered on it (WITHOUT ROWID), so
// loading a session and reading its tail are range scans of one index.
//
// A row holds the event's seq, type and time as columns (for SQL queries)
// and the whole event as its canonical JSON text, byte for byte the line
// the JSONL backend writes (json_extract(event, '$.data.…') reaches the
// payload). Loading reads that one column and parses it with the shared
// fast decoder.
//
// Loading a long session is the one path that bypasses database/sql: a
// pooled, read-only use of a connection opened through the C library API
// the driver wraps (modernc.org/sqlite/lib), without the driver's per-call
// mutex and per-column allocation, memory-mapped, and split into up to four
// seq ranges read and parsed concurrently. This is what brings a load of
// 100,000 events under 100 ms on two cores; see raw.go and the design
// record docs/rfc/implemented/architecture/*-sqlite-long-reads-below-the-driver.md.
//
// Each batch is one BEGIN IMMEDIATE transaction: the first batch of a
// session inserts its sessions row with it, so a session exists iff it has
// events; a failed batch rolls back whole. The layout version lives in
// PRAGMA user_version ([SchemaVersion]); a database of any other version is
// refused rather than migrated. Writer locks per session are flock files in
// <db>-locks/, as for JSONL.
//
// Use it when many sessions share one machine and a single file is easier
// to manage than a directory tree; JSONL stays the default because its logs
// are plain text.
package sqlite
