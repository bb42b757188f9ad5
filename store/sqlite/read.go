package sqlite

import (
	"context"
	"fmt"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/internal/eventjson"
)

var _ store.SpanReader = (*Backend)(nil)

// ReadRange implements [store.SpanReader]: one indexed range query.
func (b *Backend) ReadRange(ctx context.Context, id session.ID, from, to int64, fn func(session.Event) error) error {
	if from >= to {
		return nil
	}
	next := from
	var ferr error
	err := b.readRange(ctx, id, from, to, false, func(seq int64, text []byte) {
		if ferr != nil {
			return
		}
		e, ok := eventjson.Parse(text)
		switch {
		case !ok:
			ferr = &store.CorruptError{Path: b.path, Seq: seq, Detail: fmt.Sprintf("unparsable event row %d", seq)}
		case e.Seq != next:
			ferr = &store.CorruptError{Path: b.path, Seq: seq, Detail: fmt.Sprintf("row %d holds seq %d where %d was expected", seq, e.Seq, next)}
		default:
			next++
			// A copy: text is the reader's scratch buffer, which the
			// next row overwrites.
			ferr = fn(e.Clone())
		}
	})
	if err == nil {
		err = ferr
	}
	if err == nil && next < to {
		err = fmt.Errorf("session %q has no event %d: %w", id, next, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("sqlite: %w", b.wrap(err))
	}
	return nil
}
