package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

var _ store.Snapshots = (*Backend)(nil)

// PutSnapshot implements [store.Snapshots]: one upsert, fenced like every
// write (a writer whose lease was taken over stores nothing, so it cannot
// replace the new holder's snapshot with an older one).
func (b *Backend) PutSnapshot(ctx context.Context, id session.ID, snap store.StoredSnapshot) error {
	h, err := b.heldLease(id)
	if err != nil {
		return err
	}
	sum, err := json.Marshal(snap.Summary)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	var stored bool
	err = b.retry(ctx, "writing the snapshot of "+strconv.Quote(string(id)), func(ctx context.Context) error {
		tag, err := b.pool.Exec(ctx, `INSERT INTO snapshots(session_id, covers, summary, data)
			SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM leases WHERE session_id = $1 AND token = $5 AND holder <> '')
			ON CONFLICT (session_id) DO UPDATE SET covers = excluded.covers, summary = excluded.summary, data = excluded.data`,
			key(id), snap.Covers, sum, snap.Data, h.token)
		stored = err == nil && tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return b.wrap("writing the snapshot of "+strconv.Quote(string(id)), err)
	}
	if !stored {
		return fmt.Errorf("postgres: the snapshot of %q was not stored: the writer lease was taken over: %w", id, store.ErrFenced)
	}
	return nil
}

// LoadSnapshot implements [store.Snapshots]: the snapshot, the header and
// the rows from the snapshot's last event on, in one read-only snapshot of
// the database.
func (b *Backend) LoadSnapshot(ctx context.Context, id session.ID) (*store.StoredSnapshot, *store.Stored, error) {
	var (
		snap *store.StoredSnapshot
		st   *store.Stored
	)
	err := b.retry(ctx, "loading "+strconv.Quote(string(id)), func(ctx context.Context) error {
		var err error
		snap, st, err = b.loadSnapshotOnce(ctx, id)
		return err
	})
	if err != nil {
		return nil, nil, b.wrap("loading "+strconv.Quote(string(id)), err)
	}
	return snap, st, nil
}

func (b *Backend) loadSnapshotOnce(ctx context.Context, id session.ID) (*store.StoredSnapshot, *store.Stored, error) {
	tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL enable_sort = off; SET LOCAL enable_bitmapscan = off"})
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var snap store.StoredSnapshot
	var sum []byte
	err = tx.QueryRow(ctx, "SELECT covers, summary, data FROM snapshots WHERE session_id = $1", key(id)).Scan(&snap.Covers, &sum, &snap.Data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if json.Unmarshal(sum, &snap.Summary) != nil || snap.Covers <= 0 {
		return nil, nil, fmt.Errorf("postgres: the snapshot row of %q is damaged: %w", id, session.ErrSnapshot)
	}
	h, _, ok, err := readHeader(ctx, tx, id)
	if err != nil || !ok {
		return nil, nil, err
	}
	from := snap.Covers - 1
	st := &store.Stored{Header: h, From: from}
	if h.Version != session.FormatVersion {
		return &snap, st, nil
	}
	rows, err := tx.Query(ctx, "SELECT seq, event FROM events WHERE session_id = $1 AND seq >= $2 ORDER BY seq", key(id), from)
	if err != nil {
		return nil, nil, err
	}
	var events []session.Event
	var bad []bool
	err = scanEvents(rows, func(e session.Event, ok bool) bool {
		bad = append(bad, !ok)
		events = append(events, e)
		return true
	})
	if err != nil {
		return nil, nil, err
	}
	keep, err := store.CommittedRowsFrom(events, bad, from)
	if err != nil {
		return nil, nil, fmt.Errorf("session %q: %w", id, err)
	}
	st.Events = events[:keep:keep]
	if keep < len(events) {
		st.Torn = from + int64(keep)
	}
	return &snap, st, nil
}
