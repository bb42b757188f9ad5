package jsonl

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/internal/eventjson"
)

var _ store.Salvager = (*Backend)(nil)

// Salvage implements [store.Salvager]: every line that parses as an event
// is kept, runs of lines that do not are reported as one damaged range each,
// and so are events missing from the seq order.
func (b *Backend) Salvage(ctx context.Context, id session.ID) (*store.Salvaged, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := b.find(id)
	if err != nil {
		return nil, err
	}
	if p == "" {
		return nil, fmt.Errorf("jsonl: session %q not found: %w", id, store.ErrNotFound)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	return salvage(id, p, data), nil
}

func salvage(id session.ID, path string, b []byte) *store.Salvaged {
	out := &store.Salvaged{Header: session.Header{ID: id, Version: session.FormatVersion}}
	var bad *store.Damage // the open run of bad lines
	flush := func() {
		if bad != nil {
			out.Damage = append(out.Damage, *bad)
			bad = nil
		}
	}
	markBad := func(line int, off, size int64, detail string) {
		if bad != nil && bad.LastLine == line-1 {
			bad.LastLine, bad.Size = line, off+size-bad.Offset
			return
		}
		flush()
		bad = &store.Damage{Path: path, FirstLine: line, LastLine: line, Offset: off, Size: size, FirstSeq: -1, LastSeq: -1, Detail: detail}
	}
	next := int64(0) // the seq expected next
	line := 0
	for pos := 0; pos < len(b); {
		line++
		k := bytes.IndexByte(b[pos:], '\n')
		end, torn := pos+k, false
		if k < 0 {
			end, torn = len(b), true
		}
		text := b[pos:end]
		off, size := int64(pos), int64(end-pos)
		if !torn {
			size++
		}
		pos = end + 1
		if line == 1 {
			if h, valid, err := parseHeader(text); err == nil && valid && h.ID == id {
				out.Header = h
				continue
			}
			out.HeaderDamaged = true
			markBad(line, off, size, "not a session header")
			continue
		}
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		e, ok := eventjson.Parse(text)
		switch {
		case !ok && torn:
			markBad(line, off, size, "a final line cut off mid-write")
			continue
		case !ok:
			markBad(line, off, size, "not a JSON event")
			continue
		}
		flush()
		switch {
		case e.Seq < next:
			// A repeat: keeping it would make the export unloadable.
			out.Damage = append(out.Damage, store.Damage{Path: path, FirstLine: line, LastLine: line, Offset: off, Size: size,
				FirstSeq: e.Seq, LastSeq: e.Seq, Detail: fmt.Sprintf("seq %d again (after %d); left out", e.Seq, next-1)})
			continue
		case e.Seq > next:
			out.Damage = append(out.Damage, store.Damage{Path: path, FirstSeq: next, LastSeq: e.Seq - 1,
				Detail: fmt.Sprintf("events missing before line %d", line)})
		}
		next = e.Seq + 1
		out.Events = append(out.Events, e)
	}
	flush()
	return out
}
