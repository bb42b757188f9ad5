package jsonl

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dshq/dsh/internal/private"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/internal/eventjson"
)

// The listing index is <root>/index.jsonl: append-only records, one per
// write, each naming a log file, the file's size after that write and the
// listing entry at that point. The newest record whose size matches the
// file's current size is the entry; listing therefore costs one read of the
// index plus one stat per log, never a log parse.
//
// The index is derived data and heals itself. A log without a matching
// record (written by a process that crashed before recording it, cut by a
// repair, or whose record was lost) is rescanned: incrementally from the
// last recorded committed offset when the log only grew past it (committed
// bytes never change), else from scratch. Missing or unreadable index:
// everything is rescanned once. Index writes are best effort and never fail
// a session write. The file is compacted (one record per log, written to a
// temp file and renamed over) when it has grown well past that.

type record struct {
	File      string `json:"file"` // relative to the root, slash-separated
	Size      int64  `json:"size"`
	Committed int64  `json:"committed"`      // summary covers bytes before this
	Skip      bool   `json:"skip,omitempty"` // not a listable log
	store.Info
}

type logFile struct {
	name string
	size int64
}

type index struct {
	b    *Backend
	path string

	// mu is read-locked by the writers of records, which append to f at
	// once (O_APPEND makes each write land whole at the end), and locked
	// by whatever replaces or reads f: 50 sessions flushing at once do not
	// queue behind each other's write(2).
	mu   sync.RWMutex
	f    *os.File
	puts atomic.Int64
	// compactAt is the index size above which it is compacted (0 until
	// first measured); written with mu locked, read without.
	compactAt atomic.Int64
}

// write appends buf to the index file, opening it when needed; false when
// that failed (the record is lost: the index heals by rescanning).
func (x *index) write(buf []byte) bool {
	x.mu.RLock()
	if f := x.f; f != nil {
		_, err := f.Write(buf)
		x.mu.RUnlock()
		if err != nil {
			x.mu.Lock()
			if x.f == f {
				x.f.Close()
				x.f = nil
			}
			x.mu.Unlock()
			return false
		}
		return true
	}
	x.mu.RUnlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.f == nil {
		f, err := private.OpenFile(x.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE)
		if err != nil {
			return false
		}
		x.f = f
	}
	if _, err := x.f.Write(buf); err != nil {
		x.f.Close()
		x.f = nil
		return false
	}
	return true
}

// Compaction thresholds (variables so tests can lower them).
var (
	minCompactBytes int64 = 1 << 20 // never compact a smaller index on write
	checkEvery            = 64      // check the index size every n records
	listSlack             = 1024    // a listing compacts above 2×logs+slack records
)

func (x *index) rel(p string) string {
	r, err := filepath.Rel(x.b.root, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(r)
}

// put records the entry of the log at p after a write.
func (x *index) put(p string, size int64, info store.Info) {
	x.append([]record{{File: x.rel(p), Size: size, Committed: size, Info: info}})
}

func (x *index) append(recs []record) {
	if len(recs) == 0 {
		return
	}
	var buf []byte
	for _, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			continue
		}
		buf = append(append(buf, line...), '\n')
	}
	if !x.write(buf) {
		return
	}
	if (x.puts.Add(1)-1)%int64(checkEvery) != 0 {
		return
	}
	if !x.checkDue() {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.reopenIfReplacedLocked()
	if x.f == nil {
		return
	}
	fi, err := x.f.Stat()
	if err != nil {
		return
	}
	if x.compactAt.Load() == 0 {
		x.compactAt.Store(max(minCompactBytes, 3*fi.Size()))
		return
	}
	if fi.Size() > x.compactAt.Load() {
		recs, _ := x.readLocked()
		if n, err := x.rewriteLocked(latest(recs)); err == nil {
			x.compactAt.Store(max(minCompactBytes, 3*n))
		}
	}
}

// checkDue reports whether the periodic check has work for the write
// lock: the file was replaced, its size is not yet measured, or it grew
// past the compaction size. Its two stats run read-locked — under the
// write lock every session's record write queued behind them (and behind
// their holder, when it was descheduled), at every checkEvery-th record.
func (x *index) checkDue() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.f == nil {
		return false
	}
	fi, err := x.f.Stat()
	cur, cerr := os.Stat(x.path)
	if err != nil || cerr != nil || !os.SameFile(fi, cur) {
		return true
	}
	at := x.compactAt.Load()
	return at == 0 || fi.Size() > at
}

