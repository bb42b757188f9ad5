//go:build !unix

package local

import (
	"errors"
	"io/fs"
	"os"
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

var errOwner = errors.New("cannot keep the file's owner and group")

func keepOwner(*os.File, fs.FileInfo) error { return nil }
