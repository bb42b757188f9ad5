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
	if h.Version != session.FormatVersion {
		return &scanned{header: h, committed: int64(nl + 1), size: int64(len(b))}, nil
	}
	sc, err := scanEvents(b, nl+1, 0, 2)
	if err != nil {
		return nil, err
	}
	sc.header, sc.size = h, int64(len(b))
	return sc, nil
}

// scanEvents parses the event lines of b from offset pos on, the first of
// which must have seq first, with the rules of [scanLog]. line is the
// 1-based file line of the one at pos, for error messages (0: unknown, as
// when pos is somewhere in the middle of a log). Offsets are into b.
func scanEvents(b []byte, pos int, first int64, line int) (*scanned, error) {
	res := &scanned{committed: int64(pos), size: int64(len(b))}
	// One pass: keep events while every line is intact and in sequence.
	// After the first bad line, keep reading only to learn whether an
	// intact turn/end follows it: then the bad line is in the committed
	// region (corruption), else it starts the torn tail.
	events := make([]session.Event, 0, bytes.Count(b[pos:], []byte{'\n'}))
	res.offs = make([]int64, 0, cap(events))
	var bad *store.CorruptError // the first bad line, while undecided
	lineOf := func(i int) int {
		if line == 0 {
			return 0
		}
		return line + i
	}
	where := func(i int, start int) string {
		if line == 0 {
			return fmt.Sprintf("at byte %d", start)
		}
		return fmt.Sprintf("at line %d", line+i)
	}
	i := 0
	for pos < len(b) {
		k := bytes.IndexByte(b[pos:], '\n')
		if k < 0 {
			break
		}
		e, ok := eventjson.Parse(b[pos : pos+k])
		start := pos
		pos += k + 1
		want := first + int64(i)
		if bad == nil {
			if ok && e.Seq == want {
				events = append(events, e)
				res.offs = append(res.offs, int64(start))
				res.committed = int64(pos)
				i++
				continue
			}
			if !ok {
				bad = &store.CorruptError{Line: lineOf(i), Seq: -1,
					Detail: fmt.Sprintf("unparsable committed event %s", where(i, start))}
			} else {
				bad = &store.CorruptError{Line: lineOf(i), Seq: e.Seq,
					Detail: fmt.Sprintf("seq gap in committed region %s (expected %d, got %d)", where(i, start), want, e.Seq)}
			}
		}
		i++
		if ok && e.Type == session.TypeTurnEnd {
			return nil, bad
		}
	}
	res.events = events[:len(events):len(events)]
	return res, nil
}