// reopenIfReplacedLocked drops the append handle when the index file was
// removed or replaced (by a compaction in another process, or by hand), so
// the next record goes to the file listings read.
func (x *index) reopenIfReplacedLocked() {
	if x.f == nil {
		return
	}
	fi, err := x.f.Stat()
	cur, cerr := os.Stat(x.path)
	if err != nil || cerr != nil || !os.SameFile(fi, cur) {
		x.f.Close()
		x.f = nil
	}
}

func (x *index) close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.f == nil {
		return nil
	}
	err := x.f.Close()
	x.f = nil
	return err
}

func (x *index) readLocked() ([]record, error) {
	data, err := os.ReadFile(x.path)
	if err != nil {
		return nil, err
	}
	recs := make([]record, 0, bytes.Count(data, []byte{'\n'}))
	for len(data) > 0 {
		line := data
		if k := bytes.IndexByte(data, '\n'); k >= 0 {
			line, data = data[:k], data[k+1:]
		} else {
			break // torn
		}
		if r, ok := parseRecord(line); ok {
			recs = append(recs, r)
		}
	}
	return recs, nil
}

// latest keeps the newest record of every file.
func latest(recs []record) []record {
	seen := map[string]int{}
	var out []record
	for _, r := range recs {
		if i, ok := seen[r.File]; ok {
			out[i] = r
			continue
		}
		seen[r.File] = len(out)
		out = append(out, r)
	}
	return out
}

// rewriteLocked replaces the index with recs; it returns the new size.
func (x *index) rewriteLocked(recs []record) (int64, error) {
	var buf []byte
	for _, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			continue
		}
		buf = append(append(buf, line...), '\n')
	}
	tmp, err := private.CreateTemp(filepath.Dir(x.path), ".index-*.tmp")
	if err != nil {
		return 0, err
	}
	_, err = tmp.Write(buf)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), x.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return 0, err
	}
	if x.f != nil {
		x.f.Close()
		x.f = nil
	}
	return int64(len(buf)), nil
}

