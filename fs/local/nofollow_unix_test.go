//go:build unix

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dshq/dsh/fs"
)

// A directory of a resolved Key turned into a symbolic link after Resolve:
// the write, the edit and the read fail instead of following it, and
// nothing lands where the link points.
func TestSwappedDirectoryIsNotFollowed(t *testing.T) {
	p, dir := newProvider(t, Options{})
	ctx := context.Background()
	must(t, os.MkdirAll(filepath.Join(dir, "ok"), 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "denied"), 0o755))
	writeFile(t, filepath.Join(dir, "ok", "f"), "old\n", 0o644)
	writeFile(t, filepath.Join(dir, "denied", "f"), "secret\n", 0o644)
	tg := resolve(t, p, dir, "ok/f")
	newTg := resolve(t, p, dir, "ok/new")

	must(t, os.Rename(filepath.Join(dir, "ok"), filepath.Join(dir, "ok.moved")))
	must(t, os.Symlink(filepath.Join(dir, "denied"), filepath.Join(dir, "ok")))

	for name, op := range map[string]func() error{
		"write":  func() error { _, err := p.Write(ctx, tg, "pwned\n", nil); return err },
		"create": func() error { _, err := p.Write(ctx, newTg, "pwned\n", nil); return err },
		"edit":   func() error { _, err := p.Edit(ctx, tg, fs.Edit{Old: "secret", New: "pwned"}, nil); return err },
		"read": func() error {
			w, err := p.ReadLines(ctx, tg, fs.ReadRequest{})
			if err == nil && len(w.Lines) > 0 {
				return fmt.Errorf("read %q through the swapped link", w.Lines[0].Text)
			}
			return err
		},
	} {
		err := op()
		if err == nil || !errors.Is(err, errLinkSwap) {
			t.Errorf("%s through a directory swapped for a link: err = %v, want errLinkSwap", name, err)
		}
	}
	if got := readFile(t, filepath.Join(dir, "denied", "f")); got != "secret\n" {
		t.Errorf("the file behind the link changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "denied", "new")); err == nil {
		t.Error("a file was created behind the link")
	}
	noLitter(t, filepath.Join(dir, "denied"))
}

// The file itself turned into a symbolic link after Resolve: the write
// refuses it (and so does the read) rather than writing or reading its
// target.
func TestSwappedFileIsNotFollowed(t *testing.T) {
	p, dir := newProvider(t, Options{})
	ctx := context.Background()
	writeFile(t, filepath.Join(dir, "f"), "mine\n", 0o644)
	writeFile(t, filepath.Join(dir, "secret"), "secret\n", 0o644)
	tg := resolve(t, p, dir, "f")
	must(t, os.Remove(filepath.Join(dir, "f")))
	must(t, os.Symlink(filepath.Join(dir, "secret"), filepath.Join(dir, "f")))
	if _, err := p.Write(ctx, tg, "pwned\n", nil); err == nil {
		t.Error("wrote through a file swapped for a link")
	}
	if _, err := p.Edit(ctx, tg, fs.Edit{Old: "secret", New: "pwned"}, nil); err == nil {
		t.Error("edited through a file swapped for a link")
	}
	if w, err := p.ReadLines(ctx, tg, fs.ReadRequest{}); err == nil {
		t.Errorf("read through a file swapped for a link: %+v", w.Lines)
	}
	if got := readFile(t, filepath.Join(dir, "secret")); got != "secret\n" {
		t.Errorf("the link's target changed: %q", got)
	}
}

// A read reports the identity of the file it read, links counted.
func TestReadReportsIdentity(t *testing.T) {
	p, dir := newProvider(t, Options{})
	writeFile(t, filepath.Join(dir, "f"), "x\n", 0o644)
	must(t, os.Link(filepath.Join(dir, "f"), filepath.Join(dir, "g")))
	w, err := p.ReadLines(context.Background(), resolve(t, p, dir, "g"), fs.ReadRequest{})
	must(t, err)
	info, err := p.Stat(context.Background(), resolve(t, p, dir, "f"))
	must(t, err)
	if w.ID.Links != 2 || w.ID.Inode == 0 || w.ID != info.ID {
		t.Errorf("window ID %+v, stat ID %+v", w.ID, info.ID)
	}
}
