//go:build unix

package local

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/dshq/dsh/fs"
)

func statT(t *testing.T, name string) *syscall.Stat_t {
	t.Helper()
	fi, err := os.Stat(name)
	must(t, err)
	return fi.Sys().(*syscall.Stat_t)
}

// A file the user made read-only is refused by write and edit and left
// alone: replacing by rename needs only directory write permission. As an
// ordinary user access(2) decides; root passes access(2), so for root a file
// without any write bit is what is refused.
func TestWriteEditRefuseReadOnlyFile(t *testing.T) {
	p, dir := newProvider(t, Options{})
	ctx := context.Background()
	name := filepath.Join(dir, "ro.txt")
	writeFile(t, name, "keep\n", 0o444)
	before := statT(t, name).Ino
	tg := resolve(t, p, dir, "ro.txt")

	_, err := p.Write(ctx, tg, "clobber\n", nil)
	wantCode(t, err, fs.CodePermission)
	_, err = p.Edit(ctx, tg, fs.Edit{Old: "keep", New: "clobber"}, nil)
	wantCode(t, err, fs.CodePermission)

	if got := readFile(t, name); got != "keep\n" {
		t.Fatalf("read-only file changed: %q", got)
	}
	if statT(t, name).Ino != before || mode(t, name) != 0o444 {
		t.Fatal("read-only file was replaced")
	}
	noLitter(t, dir)

	// Writable again: allowed.
	must(t, os.Chmod(name, 0o644))
	_, err = p.Edit(ctx, tg, fs.Edit{Old: "keep", New: "changed"}, nil)
	must(t, err)
}

// As root, a replacement keeps the user's owner and group (and set-id bits,
// which chown would clear): editing in a container must not turn the
// user's files into root:root.
func TestWriteEditKeepOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files another owner")
	}
	p, dir := newProvider(t, Options{})
	ctx := context.Background()
	name := filepath.Join(dir, "user.sh")
	writeFile(t, name, "echo hi\n", 0o755)
	must(t, os.Chown(name, 4321, 8765))
	must(t, os.Chmod(name, 0o755|os.ModeSetgid))
	tg := resolve(t, p, dir, "user.sh")

	check := func(what string) {
		t.Helper()
		st := statT(t, name)
		if st.Uid != 4321 || st.Gid != 8765 {
			t.Fatalf("after %s: owner %d:%d, want 4321:8765", what, st.Uid, st.Gid)
		}
		fi, err := os.Stat(name)
		must(t, err)
		if fi.Mode()&(os.ModePerm|os.ModeSetgid) != 0o755|os.ModeSetgid {
			t.Fatalf("after %s: mode %v", what, fi.Mode())
		}
	}
	_, err := p.Write(ctx, tg, "echo there\n", nil)
	must(t, err)
	check("write")
	_, err = p.Edit(ctx, tg, fs.Edit{Old: "there", New: "again"}, nil)
	must(t, err)
	check("edit")
	if got := readFile(t, name); got != "echo again\n" {
		t.Fatalf("content %q", got)
	}
	noLitter(t, dir)
}

// A file with several hard links is rewritten in place: every name sees the
// new content and the links stay one file.
func TestWriteEditKeepHardLinks(t *testing.T) {
	p, dir := newProvider(t, Options{})
	ctx := context.Background()
	name := filepath.Join(dir, "a.txt")
	other := filepath.Join(dir, "b.txt")
	writeFile(t, name, "one two three\n", 0o640)
	must(t, os.Link(name, other))
	ino := statT(t, name).Ino
	tg := resolve(t, p, dir, "a.txt")

	res, err := p.Write(ctx, tg, "alpha beta gamma delta\n", nil)
	must(t, err)
	if got := readFile(t, other); got != "alpha beta gamma delta\n" {
		t.Fatalf("other link after write: %q", got)
	}
	if res.Version != statVersion(t, p, tg) {
		t.Fatal("write result version differs from the file's")
	}
	eres, err := p.Edit(ctx, tg, fs.Edit{Old: "beta gamma delta", New: "b"}, nil)
	must(t, err)
	if got := readFile(t, other); got != "alpha b\n" { // shorter: truncated
		t.Fatalf("other link after edit: %q", got)
	}
	if eres.Version != statVersion(t, p, tg) {
		t.Fatal("edit result version differs from the file's")
	}
	st := statT(t, name)
	if st.Ino != ino || st.Nlink != 2 || statT(t, other).Ino != ino {
		t.Fatalf("hard link broken: inode %d→%d, nlink %d", ino, st.Ino, st.Nlink)
	}
	if m := mode(t, name); m != 0o640 {
		t.Fatalf("mode %o", m)
	}
	noLitter(t, dir)
}

// A relative dangling symlink reached through a symlinked directory: the
// kernel resolves its ".." from the link's physical directory, and so must
// the Key, or Write creates a different file than the path names.
func TestWriteDanglingRelativeLinkThroughSymlinkedDir(t *testing.T) {
	p, dir := newProvider(t, Options{})
	deep := filepath.Join(dir, "other", "deep")
	must(t, os.MkdirAll(deep, 0o755))
	must(t, os.Symlink(deep, filepath.Join(dir, "d")))
	must(t, os.Symlink("../x", filepath.Join(deep, "l")))
	tg := resolve(t, p, dir, "d/l")
	if want := filepath.Join(dir, "other", "x"); tg.Key != want {
		t.Fatalf("Key = %q, want %q", tg.Key, want)
	}
	_, err := p.Write(context.Background(), tg, "x", nil)
	must(t, err)
	if got := readFile(t, filepath.Join(dir, "other", "x")); got != "x" {
		t.Fatalf("other/x = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Fatalf("the write created dir/x: %v", err)
	}
}