// List implements [store.Backend].
func (b *Backend) List(ctx context.Context, q store.Query) ([]store.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var buckets []string
	if q.Cwd != "" {
		buckets = []string{BucketName(q.Cwd)}
	} else {
		entries, err := os.ReadDir(b.root)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil
			}
			return nil, fmt.Errorf("jsonl: %w", err)
		}
		for _, e := range entries {
			if isBucket(e.Name()) && e.IsDir() {
				buckets = append(buckets, e.Name())
			}
		}
	}

	// Read the index and stat the logs concurrently: both are mostly
	// system calls and parsing, and a listing is what a picker waits on.
	x := b.idx
	var (
		recs    []record
		listing = make([][]logFile, len(buckets))
		errs    = make([]error, len(buckets))
		wg      sync.WaitGroup
	)
	wg.Go(func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		var err error
		if recs, err = x.readLocked(); err != nil {
			recs = nil // missing or unreadable: rebuild from the logs
		}
		x.reopenIfReplacedLocked()
	})
	workers := max(1, min(runtime.GOMAXPROCS(0), 4, len(buckets)))
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(buckets); i += workers {
				if ctx.Err() != nil {
					return
				}
				listing[i], errs[i] = logFiles(filepath.Join(b.root, buckets[i]))
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	byFile := make(map[string][]int, len(recs))
	for i, r := range recs {
		byFile[r.File] = append(byFile[r.File], i)
	}

	var (
		out     []store.Info
		current []record
		fresh   []record
	)
	for bi, bucket := range buckets {
		if err := errs[bi]; err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("jsonl: %w", err)
		}
		for _, lf := range listing[bi] {
			name, size := lf.name, lf.size
			rel := bucket + "/" + name
			var r record
			found := false
			var prev *record
			idxs := byFile[rel]
			for k := len(idxs) - 1; k >= 0; k-- {
				c := &recs[idxs[k]]
				if prev == nil {
					prev = c
				}
				if c.Size == size {
					r, found = *c, true
					break
				}
			}
			if !found {
				var err error
				r, err = b.rescan(rel, size, prev)
				if err != nil {
					if errors.Is(err, fs.ErrNotExist) {
						continue
					}
					return nil, err
				}
				fresh = append(fresh, r)
			}
			current = append(current, r)
			if r.Skip || q.Cwd != "" && r.Header.Cwd != q.Cwd {
				continue
			}
			out = append(out, r.Info)
		}
	}

	if q.Cwd == "" && len(recs) > 2*len(current)+listSlack {
		x.mu.Lock()
		if n, err := x.rewriteLocked(current); err == nil {
			x.compactAt.Store(max(minCompactBytes, 3*n))
		}
		x.mu.Unlock()
	} else {
		x.append(fresh)
	}

	slices.SortFunc(out, func(a, b store.Info) int {
		if c := cmp.Compare(b.LastActivity, a.LastActivity); c != 0 {
			return c
		}
		return cmp.Compare(a.Header.ID, b.Header.ID)
	})
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// rescan builds the record of a log the index does not describe.
func (b *Backend) rescan(rel string, size int64, prev *record) (record, error) {
	p := filepath.Join(b.root, filepath.FromSlash(rel))
	f, err := os.Open(p)
	if err != nil {
		return record{}, err
	}
	defer f.Close()
	if prev != nil && !prev.Skip && prev.Header.Version == session.FormatVersion &&
		prev.Committed > 0 && prev.Committed <= size {
		// Committed bytes never change: fold only what follows.
		buf := make([]byte, size-prev.Committed+1)
		if _, err := f.ReadAt(buf, prev.Committed-1); err == nil && buf[0] == '\n' {
			r := *prev
			r.Size = size
			n, sum := summarize(buf[1:], prev.Summary)
			r.Summary = sum
			r.Committed = prev.Committed + n
			return r, nil
		}
	}
	line, end, err := readFirstLine(f)
	if err != nil {
		if errors.Is(err, store.ErrCorrupt) {
			return record{File: rel, Size: size, Skip: true}, nil
		}
		return record{}, err
	}
	r := record{File: rel, Size: size, Committed: end}
	h, valid, _ := parseHeader(line)
	if !valid {
		r.Skip = true
		return r, nil
	}
	r.Info = store.NewInfo(h, nil)
	if h.Version != session.FormatVersion {
		r.Committed = 0 // never fold events of a format we do not read
		return r, nil
	}
	rest := make([]byte, size-end)
	if _, err := f.ReadAt(rest, end); err != nil && !errors.Is(err, io.EOF) {
		return record{}, fmt.Errorf("jsonl: %w", err)
	}
	n, sum := summarize(rest, r.Summary)
	r.Summary = sum
	r.Committed = end + n
	return r, nil
}

// summarize folds the intact, contiguous events at the start of b into sum;
// it returns how many bytes it consumed (whole lines only).
func summarize(b []byte, sum store.Summary) (int64, store.Summary) {
	var n int64
	next := sum.Events
	for len(b) > 0 {
		k := bytes.IndexByte(b, '\n')
		if k < 0 {
			break
		}
		e, ok := eventjson.Parse(b[:k])
		if !ok || e.Seq != next {
			break
		}
		sum = sum.Add([]session.Event{e})
		next++
		n += int64(k + 1)
		b = b[k+1:]
	}
	return n, sum
}

// readFirstLine reads the header line in bounded chunks; end is the offset
// just past its newline.
func readFirstLine(f *os.File) (line []byte, end int64, err error) {
	const chunk = 8 << 10
	const limit = 64 << 20
	var buf []byte
	for off := int64(0); off < limit; off += chunk {
		part := make([]byte, chunk)
		n, err := f.ReadAt(part, off)
		part = part[:n]
		if k := bytes.IndexByte(part, '\n'); k >= 0 {
			buf = append(buf, part[:k]...)
			return buf, off + int64(k) + 1, nil
		}
		buf = append(buf, part...)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, 0, &store.CorruptError{Path: f.Name(), Seq: -1, Detail: "empty or header-less session log"}
			}
			return nil, 0, err
		}
	}
	return nil, 0, &store.CorruptError{Path: f.Name(), Line: 1, Seq: -1, Detail: "header line is too long"}
}
