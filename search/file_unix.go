//go:build unix

package search

import (
	"io"
	"syscall"
)

// rawFile is a file read with plain system calls. os.File registers every
// file with the runtime poller and toggles its blocking mode: five system
// calls per file that a walk over 100,000 small files notices.
type rawFile struct{ fd int }

func openFile(path string) (rawFile, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return rawFile{fd}, err
		}
	}
}

func (f rawFile) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(f.fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f rawFile) Close() error { return syscall.Close(f.fd) }

// size returns the file's size and whether it is a regular file.
func (f rawFile) size() (int64, bool, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(f.fd, &st); err != nil {
		return 0, false, err
	}
	return st.Size, st.Mode&syscall.S_IFMT == syscall.S_IFREG, nil
}

// mapFile maps size bytes of f read-only.
func mapFile(f rawFile, size int64) ([]byte, func(), error) {
	if int64(int(size)) != size {
		return nil, nil, syscall.EFBIG
	}
	data, err := syscall.Mmap(f.fd, 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() { _ = syscall.Munmap(data) }, nil
}
