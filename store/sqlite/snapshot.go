package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/internal/eventjson"
)

var _ store.Snapshots = (*Backend)(nil)

// snapshotSchema is the table of each session's newest snapshot: one row,
// replaced at every turn end, deleted with its session. It is created by
// every build that knows it, in databases of this schema version too,
// because it holds only derived data.
const snapshotSchema = `
CREATE TABLE IF NOT EXISTS snapshots(
	session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
	covers INTEGER NOT NULL,
	summary TEXT NOT NULL,
	data BLOB NOT NULL
) STRICT;
`

// PutSnapshot implements [store.Snapshots]: one upsert.
func (b *Backend) PutSnapshot(ctx context.Context, id session.ID, snap store.StoredSnapshot) error {
	if err := b.locked(id); err != nil {
		return err
	}
	sum, err := json.Marshal(snap.Summary)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	b.writeMu.Lock()
	defer b.writeMu.Unlock()
	_, err = b.db.ExecContext(ctx, `INSERT INTO snapshots(session_id, covers, summary, data) VALUES(?, ?, ?, ?)
		ON CONFLICT(session_id) DO UPDATE SET covers = excluded.covers, summary = excluded.summary, data = excluded.data`,
		string(id), snap.Covers, string(sum), snap.Data)
	if err != nil {
		return b.wrap(fmt.Errorf("sqlite: writing the snapshot of %q: %w", id, err))
	}
	return nil
}

// LoadSnapshot implements [store.Snapshots]: the snapshot row, the header,
// and one range read of the rows from the snapshot's last event on.
func (b *Backend) LoadSnapshot(ctx context.Context, id session.ID) (*store.StoredSnapshot, *store.Stored, error) {
	snap, st, err := b.loadSnapshot(ctx, id)
	return snap, st, b.wrap(err)
}

func (b *Backend) loadSnapshot(ctx context.Context, id session.ID) (*store.StoredSnapshot, *store.Stored, error) {
	var snap store.StoredSnapshot
	var sum string
	err := b.db.QueryRowContext(ctx, "SELECT covers, summary, data FROM snapshots WHERE session_id = ?", string(id)).Scan(&snap.Covers, &sum, &snap.Data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: reading the snapshot of %q: %w", id, err)
	}
	if err := json.Unmarshal([]byte(sum), &snap.Summary); err != nil || snap.Covers <= 0 {
		return nil, nil, fmt.Errorf("sqlite: the snapshot row of %q is damaged: %w", id, session.ErrSnapshot)
	}
	h, ok, err := readHeader(ctx, b.db, id)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, nil
	}
	from := snap.Covers - 1
	st := &store.Stored{Header: h, From: from}
	if h.Version != session.FormatVersion {
		return &snap, st, nil
	}
	var events []session.Event
	var bad []bool
	err = b.readRange(ctx, id, from, math.MaxInt64, false, func(seq int64, text []byte) {
		e, ok := eventjson.Parse(text)
		if ok {
			// A copy: text is the reader's scratch buffer.
			e = e.Clone()
		} else {
			e = session.Event{Seq: seq}
		}
		events, bad = append(events, e), append(bad, !ok)
	})
	if err != nil {
		return nil, nil, err
	}
	keep, err := store.CommittedRowsFrom(events, bad, from)
	if err != nil {
		var ce *store.CorruptError
		if errors.As(err, &ce) && b.path != Memory {
			ce.Path = b.path
		}
		return nil, nil, fmt.Errorf("sqlite: session %q: %w", id, err)
	}
	st.Events = events[:keep:keep]
	if keep < len(events) {
		st.Torn = from + int64(keep)
	}
	return &snap, st, nil
}
