//go:build unix

package permission

import (
	iofs "io/fs"
	"syscall"

	dshfs "github.com/dshq/dsh/fs"
)

// statID is a file's identity from its stat.
func statID(fi iofs.FileInfo) dshfs.FileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return dshfs.FileID{}
	}
	return dshfs.FileID{Device: uint64(st.Dev), Inode: uint64(st.Ino), Links: uint64(st.Nlink)} //nolint:unconvert // types differ between platforms
}
