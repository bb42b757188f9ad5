package store

import (
	"context"

	"github.com/dshq/dsh/session"
)

// Snapshots is the optional part of a [Backend] that keeps each session's
// newest snapshot ([session.Snapshot]) beside its log, so a resume reads
// the snapshot and the events after it instead of the whole log. Every
// backend dsh ships implements it, and the store contract
// ([storetest.Contract]) checks it; a backend without it still works, and
// every resume of it replays the whole log (the coordinator says so).
//
// A snapshot is derived data: the log stays the only source of truth. So a
// backend need not make PutSnapshot durable before it returns (a crash may
// lose the newest snapshot, and the next resume then uses an older one or
// replays), but what it returns must be exactly what was put or nothing: a
// damaged one is caught by the snapshot's own checksum, and a snapshot of a
// log that changed since (a repair cut events it covers) by its anchor.
type Snapshots interface {
	// PutSnapshot stores snap as the newest snapshot of id, replacing
	// older ones. The caller holds the lock of id, whose log is
	// materialized and at least snap.Covers events long.
	PutSnapshot(ctx context.Context, id session.ID, snap StoredSnapshot) error
	// LoadSnapshot returns the newest snapshot of id and the stored log
	// from seq snap.Covers-1 on: Stored.From is snap.Covers-1 and the
	// first event, when the log has it, is the one the snapshot must be
	// anchored on. The events after it follow the rules of LoadStored (a
	// contiguous intact run, a torn tail named in Torn). A log shorter than
	// the snapshot comes back with no events. It returns nil, nil, nil when
	// id has no snapshot, whether or not it has a log; it never writes and
	// never interprets snap.Data.
	LoadSnapshot(ctx context.Context, id session.ID) (*StoredSnapshot, *Stored, error)
}

// StoredSnapshot is one stored snapshot of a session.
type StoredSnapshot struct {
	// Covers is how many events the snapshot stands for (seqs 0 through
	// Covers-1).
	Covers int64
	// Summary is the listing summary of those events, so a resume from
	// the snapshot keeps the listing entry current without the log.
	Summary Summary
	// Data is the encoded snapshot ([session.Snapshot.Encode]).
	Data []byte
}
