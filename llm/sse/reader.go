package sse

import (
	"bytes"
	"errors"
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
// differ from the previous ones.
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
func NewReaderSize(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMaxEventSize
	}
	size := 32 << 10
	if size > max+1 {
		size = max + 1
	}
	return &Reader{rd: r, max: max, buf: make([]byte, size)}
}

// Next returns the next event. At the end of the stream it returns io.EOF;
// a read error is returned as is, after the events completed before it (a
// line the error cut off is dropped).
func (r *Reader) Next() (Event, error) {
	for {
		line, terminated, err := r.readLine()
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
			return ErrTooLong
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
			return nil, false, ErrTooLong
		}
		if err := r.fill(); err != nil {
			return nil, false, err
		}
	}
}

// fill reads more data, compacting or growing the buffer. It only returns
// an error for a line that cannot fit; read errors become sticky in r.err.
func (r *Reader) fill() error {
	if r.r > 0 {
		n := copy(r.buf, r.buf[r.r:r.w])
		r.r, r.w = 0, n
	}
	if r.w == len(r.buf) {
		if len(r.buf) > r.max {
			return ErrTooLong
		}
		size := 2 * len(r.buf)
		if size > r.max+1 {
			size = r.max + 1
		}
		nb := make([]byte, size)
		copy(nb, r.buf[:r.w])
		r.buf = nb
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
