//go:build !unix

package search

import (
	"errors"
	"os"
)

// rawFile wraps os.File where plain system calls are not available.
type rawFile struct{ *os.File }

func openFile(path string) (rawFile, error) {
	f, err := os.Open(path)
	return rawFile{f}, err
}

func (f rawFile) size() (int64, bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, false, err
	}
	return fi.Size(), fi.Mode().IsRegular(), nil
}

// mapFile is not available here; large files are read instead.
func mapFile(rawFile, int64) ([]byte, func(), error) {
	return nil, nil, errors.ErrUnsupported
}
