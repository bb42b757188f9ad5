//go:build unix

package memory

import (
	"os"

	"golang.org/x/sys/unix"
)

// openNoBlock opens name for reading without following a final symlink and
// without blocking (a FIFO with no writer would hang the open).
func openNoBlock(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
}
