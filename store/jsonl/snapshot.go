package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/dshq/dsh/internal/private"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/internal/eventjson"
)

var _ store.Snapshots = (*Backend)(nil)

// snapExt names the side file holding a log's newest snapshot:
// <bucket>/<id>.snap beside <bucket>/<id>.jsonl. A side file, not a line
// of the log: the log stays an append-only record of what happened, a
// snapshot is replaced whole at every turn end, and a reader of the log
// (another tool, an older dsh) never meets one.
const snapExt = ".snap"

// snapHead is the side file's first line; the encoded snapshot follows.
type snapHead struct {
	Covers  int64         `json:"covers"`
	Summary store.Summary `json:"summary"`
	Bytes   int           `json:"bytes"`
}

func snapPath(logPath string) string { return strings.TrimSuffix(logPath, logExt) + snapExt }

// PutSnapshot implements [store.Snapshots]: the side file is written to a
// temporary name and renamed over the old one, so a reader sees the old
// snapshot or the new one, whole. It is not synced: a snapshot is derived,
// and one lost to a machine crash only means the next resume replays.
func (b *Backend) PutSnapshot(ctx context.Context, id session.ID, snap store.StoredSnapshot) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h, err := b.handle(id)
	if err != nil {
		return err
	}
	p := b.pathOf(h)
	if p == "" {
		if p, err = b.find(id); err != nil {
			return err
		}
		if p == "" {
			return fmt.Errorf("jsonl: snapshot of %q: no log: %w", id, store.ErrNotFound)
		}
	}
	head, err := json.Marshal(snapHead{Covers: snap.Covers, Summary: snap.Summary, Bytes: len(snap.Data)})
	if err != nil {
		return fmt.Errorf("jsonl: %w", err)
	}
	tmp, err := private.CreateTemp(filepath.Dir(p), ".snapshot-*.tmp")
	if err != nil {
		return fmt.Errorf("jsonl: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	buf := make([]byte, 0, len(head)+1+len(snap.Data))
	buf = append(append(append(buf, head...), '\n'), snap.Data...)
	err = b.write(tmp, buf)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), snapPath(p))
	}
	if err != nil {
		return fmt.Errorf("jsonl: writing the snapshot of %q: %w", id, err)
	}
	return nil
}

// LoadSnapshot implements [store.Snapshots]. It reads the side file, the
// log's header line and then the log backwards from its end, in windows
// that double from 256 KiB, until a window holds the snapshot's last event:
// a snapshot is taken at a turn end, so that is nearly always in the first.
func (b *Backend) LoadSnapshot(ctx context.Context, id session.ID) (*store.StoredSnapshot, *store.Stored, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	p, err := b.find(id)
	if err != nil || p == "" {
		return nil, nil, err
	}
	raw, err := os.ReadFile(snapPath(p))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("jsonl: %w", err)
	}
	snap, err := decodeSnapFile(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("jsonl: %s: %w", snapPath(p), err)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, fmt.Errorf("jsonl: %w", err)
	}
	defer f.Close()
	line, hdrEnd, err := readFirstLine(f)
	if err != nil {
		return nil, nil, fmt.Errorf("jsonl: %w", err)
	}
	hd, valid, err := parseHeader(line)
	if err != nil || !valid {
		return nil, nil, fmt.Errorf("jsonl: %w", &store.CorruptError{Path: p, Line: 1, Seq: -1, Detail: "first line is not a session header"})
	}
	if hd.ID != id {
		return nil, nil, fmt.Errorf("jsonl: %w", &store.CorruptError{Path: p, Line: 1, Seq: -1,
			Detail: fmt.Sprintf("header names session %q, expected %q", hd.ID, id)})
	}
	st := &store.Stored{Header: hd, From: snap.Covers - 1}
	if hd.Version != session.FormatVersion {
		return snap, st, nil
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("jsonl: %w", err)
	}
	size := fi.Size()
	anchor := snap.Covers - 1
	for window := int64(256 << 10); ; window *= 2 {
		start := max(hdrEnd, size-window)
		buf := make([]byte, size-start)
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("jsonl: %w", err)
		}
		at, found, before := findSeq(buf, start > hdrEnd, anchor)
		if found {
			sc, err := scanEvents(buf, at, anchor, 0)
			if err != nil {
				var ce *store.CorruptError
				if errors.As(err, &ce) {
					ce.Path = p
				}
				return nil, nil, fmt.Errorf("jsonl: %w", err)
			}
			st.Events = sc.events
			if sc.committed < sc.size {
				st.Torn = start + sc.committed
			}
			b.noteOffsets(id, p, anchor, start, sc.offs, st.Torn == nil)
			return snap, st, nil
		}
		if start == hdrEnd || !before {
			// The whole log was searched, or the window holds lines on
			// both sides of where the anchor should be: the log does
			// not hold it (shorter than the snapshot, or changed).
			return snap, st, nil
		}
	}
}

// findSeq finds the line of seq want in buf (whose first bytes are part of
// an earlier line when partial). before reports that every complete line
// found comes after want, so an earlier window may hold it.
//
// It walks the complete lines backwards from the window's end: a snapshot
// is taken at a turn end, so its anchor is nearly always among the last few
// lines, and parsing every event of a 256 KiB window forwards to reach it
// cost the resume most of its time on logs of large tool results. Seqs only
// rise along a log, so the first line seen below want proves it absent.
func findSeq(buf []byte, partial bool, want int64) (at int, found, before bool) {
	lo := 0
	if partial {
		k := bytes.IndexByte(buf, '\n')
		if k < 0 {
			return 0, false, true
		}
		lo = k + 1
	}
	// end is just past the newline of the line being looked at; a
	// trailing fragment without one is a torn line and never counts.
	end := bytes.LastIndexByte(buf, '\n') + 1
	for end > lo {
		pos := lo
		if k := bytes.LastIndexByte(buf[lo:end-1], '\n'); k >= 0 {
			pos = lo + k + 1
		}
		if e, ok := eventjson.Parse(buf[pos : end-1]); ok {
			switch {
			case e.Seq == want:
				return pos, true, false
			case e.Seq < want:
				return 0, false, false
			}
		}
		end = pos
	}
	return 0, false, true
}

// noteOffsets records the line offsets of the events from seq first on
// for a session this backend holds, so reading back its released payloads
// seeks instead of scanning the log.
func (b *Backend) noteOffsets(id session.ID, p string, first, base int64, offs []int64, complete bool) {
	if !complete {
		return
	}
	h := b.held(id)
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.path != "" && h.path != p {
		return
	}
	h.path = p
	h.offs, h.offsFrom = linesOf(offs, base), first
}

func decodeSnapFile(raw []byte) (*store.StoredSnapshot, error) {
	nl := bytes.IndexByte(raw, '\n')
	if nl < 0 {
		return nil, fmt.Errorf("snapshot file has no head line: torn: %w", session.ErrSnapshot)
	}
	var h snapHead
	if err := json.Unmarshal(raw[:nl], &h); err != nil {
		return nil, fmt.Errorf("snapshot file head is not JSON: torn: %w", session.ErrSnapshot)
	}
	data := raw[nl+1:]
	if len(data) != h.Bytes || h.Covers <= 0 {
		return nil, fmt.Errorf("snapshot file holds %d bytes for %d events, its head says %d: torn: %w", len(data), h.Covers, h.Bytes, session.ErrSnapshot)
	}
	return &store.StoredSnapshot{Covers: h.Covers, Summary: h.Summary, Data: data}, nil
}
