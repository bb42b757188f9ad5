package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/internal/eventjson"
)

var _ store.Salvager = (*Backend)(nil)

// maxSkip bounds how far Salvage looks past an unreadable stretch of rows.
const maxSkip = int64(1) << 40

// Salvage implements [store.Salvager]: the rows that parse are kept; a row
// that does not, or a stretch the database cannot read at all (a damaged
// page), is reported as a damaged seq range and skipped, and reading goes
// on after it.
func (b *Backend) Salvage(ctx context.Context, id session.ID) (*store.Salvaged, error) {
	out := &store.Salvaged{Header: session.Header{ID: id, Version: session.FormatVersion}}
	h, found, err := readHeader(ctx, b.db, id)
	switch {
	case err != nil:
		out.HeaderDamaged = true
		out.Damage = append(out.Damage, store.Damage{Path: b.path, FirstSeq: -1, LastSeq: -1,
			Detail: fmt.Sprintf("the session's header row cannot be read (%v)", b.wrap(err))})
	case found:
		out.Header = h
	}
	var bad *store.Damage
	flush := func() {
		if bad != nil {
			out.Damage = append(out.Damage, *bad)
			bad = nil
		}
	}
	next, from := int64(0), int64(0)
	row := func(v []driver.Value) bool {
		seq, _ := v[0].(int64)
		text, ok := textOf(v[1])
		var e session.Event
		if ok {
			e, ok = eventjson.Parse(text)
		}
		from = seq + 1
		if !ok || e.Seq != seq {
			if bad != nil && bad.LastSeq == seq-1 {
				bad.LastSeq = seq
			} else {
				flush()
				bad = &store.Damage{Path: b.path, FirstSeq: seq, LastSeq: seq, Detail: "rows that are not JSON events"}
			}
			next = seq + 1
			return true
		}
		flush()
		if seq > next {
			out.Damage = append(out.Damage, store.Damage{Path: b.path, FirstSeq: next, LastSeq: seq - 1, Detail: "events missing"})
		}
		next = seq + 1
		out.Events = append(out.Events, e)
		return true
	}
	const q = "SELECT seq, event FROM events WHERE session_id = ? AND seq >= ? ORDER BY seq"
	for {
		err := b.query(ctx, q, []any{string(id), from}, 2, row)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The database cannot read on from here: find where it can again.
		// Doubling finds a readable start, bisection the first one, so the
		// readable rows just past the damage are kept.
		flush()
		start := from
		readable := func(at int64) bool {
			return b.query(ctx, "SELECT seq FROM events WHERE session_id = ? AND seq >= ? ORDER BY seq LIMIT 1",
				[]any{string(id), at}, 1, func([]driver.Value) bool { return false }) == nil
		}
		lo, hi := start, int64(-1) // lo is unreadable
		for step := int64(1); step < maxSkip; step *= 2 {
			if readable(start + step) {
				hi = start + step
				break
			}
			lo = start + step
		}
		for hi >= 0 && hi-lo > 1 {
			if mid := lo + (hi-lo)/2; readable(mid) {
				hi = mid
			} else {
				lo = mid
			}
		}
		out.Damage = append(out.Damage, store.Damage{Path: b.path, FirstSeq: start, LastSeq: max(hi-1, -1),
			Detail: fmt.Sprintf("rows the database cannot read (%s)", strings.TrimPrefix(err.Error(), "sqlite: "))})
		if hi < 0 {
			break
		}
		from = hi
		next = from
	}
	flush()
	if !found && !out.HeaderDamaged && len(out.Events) == 0 && len(out.Damage) == 0 {
		return nil, fmt.Errorf("sqlite: session %q not found: %w", id, store.ErrNotFound)
	}
	return out, nil
}
