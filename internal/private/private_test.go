package private

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func perm(t *testing.T, p string) fs.FileMode {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// Whatever the umask, what dsh creates is exactly 0600 or 0700: a wide
// umask cannot open it up and a narrow one cannot lock dsh out of it.
func TestCreatedModesIgnoreTheUmask(t *testing.T) {
	for _, mask := range []int{0, 0o022, 0o277} {
		old := syscall.Umask(mask)
		root := t.TempDir()
		dir := filepath.Join(root, "a", "b")
		if err := MkdirAll(dir); err != nil {
			t.Fatal(err)
		}
		f, err := OpenFile(filepath.Join(dir, "log"), os.O_CREATE|os.O_WRONLY)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		tmp, err := CreateTemp(dir, "x-*")
		if err != nil {
			t.Fatal(err)
		}
		tmp.Close()
		if err := WriteFile(filepath.Join(dir, "whole"), []byte("data")); err != nil {
			t.Fatal(err)
		}
		syscall.Umask(old)
		for _, p := range []string{filepath.Join(root, "a"), dir} {
			if m := perm(t, p); m != DirMode {
				t.Errorf("umask %04o: %s is %04o", mask, p, m)
			}
		}
		for _, p := range []string{filepath.Join(dir, "log"), tmp.Name(), filepath.Join(dir, "whole")} {
			if m := perm(t, p); m != FileMode {
				t.Errorf("umask %04o: %s is %04o", mask, p, m)
			}
		}
	}
}

// Opening an existing wide file narrows it; an owner execute bit stays.
func TestOpenFileTightensExisting(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o755)
	f, err := OpenFile(p, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if m := perm(t, p); m != 0o700 {
		t.Fatalf("mode %04o, want 0700", m)
	}
}

// Home tightens the home and its direct entries, reports each change, and
// leaves symbolic links (and what they point to) alone.
func TestHomeTightensTopLevel(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(outside, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(t.TempDir(), "home")
	os.Mkdir(home, 0o755)
	os.Chmod(home, 0o755)
	os.WriteFile(filepath.Join(home, "sessions.db"), nil, 0o644)
	os.Chmod(filepath.Join(home, "sessions.db"), 0o644)
	os.WriteFile(filepath.Join(home, "ok"), nil, 0o600)
	os.Mkdir(filepath.Join(home, "logs"), 0o755)
	os.Chmod(filepath.Join(home, "logs"), 0o755)
	os.Symlink(outside, filepath.Join(home, "link"))
	got := map[string][2]fs.FileMode{}
	if err := Home(home, func(p string, old, now fs.FileMode, err error) {
		if err != nil {
			t.Errorf("%s: %v", p, err)
		}
		got[p] = [2]fs.FileMode{old, now}
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]fs.FileMode{
		home:                               {0o755, 0o700},
		filepath.Join(home, "sessions.db"): {0o644, 0o600},
		filepath.Join(home, "logs"):        {0o755, 0o700},
	}
	if len(got) != len(want) {
		t.Fatalf("notes %v, want %v", got, want)
	}
	for p, w := range want {
		if got[p] != w || perm(t, p) != w[1] {
			t.Errorf("%s: noted %v, mode %04o; want %v", p, got[p], perm(t, p), w)
		}
	}
	if m := perm(t, outside); m != 0o644 {
		t.Errorf("the link's target was changed to %04o", m)
	}
	// A missing home is created private.
	fresh := filepath.Join(t.TempDir(), "x", "dsh")
	if err := Home(fresh, nil); err != nil || perm(t, fresh) != DirMode {
		t.Fatalf("fresh home: %v", err)
	}
}
