package fs_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/dshq/dsh/fs"
)

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func tempDir(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("symlink layout test is for unix")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// A relative dangling symlink reached through a symlinked directory: its
// ".." applies to the directory the link physically lives in (as the kernel
// resolves it), not to the spelled path.
func TestRealPathDanglingRelativeThroughSymlinkedDir(t *testing.T) {
	dir := tempDir(t)
	deep := filepath.Join(dir, "other", "deep")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, deep, filepath.Join(dir, "d"))    // dir/d → dir/other/deep
	symlink(t, "../x", filepath.Join(deep, "l")) // deep/l → ../x (dangling)
	got, err := fs.RealPath(filepath.Join(dir, "d", "l"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "other", "x"); got != want {
		t.Fatalf("RealPath(d/l) = %q, want %q", got, want)
	}
	// The kernel agrees: creating through the link makes other/x.
	if err := os.WriteFile(filepath.Join(dir, "d", "l"), []byte("k"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "other", "x")); err != nil {
		t.Fatalf("kernel did not create other/x: %v", err)
	}
}

// A dangling target whose ".." follows a symlinked component of the target
// itself: "s/../y" with s → other/deep names other/y.
func TestRealPathDanglingTargetDotDotAfterSymlink(t *testing.T) {
	dir := tempDir(t)
	deep := filepath.Join(dir, "other", "deep")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, deep, filepath.Join(dir, "s"))
	symlink(t, "s/../y", filepath.Join(dir, "l"))
	got, err := fs.RealPath(filepath.Join(dir, "l"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "other", "y"); got != want {
		t.Fatalf("RealPath(l) = %q, want %q", got, want)
	}
	symlink(t, dir+"/s/../z", filepath.Join(dir, "abs")) // Join would clean the ".."
	got, err = fs.RealPath(filepath.Join(dir, "abs"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "other", "z"); got != want {
		t.Fatalf("RealPath(abs) = %q, want %q", got, want)
	}
}

func TestRealPathBasics(t *testing.T) {
	dir := tempDir(t)
	if err := os.MkdirAll(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "real", filepath.Join(dir, "ln"))
	symlink(t, "nowhere", filepath.Join(dir, "dangling"))
	symlink(t, "loop", filepath.Join(dir, "loop"))
	for in, want := range map[string]string{
		"ln/new/file.txt": "real/new/file.txt",
		"dangling":        "nowhere",
		"missing/a":       "missing/a",
	} {
		got, err := fs.RealPath(filepath.Join(dir, in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got != filepath.Join(dir, want) {
			t.Fatalf("RealPath(%s) = %q, want %q", in, got, filepath.Join(dir, want))
		}
	}
	if _, err := fs.RealPath(filepath.Join(dir, "loop")); err == nil {
		t.Fatal("a symlink loop resolved")
	}
}
