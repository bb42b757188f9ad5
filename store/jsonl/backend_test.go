package jsonl

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/session/invariants"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/internal/eventjson"
	"github.com/dshq/dsh/store/storetest"
)

type harness struct {
	t     *testing.T
	root  string
	b     *Backend
	c     *store.Coordinator
	st    *session.Live
	scope *kernel.Scope
	ctx   context.Context
}

func newHarness(t *testing.T, root string, opts Options) *harness {
	t.Helper()
	b, err := Open(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, root: root, b: b, st: session.NewLive(storetest.FixedClock()), scope: kernel.NewScope("test"), ctx: context.Background()}
	t.Cleanup(func() { _ = h.scope.Close() })
	if err := invariants.Install(h.scope, h.st); err != nil {
		t.Fatal(err)
	}
	h.c, err = store.Attach(h.scope.Child("store"), h.st, b, store.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) live(id session.ID, cwd string) *session.Session {
	h.t.Helper()
	s, err := h.st.Create(h.ctx, h.scope, id, session.Options{Header: session.Header{Cwd: cwd}})
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func (h *harness) apply(s *session.Session, ops []storetest.Op) {
	h.t.Helper()
	if err := storetest.Apply(h.ctx, s, ops); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) read(id session.ID) []session.Event {
	h.t.Helper()
	_, evs, err := h.c.Read(h.ctx, id)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := invariants.CheckLog(evs); err != nil {
		h.t.Fatal(err)
	}
	return evs
}

func size(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// fullDisk fails writes (after writing half) with ENOSPC while armed.
type fullDisk struct{ armed atomic.Bool }

func (d *fullDisk) write(f *os.File, p []byte) (int, error) {
	if !d.armed.Load() {
		return f.Write(p)
	}
	n, _ := f.Write(p[:len(p)/2])
	return n, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
}

func TestDiskFullOnAppendRollsBack(t *testing.T) {
	var disk fullDisk
	h := newHarness(t, t.TempDir(), Options{Hooks: Hooks{Write: disk.write}})
	s := h.live("full", "/w")
	h.apply(s, storetest.OneTurn(1, "one"))
	if err := h.st.FlushSession(h.ctx, s); err != nil {
		t.Fatal(err)
	}
	p := logPath(t, h.root, "full")
	before := size(t, p)
	disk.armed.Store(true)
	h.apply(s, storetest.OneTurn(2, "two"))
	err := h.st.FlushSession(h.ctx, s)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("flush: %v, want ENOSPC", err)
	}
	if got := size(t, p); got != before {
		t.Fatalf("log is %d bytes after a failed append, want %d (rolled back)", got, before)
	}
	if evs := h.read("full"); len(evs) != 6 {
		t.Fatalf("%d events stored", len(evs))
	}
	disk.armed.Store(false)
	h.apply(s, storetest.OneTurn(3, "three"))
	if err := h.st.FlushSession(h.ctx, s); err != nil {
		t.Fatal(err)
	}
	if evs := h.read("full"); len(evs) != 18 {
		t.Fatalf("%d events stored, want 18", len(evs))
	}
}

func TestSyncFailureRollsBack(t *testing.T) {
	var fail atomic.Bool
	sync := func(f *os.File) error {
		if fail.Load() {
			return &fs.PathError{Op: "fsync", Path: f.Name(), Err: syscall.EIO}
		}
		return f.Sync()
	}
	h := newHarness(t, t.TempDir(), Options{Hooks: Hooks{Sync: sync}})
	s := h.live("sync", "")
	h.apply(s, storetest.OneTurn(1, "one"))
	if err := h.st.FlushSession(h.ctx, s); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	h.apply(s, storetest.OneTurn(2, "two"))
	if err := h.st.FlushSession(h.ctx, s); !errors.Is(err, syscall.EIO) {
		t.Fatalf("flush: %v, want EIO", err)
	}
	if evs := h.read("sync"); len(evs) != 6 {
		t.Fatalf("%d events visible after a failed sync, want 6", len(evs))
	}
	fail.Store(false)
	if err := h.st.FlushSession(h.ctx, s); err != nil {
		t.Fatal(err)
	}
	if evs := h.read("sync"); len(evs) != 12 {
		t.Fatalf("%d events, want 12", len(evs))
	}
}

func TestDiskFullOnFirstWrite(t *testing.T) {
	var disk fullDisk
	disk.armed.Store(true)
	h := newHarness(t, t.TempDir(), Options{Hooks: Hooks{Write: disk.write}})
	s := h.live("first", "/w")
	h.apply(s, storetest.OneTurn(1, "one"))
	if err := h.st.FlushSession(h.ctx, s); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("flush: %v, want ENOSPC", err)
	}
	// Nothing published, no temp file left behind.
	var files []string
	filepath.WalkDir(h.root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasPrefix(p, filepath.Join(h.root, locksDir)) {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 0 {
		t.Fatalf("files after a failed first write: %v", files)
	}
	disk.armed.Store(false)
	if err := h.st.FlushSession(h.ctx, s); err != nil {
		t.Fatal(err)
	}
	if evs := h.read("first"); len(evs) != 6 {
		t.Fatalf("%d events", len(evs))
	}
}

func TestLeftoverAfterFailedRollbackIsCut(t *testing.T) {
	h := newHarness(t, t.TempDir(), Options{NoSync: true})
	s := h.live("left", "")
	h.apply(s, storetest.OneTurn(1, "one"))
	if err := h.st.FlushSession(h.ctx, s); err != nil {
		t.Fatal(err)
	}
	// As if a failed append could not be truncated back.
	appendFile(t, logPath(t, h.root, "left"), `{"type":"turn/start","seq":6,"time":1,"data":{"tu`)
	h.apply(s, storetest.OneTurn(2, "two"))
	if err := h.st.FlushSession(h.ctx, s); err != nil {
		t.Fatal(err)
	}
	if evs := h.read("left"); len(evs) != 12 {
		t.Fatalf("%d events", len(evs))
	}
}

func TestShrunkLogIsAnError(t *testing.T) {
	h := newHarness(t, t.TempDir(), Options{NoSync: true})
	s := h.live("shrunk", "")
	h.apply(s, storetest.OneTurn(1, "one"))
	if err := h.st.FlushSession(h.ctx, s); err != nil {
		t.Fatal(err)
	}
	p := logPath(t, h.root, "shrunk")
	if err := os.Truncate(p, size(t, p)-10); err != nil {
		t.Fatal(err)
	}
	h.apply(s, storetest.OneTurn(2, "two"))
	if err := h.st.FlushSession(h.ctx, s); err == nil || !strings.Contains(err.Error(), "shrank") {
		t.Fatalf("flush: %v", err)
	}
}

func TestLayout(t *testing.T) {
	root := t.TempDir()
	h := newHarness(t, root, Options{})
	ids := []session.ID{"../../escape", "/etc/passwd", "a/b", "..", "dir\\x"}
	for i, id := range ids {
		cwd := ""
		if i%2 == 1 {
			cwd = "/some/project"
		}
		s := h.live(id, cwd)
		h.apply(s, storetest.OneTurn(1, "x"))
		if err := h.st.FlushSession(h.ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.scope.Close(); err != nil {
		t.Fatal(err)
	}
	var logs int
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, _ := d.Info()
		switch {
		case p == root:
		case d.IsDir():
			if info.Mode().Perm() != 0o700 {
				t.Errorf("dir %s has mode %v", rel, info.Mode().Perm())
			}
			if rel != locksDir && rel != noCwdBucket && rel != BucketName("/some/project") {
				t.Errorf("unexpected directory %s", rel)
			}
		case rel == indexFile:
		case strings.HasSuffix(rel, ".tmp"):
			t.Errorf("temp file left: %s", rel)
		case strings.HasPrefix(rel, locksDir):
			t.Errorf("lock file left after close: %s", rel)
		default:
			logs++
			if info.Mode().Perm() != 0o600 {
				t.Errorf("file %s has mode %v", rel, info.Mode().Perm())
			}
			if strings.Count(rel, string(filepath.Separator)) != 1 {
				t.Errorf("log %s is not directly in a bucket", rel)
			}
			data, _ := os.ReadFile(p)
			if !bytes.HasPrefix(data, []byte(`{"type":"session","version":0,"id":`)) {
				t.Errorf("log %s starts %q", rel, data[:40])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if logs != len(ids) {
		t.Fatalf("%d logs, want %d", logs, len(ids))
	}
}

func TestCorruptionMessages(t *testing.T) {
	hdr := `{"type":"session","version":0,"id":"c","createdAt":1}` + "\n"
	evs := storetest.Build(0, append(storetest.OneTurn(1, "one"), storetest.OneTurn(2, "two")...))
	var lines []string
	for _, e := range evs {
		b, _ := appendEventLine(e)
		lines = append(lines, b)
	}
	join := func(ls ...string) []byte { return []byte(strings.Join(ls, "")) }
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty or header-less session log"},
		{"no newline", []byte(hdr[:20]), "empty or header-less session log"},
		{"header not JSON", join("{oops\n", lines[0]), "header line is not valid JSON"},
		{"not a header", join(lines[0], lines[1]), "first line is not a session header"},
		{"garbage line 2", join(hdr, "garbage\n", strings.Join(lines[1:], "")), "unparsable committed event at line 2"},
		{"garbage line 5", join(hdr, strings.Join(lines[:3], ""), "{\"type\":\n", strings.Join(lines[4:], "")), "unparsable committed event at line 5"},
		{"seq gap", join(hdr, strings.Join(lines[:3], ""), strings.Join(lines[4:], "")), "seq gap in committed region at line 5 (expected 3, got 4)"},
	}
	for _, c := range cases {
		_, err := scanLog(c.data)
		if err == nil || !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// Damage after the last turn/end is a torn tail, not corruption.
	sc, err := scanLog(join(hdr, strings.Join(lines, ""), "garbage\n", lines[0]))
	if err != nil || len(sc.events) != 12 || sc.committed != int64(len(hdr)+len(strings.Join(lines, ""))) {
		t.Fatalf("torn tail: %v %d", err, len(sc.events))
	}
}

func appendEventLine(e session.Event) (string, error) {
	b, err := eventjson.AppendEvent(nil, e)
	return string(b), err
}

// TestRepairWritesTheFileItRead: when one id has logs in two buckets (logs
// copied by hand, an older build), a repair computed from the file a load
// read is applied to that file, never to the other one.
func TestRepairWritesTheFileItRead(t *testing.T) {
	root := t.TempDir()
	other := filepath.Join(root, BucketName(""), "dup"+logExt)
	mine := filepath.Join(root, BucketName("/a"), "dup"+logExt)
	write := func(p string, h session.Header, evs []session.Event, tail string) {
		t.Helper()
		buf := appendHeader(nil, h)
		buf, err := encodeEvents(buf, evs)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, append(buf, tail...), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	three := storetest.Build(0, append(append(storetest.OneTurn(1, "a"), storetest.OneTurn(2, "b")...), storetest.OneTurn(3, "c")...))
	write(other, session.Header{ID: "dup", Version: session.FormatVersion, CreatedAt: 1}, three, "")
	open := storetest.Build(0, append(storetest.OneTurn(1, "x"), storetest.TurnStart(2), storetest.User("y")))
	write(mine, session.Header{ID: "dup", Version: session.FormatVersion, CreatedAt: 1, Cwd: "/a"}, open, `{"type":"step/sta`)
	before, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}

	b, err := Open(root, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	if err := b.Lock(ctx, "dup"); err != nil {
		t.Fatal(err)
	}
	st, err := b.LoadLive(ctx, "dup", "/a")
	if err != nil || st == nil || st.Torn == nil {
		t.Fatalf("load: %+v %v", st, err)
	}
	closers, err := session.InterruptedClosers(st.Events)
	if err != nil || len(closers) == 0 {
		t.Fatalf("closers %v, %v", closers, err)
	}
	if err := b.CommitRepair(ctx, store.Repair{Header: st.Header, Torn: st.Torn, Closers: closers,
		Info: store.NewInfo(st.Header, append(st.Events, closers...))}); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(other); !bytes.Equal(before, after) {
		t.Fatalf("the other bucket's log changed: %d → %d bytes", len(before), len(after))
	}
	st2, err := b.LoadLive(ctx, "dup", "/a")
	if err != nil || st2.Torn != nil || len(st2.Events) != len(open)+len(closers) {
		t.Fatalf("repaired log: %d events, torn %v, %v", len(st2.Events), st2.Torn, err)
	}
	if err := invariants.CheckLog(st2.Events); err != nil {
		t.Fatal(err)
	}
}
