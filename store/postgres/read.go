package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

var _ store.SpanReader = (*Backend)(nil)

// ReadRange implements [store.SpanReader]: one indexed range query, retried
// like every read while nothing has been handed to fn.
func (b *Backend) ReadRange(ctx context.Context, id session.ID, from, to int64, fn func(session.Event) error) error {
	if from >= to {
		return nil
	}
	next := from
	var ferr error
	err := b.retry(ctx, "reading "+strconv.Quote(string(id)), func(ctx context.Context) error {
		rows, err := b.pool.Query(ctx, "SELECT seq, event FROM events WHERE session_id = $1 AND seq >= $2 AND seq < $3 ORDER BY seq", key(id), next, to)
		if err != nil {
			return err
		}
		return scanEvents(rows, func(e session.Event, ok bool) bool {
			switch {
			case !ok:
				ferr = &store.CorruptError{Seq: e.Seq, Detail: fmt.Sprintf("unparsable event row %d", e.Seq)}
			case e.Seq != next:
				ferr = &store.CorruptError{Seq: e.Seq, Detail: fmt.Sprintf("row %d where %d was expected", e.Seq, next)}
			default:
				next++
				ferr = fn(e.Clone())
			}
			return ferr == nil
		})
	})
	if err == nil {
		err = ferr
	}
	if err == nil && next < to {
		err = fmt.Errorf("session %q has no event %d: %w", id, next, store.ErrNotFound)
	}
	if err != nil {
		return b.wrap("reading "+strconv.Quote(string(id)), err)
	}
	return nil
}
