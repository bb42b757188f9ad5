package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshq/dsh/fs"
)

// newProvider returns a provider whose default cwd is a fresh temp dir.
// The dir is symlink-resolved so Keys and Paths can be compared directly
// (macOS's /var → /private/var would differ otherwise).
func newProvider(t *testing.T, opts Options) (*Provider, string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if opts.Cwd == "" {
		opts.Cwd = dir
	}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p, dir
}

func resolve(t *testing.T, p *Provider, cwd, path string) fs.Target {
	t.Helper()
	tg, err := p.Resolve(context.Background(), cwd, path)
	if err != nil {
		t.Fatalf("Resolve(%q, %q): %v", cwd, path, err)
	}
	return tg
}

func wantCode(t *testing.T, err error, code string) *fs.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("want %s error, got nil", code)
	}
	var fe *fs.Error
	if !errors.As(err, &fe) {
		t.Fatalf("want *fs.Error %s, got %T: %v", code, err, err)
	}
	if fe.Code != code {
		t.Fatalf("want code %s, got %s: %v", code, fe.Code, err)
	}
	return fe
}

func writeFile(t *testing.T, name, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, mode); err != nil { // umask-proof
		t.Fatal(err)
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestResolve(t *testing.T) {
	p, dir := newProvider(t, Options{})
	ctx := context.Background()
	writeFile(t, filepath.Join(dir, "real", "f.txt"), "x", 0o644)
	writeFile(t, filepath.Join(dir, "plain"), "x", 0o644)
	must(t, os.MkdirAll(filepath.Join(dir, "other", "sub"), 0o755))
	must(t, os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link")))
	must(t, os.Symlink(filepath.Join(dir, "other", "sub"), filepath.Join(dir, "real", "tosub")))
	must(t, os.Symlink("nowhere/target.txt", filepath.Join(dir, "dangling")))

	cases := []struct {
		name, cwd, path string
		wantPath        string
		wantKey         string
	}{
		{"relative", dir, "real/f.txt", dir + "/real/f.txt", dir + "/real/f.txt"},
		{"dotdot is lexical", dir + "/real", "../real/./f.txt", dir + "/real/f.txt", dir + "/real/f.txt"},
		// link/tosub/.. is "link" lexically, although the OS would take
		// tosub's parent to be other/.
		{"dotdot before symlink resolution", dir, "real/tosub/../f.txt", dir + "/real/f.txt", dir + "/real/f.txt"},
		{"absolute ignores cwd", "/nonexistent", dir + "/real/f.txt", dir + "/real/f.txt", dir + "/real/f.txt"},
		{"empty cwd uses default", "", "plain", dir + "/plain", dir + "/plain"},
		{"symlinked dir shares key", dir, "link/f.txt", dir + "/link/f.txt", dir + "/real/f.txt"},
		{"missing file under symlink", dir, "link/new/deeper.txt", dir + "/link/new/deeper.txt", dir + "/real/new/deeper.txt"},
		{"dangling symlink keys its target", dir, "dangling", dir + "/dangling", dir + "/nowhere/target.txt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tg := resolve(t, p, c.cwd, c.path)
			if tg.Path != c.wantPath || tg.Key != c.wantKey {
				t.Fatalf("got {Key:%s Path:%s}, want {Key:%s Path:%s}", tg.Key, tg.Path, c.wantKey, c.wantPath)
			}
		})
	}

	_, err := p.Resolve(ctx, dir, "   ")
	wantCode(t, err, fs.CodeNotFound)
	_, err = p.Resolve(ctx, dir, "plain/child.txt")
	if fe := wantCode(t, err, fs.CodeNotFound); !strings.Contains(fe.Message, "parent path segment is not a directory") {
		t.Fatalf("message = %q", fe.Message)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = p.Resolve(cctx, dir, "plain")
	wantCode(t, err, fs.CodeAborted)
}

func TestResolveRoots(t *testing.T) {
	outside := t.TempDir()
	_, dir := newProvider(t, Options{})
	p2, err := New(Options{Cwd: dir, Roots: []string{dir}})
	must(t, err)
	must(t, os.Symlink(outside, filepath.Join(dir, "escape")))
	ctx := context.Background()
	if _, err := p2.Resolve(ctx, dir, "inside/new.txt"); err != nil {
		t.Fatalf("inside: %v", err)
	}
	if _, err := p2.Resolve(ctx, dir, "."); err != nil {
		t.Fatalf("root itself: %v", err)
	}
	_, err = p2.Resolve(ctx, dir, "../x")
	wantCode(t, err, fs.CodeOutsideRoots)
	_, err = p2.Resolve(ctx, dir, "escape/x") // lexically inside, really outside
	wantCode(t, err, fs.CodeOutsideRoots)
	if _, err := New(Options{Roots: []string{filepath.Join(dir, "missing")}}); err == nil {
		t.Fatal("New accepted a missing root")
	}
}

func TestStat(t *testing.T) {
	p, dir := newProvider(t, Options{})
	ctx := context.Background()
	writeFile(t, filepath.Join(dir, "f"), "hello", 0o640)
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))

	info, err := p.Stat(ctx, resolve(t, p, dir, "f"))
	must(t, err)
	if info.Type != fs.TypeFile || info.Size != 5 || info.Mode != 0o640 || info.Version.IsZero() {
		t.Fatalf("file info = %+v", info)
	}
	info, err = p.Stat(ctx, resolve(t, p, dir, "."))
	must(t, err)
	if info.Type != fs.TypeDir {
		t.Fatalf("dir type = %v", info.Type)
	}
	info, err = p.Stat(ctx, resolve(t, p, dir, "fifo"))
	must(t, err)
	if info.Type != fs.TypeOther {
		t.Fatalf("fifo type = %v", info.Type)
	}
	info, err = p.Stat(ctx, resolve(t, p, dir, "absent"))
	if info != nil || err != nil {
		t.Fatalf("absent: %+v, %v", info, err)
	}
}

