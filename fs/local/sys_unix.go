//go:build unix

package local

import (
	"io/fs"
	"os"
	"syscall"
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
// writer would otherwise hang the read tool until someone opened it).
func openRead(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
