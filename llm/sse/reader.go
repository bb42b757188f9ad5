package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// DefaultMaxEventSize bounds one line and one event's data when the reader
// is not given a limit. A single tool-call delta can carry a whole file, so
// the bound is generous; it exists so a broken server cannot make the reader
// buffer without end.
const DefaultMaxEventSize = 16 << 20

// ErrTooLong is returned when a line or an event's data exceeds the limit.
var ErrTooLong = errors.New("sse: line or event exceeds the size limit")

// TooLongError is the [ErrTooLong] of a reader, with its limit.
type TooLongError struct{ Limit int }

func (e *TooLongError) Error() string {
	return fmt.Sprintf("an event or line over the size limit of %s", sizeText(e.Limit))
}

// Is makes errors.Is(err, ErrTooLong) true.
func (e *TooLongError) Is(target error) bool { return target == ErrTooLong }

func sizeText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// bufferSize is the read buffer of a reader. Lines that do not fit are not
// buffered whole: a data line streams into the event's data, and anything
// else too long for the buffer is skipped or refused (see streamLine).
const bufferSize = 32 << 10

// keepData is the largest data buffer a reader keeps between events: the
// buffer of one huge event is dropped once the event has been consumed, so
// a stream with one 10 MB tool call does not hold 10 MB for the rest of its
// life.
const keepData = 1 << 20

// Event is one dispatched server-sent event.
type Event struct {
	// Type is the value of the event's "event" field ("" when absent, which
	// the SSE standard calls "message").
	Type string
	// Data is the event's data lines joined with "\n". It is only valid
	// until the next call to Next.
	Data []byte
	// ID is the last event ID seen so far (it persists across events).
	ID string
	// Retry is the last reconnection time the stream asked for, 0 if none.
	Retry time.Duration
	// Partial is true when the stream ended inside this event's last line
	// (no line terminator): the event may be truncated.
	Partial bool
}

// Reader parses a text/event-stream body (WHATWG HTML §9.2): fields event,
// data, id and retry; comments; multi-line data; LF, CRLF and CR line
// endings; a leading byte-order mark. Unlike the standard, an event still
// pending when the stream ends is dispatched (with Partial set when its last
// line had no terminator) so callers can tell a truncated stream from a
// complete one. Lines and events are bounded (see [ErrTooLong]).
//
// A Reader does not allocate per event except for event types and ids that
// differ from the previous ones. Its read buffer stays small however large
// an event is: a data line longer than the buffer is appended to the event's
// data as it arrives, so a huge event costs one copy (its data), not two,
// and that copy is released once the next event is asked for.
type Reader struct {
	rd  io.Reader
	max int

	buf  []byte
	r, w int
	err  error // sticky error from rd

	skipLF  bool // the previous line ended in CR: drop a following LF
	started bool // BOM check done

	data    []byte
	hasData bool
	typ     []byte
	hasType bool

	lastType string
	id       string
	retry    time.Duration
}

// NewReader returns a reader with the default size limit.
func NewReader(r io.Reader) *Reader { return NewReaderSize(r, DefaultMaxEventSize) }

// NewReaderSize returns a reader whose lines and events may not exceed max
// bytes (max <= 0 means [DefaultMaxEventSize]).
func NewReaderSize(r io.Reader, max int) *Reader { return newReader(r, max, bufferSize) }

func newReader(r io.Reader, max, size int) *Reader {
	if max <= 0 {
		max = DefaultMaxEventSize
	}
	if size > max+1 {
		size = max + 1
	}
	return &Reader{rd: r, max: max, buf: make([]byte, size)}
}

func (r *Reader) tooLong() error { return &TooLongError{Limit: r.max} }

// Next returns the next event. At the end of the stream it returns io.EOF;
// a read error is returned as is, after the events completed before it (a
// line the error cut off is dropped).
func (r *Reader) Next() (Event, error) {
	if cap(r.data) > keepData {
		r.data = nil // the last event was huge; its Data is no longer valid
	}
	for {
		line, terminated, err := r.readLine()
		if err == errStreamed {
			// A data line too long for the buffer went straight into the
			// event's data.
			if !terminated && r.hasData {
				return r.dispatch(true), nil
			}
			continue
		}
		if err != nil {
			if err == io.EOF && r.hasData {
				return r.dispatch(false), nil
			}
			r.reset()
			return Event{}, err
		}
		if !terminated {
			// The stream ended inside this line: process it, then
			// dispatch whatever the event holds.
			if len(line) > 0 {
				if err := r.field(line); err != nil {
					return Event{}, err
				}
			}
			if r.hasData {
				return r.dispatch(true), nil
			}
			r.reset()
			continue // next readLine reports EOF
		}
		if len(line) == 0 {
			if r.hasData {
				return r.dispatch(false), nil
			}
			r.reset()
			continue
		}
		if err := r.field(line); err != nil {
			return Event{}, err
		}
	}
}

func (r *Reader) reset() {
	r.data = r.data[:0]
	r.hasData = false
	r.typ = r.typ[:0]
	r.hasType = false
}

func (r *Reader) dispatch(partial bool) Event {
	ev := Event{Data: r.data, ID: r.id, Retry: r.retry, Partial: partial}
	if r.hasType && len(r.typ) > 0 {
		if string(r.typ) != r.lastType { // no allocation for the comparison
			r.lastType = string(r.typ)
		}
		ev.Type = r.lastType
	}
	r.data = r.data[:0]
	r.hasData = false
	r.typ = r.typ[:0]
	r.hasType = false
	return ev
}

