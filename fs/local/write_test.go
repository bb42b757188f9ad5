package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dshq/dsh/fs"
)

func mode(t *testing.T, name string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(name)
	must(t, err)
	return fi.Mode().Perm()
}

// noLitter fails if a temporary file was left behind in dir.
func noLitter(t *testing.T, dir string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	must(t, err)
	for _, e := range es {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Fatalf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestWriteCreates(t *testing.T) {
	p, dir := newProvider(t, Options{})
	ctx := context.Background()
	tg := resolve(t, p, dir, "a/b/new.txt")
	var sawAbsent bool
	res, err := p.Write(ctx, tg, "line one\r\nline two\n", func(cur *fs.Version) error {
		sawAbsent = cur == nil
		return nil
	})
	must(t, err)
	name := filepath.Join(dir, "a", "b", "new.txt")
	if got := readFile(t, name); got != "line one\r\nline two\n" {
		t.Fatalf("content = %q (written content must be exact)", got)
	}
	if !sawAbsent || !res.Created || res.Before != nil || res.After != "line one\nline two\n" {
		t.Fatalf("result = %+v, precondition saw absent: %v", res, sawAbsent)
	}
	if m := mode(t, name); m != 0o644 {
		t.Fatalf("new file mode = %o, want 644", m)
	}
	if res.Version != statVersion(t, p, tg) {
		t.Fatal("result version differs from the file's")
	}
	noLitter(t, filepath.Dir(name))

	p2, err := New(Options{Cwd: dir, NewFileMode: 0o600})
	must(t, err)
	_, err = p2.Write(ctx, resolve(t, p2, dir, "private"), "s", nil)
	must(t, err)
	if m := mode(t, filepath.Join(dir, "private")); m != 0o600 {
		t.Fatalf("configured mode = %o, want 600", m)
	}
}

func TestWriteOverwriteKeepsPermissions(t *testing.T) {
	p, dir := newProvider(t, Options{})
	ctx := context.Background()
	for _, m := range []os.FileMode{0o755, 0o640, 0o600} {
		name := filepath.Join(dir, "f"+m.String())
		writeFile(t, name, "a\r\nb\r\nc\r\n", m)
		res, err := p.Write(ctx, resolve(t, p, dir, name), "a\r\nB\r\nc\r\n", nil)
		must(t, err)
		if got := mode(t, name); got != m {
			t.Fatalf("mode after overwrite = %o, want %o", got, m)
		}
		if res.Created || res.Before == nil || *res.Before != "a\nb\nc\n" || res.After != "a\nB\nc\n" {
			t.Fatalf("result = %+v", res)
		}
	}
	noLitter(t, dir)
}

func TestWriteBeforeImage(t *testing.T) {
	p, dir := newProvider(t, Options{MaxFileSize: 64})
	ctx := context.Background()
	for name, content := range map[string]string{
		"binary":  "\x00\x01\x02",
		"latin1":  "caf\xe9",
		"toolong": strings.Repeat("x", 65),
	} {
		writeFile(t, filepath.Join(dir, name), content, 0o644)
		res, err := p.Write(ctx, resolve(t, p, dir, name), "text\n", nil)
		must(t, err)
		if res.Created || res.Before != nil {
			t.Fatalf("%s: created=%v before=%v; want an update without a diff basis", name, res.Created, res.Before)
		}
		if got := readFile(t, filepath.Join(dir, name)); got != "text\n" {
			t.Fatalf("%s: content = %q", name, got)
		}
	}
	writeFile(t, filepath.Join(dir, "bom"), "\ufeffold\n", 0o644)
	res, err := p.Write(ctx, resolve(t, p, dir, "bom"), "new\n", nil)
	must(t, err)
	if *res.Before != "old\n" {
		t.Fatalf("before = %q, want the BOM stripped", *res.Before)
	}
	_, err = p.Write(ctx, resolve(t, p, dir, "big"), strings.Repeat("x", 65), nil)
	wantCode(t, err, fs.CodeTooLarge)
}

func TestWriteThroughSymlinkKeepsLink(t *testing.T) {
	p, dir := newProvider(t, Options{})
	target := filepath.Join(dir, "real.txt")
	writeFile(t, target, "old", 0o644)
	link := filepath.Join(dir, "link.txt")
	must(t, os.Symlink(target, link))
	_, err := p.Write(context.Background(), resolve(t, p, dir, "link.txt"), "new", nil)
	must(t, err)
	fi, err := os.Lstat(link)
	must(t, err)
	if fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced by a file")
	}
	if got := readFile(t, target); got != "new" {
		t.Fatalf("target = %q", got)
	}
}

func TestWriteRefusals(t *testing.T) {
	p, dir := newProvider(t, Options{})
	ctx := context.Background()
	must(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
	_, err := p.Write(ctx, resolve(t, p, dir, "d"), "x", nil)
	if fe := wantCode(t, err, fs.CodeNotRegularFile); !strings.Contains(fe.Message, "is a directory") {
		t.Fatalf("message = %q", fe.Message)
	}

	name := filepath.Join(dir, "f")
	writeFile(t, name, "keep", 0o644)
	tg := resolve(t, p, dir, "f")
	want := statVersion(t, p, tg)
	veto := errors.New("veto")
	_, err = p.Write(ctx, tg, "clobber", func(cur *fs.Version) error {
		if cur == nil || *cur != want {
			t.Errorf("precondition saw %v, want %v", cur, want)
		}
		return veto
	})
	if err != veto {
		t.Fatalf("precondition error not returned unchanged: %v", err)
	}
	if got := readFile(t, name); got != "keep" {
		t.Fatalf("vetoed write changed the file: %q", got)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = p.Write(cctx, resolve(t, p, dir, "never"), "x", nil)
	wantCode(t, err, fs.CodeAborted)
	if _, err := os.Stat(filepath.Join(dir, "never")); !os.IsNotExist(err) {
		t.Fatal("aborted write created the file")
	}
	// A parent that became a file after Resolve.
	child := filepath.Join(dir, "f", "child")
	_, err = p.Write(ctx, fs.Target{Key: child, Path: child}, "x", nil)
	wantCode(t, err, fs.CodeNotFound)
	noLitter(t, dir)
	if n := p.locks.size(); n != 0 {
		t.Fatalf("%d lock entries left", n)
	}
}

// TestConcurrentGuardedWrites: writers that all expect the same version are
// serialized by the per-file lock, so exactly one of them wins.
func TestConcurrentGuardedWrites(t *testing.T) {
	p, dir := newProvider(t, Options{})
	writeFile(t, filepath.Join(dir, "f"), "base", 0o644)
	tg := resolve(t, p, dir, "f")
	seen := statVersion(t, p, tg)
	stale := errors.New("stale")
	check := func(cur *fs.Version) error {
		if cur == nil || *cur != seen {
			return stale
		}
		return nil
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = p.Write(context.Background(), tg, strings.Repeat("w", i+10), check)
		})
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch err {
		case nil:
			wins++
		case stale:
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d writers won, want exactly 1", wins)
	}
}
