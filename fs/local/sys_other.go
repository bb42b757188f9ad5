//go:build !unix

package local

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	dshfs "github.com/dshq/dsh/fs"
)

func inode(fs.FileInfo) uint64 { return 0 }

func openRead(name string) (*os.File, error) { return os.Open(name) }

func openWrite(name string) (*os.File, error) { return os.OpenFile(name, os.O_WRONLY, 0) }

// checkWritable refuses a file without the owner write bit (on Windows, the
// read-only attribute).
func checkWritable(name string, fi fs.FileInfo) error {
	if fi.Mode().Perm()&0o200 == 0 {
		return &os.PathError{Op: "access", Path: name, Err: fs.ErrPermission}
	}
	return nil
}

func nlink(fs.FileInfo) uint64 { return 1 }

func fileID(fs.FileInfo) dshfs.FileID { return dshfs.FileID{} }

var errOwner = errors.New("cannot keep the file's owner and group")

func keepOwner(*os.File, fs.FileInfo) error { return nil }

// Without openat, a file is opened by name; see nofollow_unix.go for what
// unix systems do instead.
func openDirNoFollow(dir string, create bool) (*os.File, error) {
	if create {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	return os.Open(dir)
}

func createTempAt(dir *os.File, base string) (*os.File, string, error) {
	if len(base) > 200 {
		base = base[:200]
	}
	f, err := os.CreateTemp(dir.Name(), "."+base+".*.tmp")
	if err != nil {
		return nil, "", err
	}
	return f, filepath.Base(f.Name()), nil
}

func renameAt(dir *os.File, from, to string) error {
	return os.Rename(filepath.Join(dir.Name(), from), filepath.Join(dir.Name(), to))
}

func removeAt(dir *os.File, name string) { _ = os.Remove(filepath.Join(dir.Name(), name)) }
