package jsonl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/internal/eventjson"
)

var _ store.SpanReader = (*Backend)(nil)

// ReadRange implements [store.SpanReader]: it streams the lines of seqs
// [from, to) with a bounded buffer. For a session this process holds, the
// offsets of its lines are known and the read starts where the range does;
// otherwise (or when the offsets turn out stale) it scans from the top.
func (b *Backend) ReadRange(ctx context.Context, id session.ID, from, to int64, fn func(session.Event) error) error {
	if from >= to {
		return nil
	}
	var p string
	start := int64(-1)
	// known is the offset of the first line whose offset is known, when
	// that is past from (a session resumed from a snapshot knows those
	// from the snapshot on).
	known, knownSeq := int64(-1), int64(0)
	if h := b.held(id); h != nil {
		h.mu.Lock()
		if h.path != "" {
			p = h.path
			if i := from - h.offsFrom; h.offs != nil && i >= 0 && i < int64(h.offs.len()) {
				start = h.offs.at(int(i))
			} else if i < 0 && h.offs != nil && h.offs.len() > 0 {
				known, knownSeq = h.offs.at(0), h.offsFrom
			}
		}
		h.mu.Unlock()
	}
	if known >= 0 {
		// Counting lines back from there reads only the lines between,
		// without parsing them (a scan from the start parses the whole log
		// before from); a miscount is caught by the seeked read below.
		start = lineBack(p, known, knownSeq-from)
	}
	if p == "" {
		var err error
		if p, err = b.find(id); err != nil {
			return err
		}
		if p == "" {
			return fmt.Errorf("jsonl: session %q: %w", id, store.ErrNotFound)
		}
	}
	if start >= 0 {
		next, err := b.readLines(ctx, p, start, from, to, true, fn)
		if err == nil || next != from || !errors.Is(err, errStale) {
			return err
		}
	}
	_, err := b.readLines(ctx, p, 0, from, to, false, fn)
	return err
}

var errStale = errors.New("jsonl: line offsets are stale")

// readLines reads p from offset at and calls fn for the events with seqs in
// [from, to). at is the offset of seq from's line when seeked (then the
// first line must be that event, else errStale); else it is 0 and the
// header line is skipped. It returns the next seq it wanted.
func (b *Backend) readLines(ctx context.Context, p string, at, from, to int64, seeked bool, fn func(session.Event) error) (int64, error) {
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return from, fmt.Errorf("jsonl: %s: %w", p, store.ErrNotFound)
		}
		return from, fmt.Errorf("jsonl: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(io.NewSectionReader(f, at, 1<<62), 64<<10)
	line := 0
	if !seeked {
		if _, err := r.ReadSlice('\n'); err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return from, fmt.Errorf("jsonl: %s: reading the header: %w", p, err)
		}
		line = 1
	}
	next := from
	var long []byte
	for next < to {
		if err := ctx.Err(); err != nil {
			return next, err
		}
		text, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it.
			long = append(long[:0], text...)
			for errors.Is(err, bufio.ErrBufferFull) {
				text, err = r.ReadSlice('\n')
				long = append(long, text...)
			}
			text = long
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return next, fmt.Errorf("jsonl: %s: the log ends before seq %d: %w", p, next, store.ErrNotFound)
			}
			return next, fmt.Errorf("jsonl: %w", err)
		}
		line++
		e, ok := eventjson.Parse(text[:len(text)-1])
		switch {
		case !ok && seeked:
			return next, errStale
		case !ok:
			return next, fmt.Errorf("jsonl: %w", &store.CorruptError{Path: p, Line: line, Seq: -1, Detail: fmt.Sprintf("unparsable event at line %d", line)})
		case e.Seq < next && !seeked:
			continue
		case e.Seq != next && seeked:
			return next, errStale
		case e.Seq != next:
			return next, fmt.Errorf("jsonl: %w", &store.CorruptError{Path: p, Line: line, Seq: e.Seq, Detail: fmt.Sprintf("seq %d where %d was expected", e.Seq, next)})
		}
		if err := fn(e.Clone()); err != nil {
			return next, err
		}
		next++
	}
	return next, nil
}

// lineBack returns the offset of the line k lines before the line at
// offset at in the file p, reading backwards, or -1.
func lineBack(p string, at, k int64) int64 {
	f, err := os.Open(p)
	if err != nil {
		return -1
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	seen := int64(0) // newlines passed; the (k+1)th ends the line before the one wanted
	for end := at; end > 0; {
		n := min(int64(len(buf)), end)
		begin := end - n
		if _, err := f.ReadAt(buf[:n], begin); err != nil {
			return -1
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] == '\n' {
				if seen++; seen == k+1 {
					return begin + i + 1
				}
			}
		}
		end = begin
	}
	return -1
}
