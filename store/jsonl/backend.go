package jsonl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/dshq/dsh/internal/private"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/internal/eventjson"
	"github.com/dshq/dsh/store/internal/flock"
)

// Name labels this backend in errors.
const Name = "session-persistence-jsonl"

const (
	noCwdBucket = "_no-cwd"
	cwdPrefix   = "cwd-"
	logExt      = ".jsonl"
	locksDir    = "locks"
	indexFile   = "index.jsonl"
)

// Options configure a [Backend].
type Options struct {
	// NoSync skips every fsync. Writes then survive a crash of the process
	// but not of the machine; for tests, benchmarks and scratch stores.
	NoSync bool
	// Hooks intercept writes and syncs of log files, to inject failures
	// (a full disk) in tests. Nil fields use the file directly.
	Hooks Hooks
}

// Hooks intercept file operations of the log files.
type Hooks struct {
	Write func(f *os.File, p []byte) (int, error)
	Sync  func(f *os.File) error
}

// Backend stores each session as one JSONL file under a root directory. It
// implements [store.Backend]; use it through a [store.Coordinator].
type Backend struct {
	root string
	opts Options
	idx  *index

	// mu guards handles, locking and closed. It is read-locked by the
	// lookup every write makes (handle): each of 50 sessions' step flushes
	// takes it, and an exclusive lock queued them all behind any holder the
	// scheduler descheduled. A handle's own fields have the handle's lock.
	mu      sync.RWMutex
	handles map[session.ID]*handle
	// locking holds the ids whose lock file is being taken (outside mu);
	// each channel closes when that is done.
	locking map[session.ID]chan struct{}
	closed  bool
}

// handle is a session this backend holds the writer lock of.
type handle struct {
	lock *flock.Lock
	// mu guards path, offs and offsFrom: they are written by the session's
	// writer and by a load or read of the session (which a viewer may run
	// concurrently), never by another session's.
	mu    sync.Mutex
	path  string   // the log file, once known
	f     *os.File // open for writing, once used
	size  int64    // the committed size, when known
	known bool
	// offs.at(i) is the byte offset of the line of seq offsFrom+i in
	// path, for the events this process read or wrote (nil when unknown,
	// as after a repair); ReadRange seeks with it. offsFrom is 0 unless
	// the session was loaded from a snapshot.
	offs     *lines
	offsFrom int64
}

var _ store.Backend = (*Backend)(nil)

