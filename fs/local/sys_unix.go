//go:build unix

package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	dshfs "github.com/dshq/dsh/fs"
)

// inode returns the file's inode number, which changes when a file is
// replaced by rename: the one change size and mtime can miss.
func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino) // Ino's type differs between platforms
	}
	return 0
}

// openRead opens name for reading without blocking on FIFOs (a FIFO with no
// writer would otherwise hang the read tool until someone opened it), and
// without following symbolic links (see openNoFollow).
func openRead(name string) (*os.File, error) {
	return openNoFollow(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// openWrite opens an existing file for writing in place, without blocking
// should it have become a FIFO, and without following symbolic links.
func openWrite(name string) (*os.File, error) {
	return openNoFollow(name, os.O_WRONLY|syscall.O_NONBLOCK, 0)
}

// checkWritable refuses to replace a file the process may not write.
// Replacing by rename needs only write permission on the directory, so
// without this check a file the user made read-only would be overwritten.
// access(2) answers for an ordinary user (and reports a read-only
// filesystem or an immutable file); root passes access(2) whatever the
// mode, so for root the mode bits decide: a file with no write bit at all
// ("chmod a-w") is refused.
func checkWritable(name string, fi fs.FileInfo) error {
	if os.Geteuid() == 0 && fi.Mode().Perm()&0o222 == 0 {
		return &os.PathError{Op: "access", Path: name, Err: syscall.EACCES}
	}
	if err := unix.Access(name, unix.W_OK); err != nil {
		return &os.PathError{Op: "access", Path: name, Err: err}
	}
	return nil
}

// fileID returns the file's device, inode and hard-link count.
func fileID(fi fs.FileInfo) dshfs.FileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return dshfs.FileID{}
	}
	return dshfs.FileID{Device: uint64(st.Dev), Inode: uint64(st.Ino), Links: uint64(st.Nlink)} //nolint:unconvert // types differ between platforms
}

// nlink returns the file's hard-link count.
func nlink(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink) // Nlink's type differs between platforms
	}
	return 1
}

// errOwner reports that a replacement could not be given the previous
// file's owner and group.
var errOwner = errors.New("cannot keep the file's owner and group")

// keepOwner gives the temporary file f the owner and group of prev, the
// file it replaces, so an edit never hands the user's file to dsh's user
// (as root in a container: to root). When the process may not set them
// (an ordinary user editing a file of another user or group, or ids not
// mapped into a user namespace) it returns an error wrapping errOwner.
func keepOwner(f *os.File, prev fs.FileInfo) error {
	want, ok := prev.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if have, ok := fi.Sys().(*syscall.Stat_t); ok && have.Uid == want.Uid && have.Gid == want.Gid {
		return nil
	}
	if err := f.Chown(int(want.Uid), int(want.Gid)); err != nil {
		return fmt.Errorf("%w: %w", errOwner, err)
	}
	return nil
}
