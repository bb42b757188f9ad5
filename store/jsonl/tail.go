package jsonl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/internal/eventjson"
)

const tailChunk = 64 << 10

// Tail implements [store.Backend]: it reads the header line and then the
// file backwards from its end, in 64 KiB chunks, until it has n events. A
// trailing fragment without a newline is skipped; so are unreadable lines
// at the very end (a torn write). Reading stops at the first unreadable line
// or seq break before that, so the result is always a contiguous run.
func (b *Backend) Tail(ctx context.Context, id session.ID, n int) (session.Header, []session.Event, error) {
	if err := ctx.Err(); err != nil {
		return session.Header{}, nil, err
	}
	p, err := b.find(id)
	if err != nil {
		return session.Header{}, nil, err
	}
	if p == "" {
		return session.Header{}, nil, fmt.Errorf("jsonl: session %q not found: %w", id, store.ErrNotFound)
	}
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return session.Header{}, nil, fmt.Errorf("jsonl: session %q not found: %w", id, store.ErrNotFound)
		}
		return session.Header{}, nil, fmt.Errorf("jsonl: %w", err)
	}
	defer f.Close()
	line, start, err := readFirstLine(f)
	if err != nil {
		return session.Header{}, nil, fmt.Errorf("jsonl: %w", err)
	}
	h, valid, err := parseHeader(line)
	if err != nil || !valid {
		return session.Header{}, nil, fmt.Errorf("jsonl: %w", &store.CorruptError{Path: p, Line: 1, Seq: -1, Detail: "first line is not a session header"})
	}
	if h.Version != session.FormatVersion {
		return h, nil, fmt.Errorf("jsonl: unsupported session format version %d for %q (only v%d is supported): %w", h.Version, id, session.FormatVersion, store.ErrVersion)
	}
	if n <= 0 {
		return h, nil, nil
	}
	fi, err := f.Stat()
	if err != nil {
		return h, nil, fmt.Errorf("jsonl: %w", err)
	}

	var (
		out     []session.Event      // newest first
		next    int64           = -1 // seq the next (older) event must have
		pos                     = fi.Size()
		buf     []byte          // bytes [pos, pos+len(buf)) read but not consumed
		trimmed bool            // the trailing fragment has been cut
	)
	load := func() error {
		from := max(start, pos-tailChunk)
		chunk := make([]byte, pos-from, int(pos-from)+len(buf))
		if _, err := f.ReadAt(chunk, from); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("jsonl: %w", err)
		}
		buf = append(chunk, buf...)
		pos = from
		return nil
	}
	for len(out) < n {
		if !trimmed {
			// Cut the fragment after the last newline (a torn write).
			if pos <= start {
				break
			}
			if err := load(); err != nil {
				return h, nil, err
			}
			if j := bytes.LastIndexByte(buf, '\n'); j >= 0 {
				buf, trimmed = buf[:j+1], true
			} else {
				buf = buf[:0]
			}
			continue
		}
		if len(buf) == 0 {
			if pos <= start {
				break
			}
			if err := load(); err != nil {
				return h, nil, err
			}
			continue
		}
		k := bytes.LastIndexByte(buf[:len(buf)-1], '\n')
		if k < 0 && pos > start {
			if err := load(); err != nil {
				return h, nil, err
			}
			continue
		}
		e, ok := eventjson.Parse(buf[k+1 : len(buf)-1])
		if ok && (next == -1 || e.Seq == next) {
			e.Data = append([]byte(nil), e.Data...) // do not pin the chunk
			out = append(out, e)
			next = e.Seq - 1
			if next < 0 {
				break
			}
		} else if len(out) > 0 {
			break // a hole before the run we have
		}
		buf = buf[:k+1]
	}
	slices.Reverse(out)
	return h, out, nil
}
