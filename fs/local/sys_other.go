//go:build !unix

package local

import (
	"io/fs"
	"os"
)

func inode(fs.FileInfo) uint64 { return 0 }

func openRead(name string) (*os.File, error) { return os.Open(name) }