// field processes one non-empty line.
func (r *Reader) field(line []byte) error {
	if line[0] == ':' {
		return nil // comment
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		n := len(r.data) + len(value)
		if r.hasData {
			n++
		}
		if n > r.max {
			return r.tooLong()
		}
		if r.hasData {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
		r.hasData = true
	case "event":
		r.typ = append(r.typ[:0], value...)
		r.hasType = true
	case "id":
		if bytes.IndexByte(value, 0) < 0 && string(value) != r.id {
			r.id = string(value)
		}
	case "retry":
		if ms, ok := digits(value); ok {
			r.retry = time.Duration(ms) * time.Millisecond
		}
	}
	return nil
}

func digits(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 12 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// readLine returns the next line without its terminator. terminated is
// false for a last line cut off by the end of the stream. The slice is only
// valid until the next call.
func (r *Reader) readLine() (line []byte, terminated bool, err error) {
	for {
		if r.skipLF {
			if r.r < r.w {
				if r.buf[r.r] == '\n' {
					r.r++
				}
				r.skipLF = false
			} else if r.err != nil {
				r.skipLF = false
			} else {
				if err := r.fill(); err != nil {
					return nil, false, err
				}
				continue
			}
		}
		if !r.started {
			if r.w-r.r < 3 && r.err == nil {
				if err := r.fill(); err != nil {
					return nil, false, err
				}
				if r.w-r.r < 3 && r.err == nil {
					continue
				}
			}
			r.started = true
			if bytes.HasPrefix(r.buf[r.r:r.w], []byte("\xef\xbb\xbf")) {
				r.r += 3
			}
		}
		b := r.buf[r.r:r.w]
		i := bytes.IndexByte(b, '\n')
		j := i
		if i < 0 {
			j = len(b)
		}
		if k := bytes.IndexByte(b[:j], '\r'); k >= 0 {
			line = b[:k]
			r.r += k + 1
			r.skipLF = true
			return line, true, nil
		}
		if i >= 0 {
			line = b[:i]
			r.r += i + 1
			return line, true, nil
		}
		if r.err != nil {
			if r.err == io.EOF && r.r < r.w {
				line = r.buf[r.r:r.w]
				r.r = r.w
				return line, false, nil
			}
			return nil, false, r.err
		}
		if r.w-r.r > r.max {
			return nil, false, r.tooLong()
		}
		if r.r == 0 && r.w == len(r.buf) {
			// The line does not fit in the buffer.
			terminated, err := r.streamLine()
			if err != nil {
				return nil, false, err
			}
			return nil, terminated, errStreamed
		}
		if err := r.fill(); err != nil {
			return nil, false, err
		}
	}
}

// errStreamed tells Next that readLine consumed a long line itself.
var errStreamed = errors.New("sse: line streamed")

// streamLine consumes a line longer than the buffer, which holds its start.
// A data line is appended to the event's data as it arrives (bounded by the
// limit); a comment or a field dsh does not know is skipped (bounded too, so
// an endless line is still refused); an event, id or retry line that long
// is refused. terminated is false when the stream ended inside the line.
func (r *Reader) streamLine() (terminated bool, err error) {
	head := r.buf[r.r:r.w]
	colon := bytes.IndexByte(head, ':')
	name := head
	if colon >= 0 {
		name = head[:colon]
	}
	data := colon > 0 && string(name) == "data"
	switch {
	case data:
	case colon == 0:
	case colon < 0 || (string(name) != "event" && string(name) != "id" && string(name) != "retry"):
		// Unknown fields are ignored (a name longer than the buffer is
		// unknown too).
	default:
		return false, r.tooLong()
	}
	skipped := 0
	take := func(p []byte) error {
		if !data {
			if skipped += len(p); skipped > r.max {
				return r.tooLong()
			}
			return nil
		}
		n := len(r.data) + len(p)
		if n > r.max {
			return r.tooLong()
		}
		if n > cap(r.data) {
			// Double (append grows large slices by a quarter, which for a
			// 10 MB line is dozens of copies left for the collector).
			grown := make([]byte, len(r.data), min(max(2*cap(r.data), n, 64<<10), r.max))
			copy(grown, r.data)
			r.data = grown
		}
		r.data = append(r.data, p...)
		return nil
	}
	stripSpace := false
	if data {
		if r.hasData {
			if len(r.data)+1 > r.max {
				return false, r.tooLong()
			}
			r.data = append(r.data, '\n')
		}
		r.hasData = true
		value := head[colon+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		} else if len(value) == 0 {
			stripSpace = true // the space, if any, is in the next read
		}
		if err := take(value); err != nil {
			return false, err
		}
	}
	r.r = r.w
	for {
		if r.r == r.w {
			if r.err != nil {
				if r.err == io.EOF {
					return false, nil
				}
				return false, r.err
			}
			if err := r.fill(); err != nil {
				return false, err
			}
			continue
		}
		b := r.buf[r.r:r.w]
		if stripSpace {
			stripSpace = false
			if b[0] == ' ' {
				r.r++
				continue
			}
		}
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			if err := take(b); err != nil {
				return false, err
			}
			r.r = r.w
			continue
		}
		if err := take(b[:i]); err != nil {
			return false, err
		}
		r.r += i + 1
		r.skipLF = b[i] == '\r'
		return true, nil
	}
}

// fill reads more data, compacting the buffer (a full buffer is the
// caller's to handle: see streamLine). Read errors become sticky in r.err.
func (r *Reader) fill() error {
	if r.r > 0 {
		n := copy(r.buf, r.buf[r.r:r.w])
		r.r, r.w = 0, n
	}
	if r.w == len(r.buf) {
		return r.tooLong()
	}
	for tries := 0; tries < 100; tries++ {
		n, err := r.rd.Read(r.buf[r.w:])
		r.w += n
		if err != nil {
			r.err = err
			return nil
		}
		if n > 0 {
			return nil
		}
	}
	r.err = io.ErrNoProgress
	return nil
}