// Open returns a backend rooted at root (made absolute now; created on the
// first write).
func Open(root string, opts Options) (*Backend, error) {
	if root == "" {
		return nil, errors.New("jsonl: empty root")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	b := &Backend{root: abs, opts: opts, handles: map[session.ID]*handle{}, locking: map[session.ID]chan struct{}{}}
	b.idx = &index{b: b, path: filepath.Join(abs, indexFile)}
	return b, nil
}

// Root is the absolute root directory.
func (b *Backend) Root() string { return b.root }

// Name implements [store.Backend].
func (b *Backend) Name() string { return Name }

// BucketName is the directory (under the root) holding the logs of
// sessions whose header has this cwd.
func BucketName(cwd string) string {
	if cwd == "" {
		return noCwdBucket
	}
	sum := sha256.Sum256([]byte(cwd))
	return cwdPrefix + hex.EncodeToString(sum[:])[:12]
}

func isBucket(name string) bool {
	return name == noCwdBucket || strings.HasPrefix(name, cwdPrefix)
}

// Path is where the log of id with this cwd lives.
func (b *Backend) Path(id session.ID, cwd string) (string, error) {
	enc, err := store.EncodeSegment(string(id))
	if err != nil {
		return "", fmt.Errorf("jsonl: session id %q: %w", id, err)
	}
	return filepath.Join(b.root, BucketName(cwd), enc+logExt), nil
}

func (b *Backend) write(f *os.File, p []byte) error {
	var n int
	var err error
	if b.opts.Hooks.Write != nil {
		n, err = b.opts.Hooks.Write(f, p)
	} else {
		n, err = f.Write(p)
	}
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return err
}

func (b *Backend) sync(f *os.File) error {
	if b.opts.NoSync {
		return nil
	}
	if b.opts.Hooks.Sync != nil {
		return b.opts.Hooks.Sync(f)
	}
	return f.Sync()
}

func (b *Backend) syncDir(dir string) error {
	if b.opts.NoSync {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// ensureDir creates dir (mode 0700) and any missing parent, syncing each
// parent whose entries changed.
func (b *Backend) ensureDir(dir string) error {
	st, err := os.Stat(dir)
	if err == nil {
		if !st.IsDir() {
			return fmt.Errorf("jsonl: %s is not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := b.ensureDir(parent); err != nil {
			return err
		}
	}
	if err := private.Mkdir(dir); err != nil {
		return err
	}
	return b.syncDir(parent)
}

// acquire takes a lock file (a variable so a test can hold one up).
var acquire = flock.Acquire

// Lock implements [store.Backend]: flock(2) on <root>/locks/<id>.lock.
//
// The lock file is created and locked outside b.mu: it is file-system work
// (a create, a lock, a stat, a write of the pid) that takes milliseconds on
// a busy disk, and b.mu is on every session's write path, so holding it
// here made each new session stall every other session's flush. A second
// Lock of an id whose locking is under way waits for it.
func (b *Backend) Lock(ctx context.Context, id session.ID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	enc, err := store.EncodeSegment(string(id))
	if err != nil {
		return fmt.Errorf("jsonl: session id %q: %w", id, err)
	}
	var done chan struct{}
	for done == nil {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return fmt.Errorf("jsonl: %w", store.ErrClosed)
		}
		if b.handles[id] != nil {
			b.mu.Unlock()
			return nil
		}
		if wait := b.locking[id]; wait != nil {
			b.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		done = make(chan struct{})
		b.locking[id] = done
		b.mu.Unlock()
	}
	l, err := acquire(filepath.Join(b.root, locksDir, enc+".lock"))
	b.mu.Lock()
	delete(b.locking, id)
	close(done)
	closed := b.closed
	if err == nil && !closed {
		b.handles[id] = &handle{lock: l}
	}
	b.mu.Unlock()
	if err != nil {
		var held *flock.HeldError
		if errors.As(err, &held) {
			return &store.InUseError{ID: id, PID: held.PID}
		}
		return fmt.Errorf("jsonl: locking session %q: %w", id, err)
	}
	if closed {
		_ = l.Release()
		return fmt.Errorf("jsonl: %w", store.ErrClosed)
	}
	return nil
}

// Unlock implements [store.Backend].
func (b *Backend) Unlock(id session.ID) error {
	b.mu.Lock()
	h := b.handles[id]
	delete(b.handles, id)
	b.mu.Unlock()
	return h.release()
}

func (h *handle) release() error {
	if h == nil {
		return nil
	}
	var err error
	if h.f != nil {
		err = h.f.Close()
		h.f = nil
	}
	if lerr := h.lock.Release(); err == nil {
		err = lerr
	}
	return err
}

// Close implements [store.Backend]: releases every lock.
func (b *Backend) Close() error {
	b.mu.Lock()
	hs := b.handles
	b.handles = map[session.ID]*handle{}
	b.closed = true
	b.mu.Unlock()
	var errs []error
	for _, h := range hs {
		if err := h.release(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := b.idx.close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// held is the handle of a session this backend holds, nil when none.
func (b *Backend) held(id session.ID) *handle {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.handles[id]
}

func (b *Backend) handle(id session.ID) (*handle, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return nil, fmt.Errorf("jsonl: %w", store.ErrClosed)
	}
	h := b.handles[id]
	if h == nil {
		return nil, fmt.Errorf("jsonl: session %q is not locked by this backend", id)
	}
	return h, nil
}

// find looks for the log of id in every bucket; "" when there is none.
// Only a missing file means absent: any other error is returned.
func (b *Backend) find(id session.ID) (string, error) {
	enc, err := store.EncodeSegment(string(id))
	if err != nil {
		return "", fmt.Errorf("jsonl: session id %q: %w", id, err)
	}
	entries, err := os.ReadDir(b.root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return "", fmt.Errorf("jsonl: %w", err)
	}
	for _, e := range entries {
		if !isBucket(e.Name()) {
			continue
		}
		p := filepath.Join(b.root, e.Name(), enc+logExt)
		if _, err := os.Lstat(p); err == nil {
			return p, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("jsonl: %w", err)
		}
	}
	return "", nil
}

// LoadStored implements [store.Backend].
func (b *Backend) LoadStored(ctx context.Context, id session.ID) (*store.Stored, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := b.find(id)
	if err != nil || p == "" {
		return nil, err
	}
	return b.load(id, p)
}

// LoadLive implements [store.Backend]: only the bucket of cwd.
func (b *Backend) LoadLive(ctx context.Context, id session.ID, cwd string) (*store.Stored, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := b.Path(id, cwd)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	return b.load(id, p)
}

func (b *Backend) load(id session.ID, p string) (*store.Stored, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	sc, err := scanLog(data)
	if err != nil {
		var ce *store.CorruptError
		if errors.As(err, &ce) {
			ce.Path = p
		}
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	if sc.header.ID != id {
		return nil, fmt.Errorf("jsonl: %w", &store.CorruptError{Path: p, Line: 1, Seq: -1,
			Detail: fmt.Sprintf("header names session %q, expected %q", sc.header.ID, id)})
	}
	st := &store.Stored{Header: sc.header, Events: sc.events}
	if sc.committed < sc.size {
		st.Torn = sc.committed
	}
	// A locked session's later repair and appends must go to the file
	// that was read (the torn offset is an offset into it), even when the
	// same id also exists in another bucket.
	if h := b.held(id); h != nil {
		h.mu.Lock()
		if h.path == "" || h.path == p {
			h.path = p
			if st.Torn == nil {
				h.offs, h.offsFrom = linesOf(sc.offs, 0), 0
			}
		}
		h.mu.Unlock()
	}
	return st, nil
}

// pathFor returns the log path of a locked session: the file it was loaded
// from, else the file of its header's bucket, else wherever it is found.
func (b *Backend) pathFor(h *handle, hd session.Header) (string, error) {
	if p := b.pathOf(h); p != "" {
		return p, nil
	}
	p, err := b.Path(hd.ID, hd.Cwd)
	if err != nil {
		return "", err
	}
	if _, err := os.Lstat(p); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("jsonl: %w", err)
		}
		if p, err = b.find(hd.ID); err != nil {
			return "", err
		}
	}
	if p == "" {
		return "", fmt.Errorf("jsonl: the log of session %q is gone: %w", hd.ID, store.ErrNotFound)
	}
	b.setPath(h, p)
	return p, nil
}

// A handle's path is written by its owner and, once, by a load of the
// session (which a viewer may run concurrently): both under h.mu.
func (b *Backend) pathOf(h *handle) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.path
}

func (b *Backend) setPath(h *handle, p string) {
	h.mu.Lock()
	h.path = p
	h.mu.Unlock()
}

// AppendBatch implements [store.Backend].
func (b *Backend) AppendBatch(ctx context.Context, batch store.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	id := batch.Header.ID
	h, err := b.handle(id)
	if err != nil {
		return err
	}
	if !batch.Materialized {
		return b.materialize(h, batch)
	}
	p, err := b.pathFor(h, batch.Header)
	if err != nil {
		return err
	}
	if err := b.appendLines(h, p, batch.Events); err != nil {
		return err
	}
	b.idx.put(p, h.size, batch.Info)
	return nil
}

// writeChunk is about how much encoded log one write carries: a batch is
// encoded and written in pieces, so a step with a 10 MB tool call is not
// held a second time, whole, in an encoding buffer.
const writeChunk = 1 << 20

// writeEvents writes head (the header line, or nothing) and events to f,
// encoding them a piece at a time. n is how much was written when it fails.
//
// offs receives the offset (from f's position at the call) of each event's
// line.
func (b *Backend) writeEvents(f *os.File, head []byte, events []session.Event, offs []int64) (n int64, _ []int64, err error) {
	buf := append(make([]byte, 0, min(writeChunk, len(head)+256*len(events))), head...)
	for i, e := range events {
		offs = append(offs, n+int64(len(buf)))
		if buf, err = eventjson.AppendEvent(buf, e); err != nil {
			return n, offs, fmt.Errorf("jsonl: %w", err)
		}
		if len(buf) < writeChunk && i < len(events)-1 {
			continue
		}
		if err := b.write(f, buf); err != nil {
			return n, offs, err
		}
		n += int64(len(buf))
		buf = buf[:0]
	}
	if len(buf) > 0 { // a header with no events
		if err := b.write(f, buf); err != nil {
			return n, offs, err
		}
		n += int64(len(buf))
	}
	return n, offs, nil
}

func encodeEvents(buf []byte, events []session.Event) ([]byte, error) {
	for _, e := range events {
		var err error
		if buf, err = eventjson.AppendEvent(buf, e); err != nil {
			return nil, fmt.Errorf("jsonl: %w", err)
		}
	}
	return buf, nil
}

// materialize publishes a new log: header and first batch are written to a
// private temp file, synced, then linked into place. link(2) fails when the
// name exists, so an existing log is never clobbered.
func (b *Backend) materialize(h *handle, batch store.Batch) error {
	id := batch.Header.ID
	final, err := b.Path(id, batch.Header.Cwd)
	if err != nil {
		return err
	}
	refuse := fmt.Errorf("jsonl: refusing to materialize %q: a log already exists on disk (load/resume it instead): %w", id, store.ErrExists)
	if _, err := os.Lstat(final); err == nil {
		return refuse
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("jsonl: %w", err)
	}
	bucket := filepath.Dir(final)
	if err := b.ensureDir(bucket); err != nil {
		return fmt.Errorf("jsonl: %w", err)
	}
	tmp, err := private.CreateTemp(bucket, ".materialize-*.tmp")
	if err != nil {
		return fmt.Errorf("jsonl: %w", err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName) // best effort; the published name is a second link
	size, offs, err := b.writeEvents(tmp, appendHeader(make([]byte, 0, 256), batch.Header), batch.Events, nil)
	if err == nil {
		err = b.sync(tmp)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("jsonl: writing the first batch of %q: %w", id, err)
	}
	if err := os.Link(tmpName, final); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return refuse
		}
		return fmt.Errorf("jsonl: %w", err)
	}
	if err := b.syncDir(bucket); err != nil {
		// Not known durable: take it back so a retry starts clean.
		_ = os.Remove(final)
		return fmt.Errorf("jsonl: syncing %s: %w", bucket, err)
	}
	if h.f != nil {
		h.f.Close()
		h.f = nil
	}
	b.setPath(h, final)
	h.size, h.known = size, true
	h.mu.Lock()
	h.offs, h.offsFrom = linesOf(offs, 0), 0
	h.mu.Unlock()
	b.idx.put(final, h.size, batch.Info)
	return nil
}

// appendLines appends events at the committed end of the log and syncs; on
// any failure the file is truncated back so a retry cannot duplicate seqs.
func (b *Backend) appendLines(h *handle, p string, events []session.Event) error {
	if h.f == nil || b.pathOf(h) != p {
		if h.f != nil {
			h.f.Close()
		}
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			h.f = nil
			return fmt.Errorf("jsonl: %w", err)
		}
		h.f = f
		b.setPath(h, p)
	}
	f := h.f
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("jsonl: %w", err)
	}
	if !h.known {
		// First write since the lock was taken: everything there is
		// committed (a torn tail is repaired before anything is appended).
		h.size, h.known = fi.Size(), true
	} else if cur := fi.Size(); cur != h.size {
		if cur < h.size {
			return fmt.Errorf("jsonl: %s shrank from %d to %d bytes behind this process's back", p, h.size, cur)
		}
		// The leftover of a write whose rollback failed.
		if err := f.Truncate(h.size); err != nil {
			return fmt.Errorf("jsonl: cutting an earlier failed write from %s: %w", p, err)
		}
	}
	if _, err := f.Seek(h.size, io.SeekStart); err != nil {
		return fmt.Errorf("jsonl: %w", err)
	}
	n, offs, err := b.writeEvents(f, nil, events, nil)
	if err == nil {
		err = b.sync(f)
	}
	if err != nil {
		if terr := f.Truncate(h.size); terr == nil {
			_ = b.sync(f)
		}
		return fmt.Errorf("jsonl: appending to %s: %w", p, err)
	}
	h.mu.Lock()
	if h.offs != nil && len(events) > 0 && h.offsFrom+int64(h.offs.len()) == events[0].Seq {
		for _, o := range offs {
			h.offs.add(h.size + o)
		}
	} else {
		h.offs = nil // not contiguous with what is known: forget it
	}
	h.mu.Unlock()
	h.size += n
	return nil
}

// CommitRepair implements [store.Backend].
func (b *Backend) CommitRepair(ctx context.Context, r store.Repair) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	id := r.Header.ID
	h, err := b.handle(id)
	if err != nil {
		return err
	}
	p, err := b.pathFor(h, r.Header)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.offs = nil // a repair moves lines; ReadRange scans until offsets are known again
	h.mu.Unlock()
	if r.Torn != nil {
		at, ok := r.Torn.(int64)
		if !ok {
			return fmt.Errorf("jsonl: bad torn marker %T", r.Torn)
		}
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("jsonl: %w", err)
		}
		err = f.Truncate(at)
		if err == nil {
			err = b.sync(f)
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("jsonl: cutting the torn tail of %s: %w", p, err)
		}
		h.size, h.known = at, true
	}
	if len(r.Closers) > 0 {
		if err := b.appendLines(h, p, r.Closers); err != nil {
			return err
		}
	} else if !h.known {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("jsonl: %w", err)
		}
		h.size, h.known = fi.Size(), true
	}
	b.idx.put(p, h.size, r.Info)
	return nil
}
