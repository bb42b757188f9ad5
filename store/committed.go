package store

import (
	"fmt"

	"github.com/dshq/dsh/session"
)

// CommittedRows applies the committed-region rule to a session's rows read
// in seq order, for backends that store one row per event: a bad row
// (bad[i]: its bytes are not an event) or a row whose seq is not its index,
// at or before the last intact turn/end, is corruption (a [*CorruptError]
// naming its seq); after it, it starts a torn tail, a write that never
// completed, and the intact rows before it are kept. keep is how many rows
// are kept.
func CommittedRows(events []session.Event, bad []bool) (keep int, err error) {
	return CommittedRowsFrom(events, bad, 0)
}

// CommittedRowsFrom is [CommittedRows] for rows read from seq from on (the
// part of a log after a snapshot): the row at index i must hold seq from+i.
func CommittedRowsFrom(events []session.Event, bad []bool, from int64) (keep int, err error) {
	lastTurnEnd := -1
	for i := range events {
		if !bad[i] && events[i].Type == session.TypeTurnEnd {
			lastTurnEnd = i
		}
	}
	for i := range events {
		e := &events[i]
		if !bad[i] && e.Seq == from+int64(i) {
			continue
		}
		if i > lastTurnEnd {
			return i, nil
		}
		if bad[i] {
			return 0, &CorruptError{Seq: e.Seq, Line: -1,
				Detail: fmt.Sprintf("unparsable committed event at seq %d", e.Seq)}
		}
		return 0, &CorruptError{Seq: e.Seq, Line: -1,
			Detail: fmt.Sprintf("seq gap in committed region (expected %d, got %d)", from+int64(i), e.Seq)}
	}
	return len(events), nil
}
