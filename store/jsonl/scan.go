package jsonl

import (
	"bytes"
	"fmt"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/internal/eventjson"
)

// scanned is a parsed log.
type scanned struct {
	header session.Header
	// events is the preserved prefix: contiguous from seq 0, every line
	// intact. Data aliases the file buffer.
	events []session.Event
	// committed is the byte offset just past the last preserved line (or
	// the header line); everything after it is a torn tail.
	committed int64
	size      int64
	// offs[i] is the byte offset of the line of events[i].
	offs []int64
}

// scanLog parses a whole log file.
//
// Only complete (newline-terminated) lines count; a trailing fragment is
// torn. The committed region reaches through the last intact turn/end: an
// unparsable line or a seq that is not its index there is corruption, an
// error naming the 1-based file line. After it the first bad line starts a
// torn tail; the intact events before it are kept, so the real events of an
// interrupted final turn survive (the coordinator closes that turn).
//
// A header of another format version is returned without its events.
func scanLog(b []byte) (*scanned, error) {
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		return nil, &store.CorruptError{Seq: -1, Detail: "empty or header-less session log"}
	}
	h, valid, err := parseHeader(b[:nl])
	if err != nil {
		return nil, &store.CorruptError{Line: 1, Seq: -1, Detail: "header line is not valid JSON"}
	}
	if !valid {
		return nil, &store.CorruptError{Line: 1, Seq: -1, Detail: "first line is not a session header"}
	}
	res := &scanned{header: h, committed: int64(nl + 1), size: int64(len(b))}
	if h.Version != session.FormatVersion {
		return res, nil
	}
	// One pass: keep events while every line is intact and in sequence.
	// After the first bad line, keep reading only to learn whether an
	// intact turn/end follows it: then the bad line is in the committed
	// region (corruption), else it starts the torn tail.
	events := make([]session.Event, 0, bytes.Count(b[nl+1:], []byte{'\n'}))
	res.offs = make([]int64, 0, cap(events))
	var bad *store.CorruptError // the first bad line, while undecided
	i := 0
	for pos := nl + 1; pos < len(b); i++ {
		k := bytes.IndexByte(b[pos:], '\n')
		if k < 0 {
			break
		}
		e, ok := eventjson.Parse(b[pos : pos+k])
		start := pos
		pos += k + 1
		if bad == nil {
			if ok && e.Seq == int64(i) {
				events = append(events, e)
				res.offs = append(res.offs, int64(start))
				res.committed = int64(pos)
				continue
			}
			if !ok {
				bad = &store.CorruptError{Line: i + 2, Seq: -1,
					Detail: fmt.Sprintf("unparsable committed event at line %d", i+2)}
			} else {
				bad = &store.CorruptError{Line: i + 2, Seq: e.Seq,
					Detail: fmt.Sprintf("seq gap in committed region at line %d (expected %d, got %d)", i+2, i, e.Seq)}
			}
		}
		if ok && e.Type == session.TypeTurnEnd {
			return nil, bad
		}
	}
	res.events = events[:len(events):len(events)]
	return res, nil
}