func TestVersionChangesOnRewrite(t *testing.T) {
	p, dir := newProvider(t, Options{})
	name := filepath.Join(dir, "f")
	writeFile(t, name, "one", 0o644)
	tg := resolve(t, p, dir, "f")
	v1 := statVersion(t, p, tg)
	if v2 := statVersion(t, p, tg); v1 != v2 {
		t.Fatalf("version unstable: %v vs %v", v1, v2)
	}
	// Same size, explicitly different mtime: caught.
	writeFile(t, name, "two", 0o644)
	must(t, os.Chtimes(name, time.Now(), time.Unix(1_000_000, 0)))
	if v := statVersion(t, p, tg); v == v1 {
		t.Fatal("same-size rewrite not detected")
	}
	// Same size and mtime, replaced by rename: the inode tells.
	v3 := statVersion(t, p, tg)
	tmp := filepath.Join(dir, "f.new")
	writeFile(t, tmp, "thr", 0o644)
	must(t, os.Chtimes(tmp, time.Now(), time.Unix(1_000_000, 0)))
	must(t, os.Rename(tmp, name))
	if v := statVersion(t, p, tg); v == v3 {
		t.Fatal("replacement by rename not detected")
	}
}

func statVersion(t *testing.T, p *Provider, tg fs.Target) fs.Version {
	t.Helper()
	info, err := p.Stat(context.Background(), tg)
	must(t, err)
	if info == nil {
		t.Fatal("file missing")
	}
	return info.Version
}

func TestList(t *testing.T) {
	p, dir := newProvider(t, Options{})
	ctx := context.Background()
	writeFile(t, filepath.Join(dir, "d", "zeta.md"), "z", 0o644)
	writeFile(t, filepath.Join(dir, "d", "alpha.md"), "hello", 0o644)
	must(t, os.Mkdir(filepath.Join(dir, "d", "dir-skill"), 0o755))
	must(t, os.Symlink(filepath.Join(dir, "missing"), filepath.Join(dir, "d", "broken-link")))
	must(t, os.Symlink(filepath.Join(dir, "d", "alpha.md"), filepath.Join(dir, "d", "good-link")))

	es, err := p.List(ctx, resolve(t, p, dir, "d"))
	must(t, err)
	var got []string
	for _, e := range es {
		got = append(got, e.Name+":"+e.Type.String())
	}
	want := "alpha.md:file broken-link:other dir-skill:directory good-link:file zeta.md:file"
	if strings.Join(got, " ") != want {
		t.Fatalf("entries = %v, want %s", got, want)
	}
	alpha, broken, sub, good := es[0], es[1], es[2], es[3]
	if alpha.Size != 5 || alpha.Version.IsZero() || alpha.Target.Path != dir+"/d/alpha.md" {
		t.Fatalf("alpha = %+v", alpha)
	}
	if !broken.Version.IsZero() || broken.Size != 0 {
		t.Fatalf("broken link has metadata: %+v", broken)
	}
	if sub.Size != 0 {
		t.Fatalf("directory has a size: %+v", sub)
	}
	if good.Target.Key != alpha.Target.Key || good.Target.Path != dir+"/d/good-link" {
		t.Fatalf("symlinked child target = %+v", good.Target)
	}
	_, err = p.List(ctx, resolve(t, p, dir, "nope"))
	wantCode(t, err, fs.CodeNotFound)
	_, err = p.List(ctx, resolve(t, p, dir, "d/alpha.md"))
	wantCode(t, err, fs.CodeNotDirectory)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = p.List(cctx, resolve(t, p, dir, "d"))
	wantCode(t, err, fs.CodeAborted)
}

func TestSizeString(t *testing.T) {
	for n, want := range map[int64]string{
		5: "5 bytes", 1024: "1 KiB", 16 << 20: "16 MiB", 2 << 30: "2 GiB", 1536: "1.5 KiB",
	} {
		if got := sizeString(n); got != want {
			t.Errorf("sizeString(%d) = %q, want %q", n, got, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
