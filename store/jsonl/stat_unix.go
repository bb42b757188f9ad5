//go:build unix

package jsonl

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// logFiles lists the regular *.jsonl files of dir with their sizes. It
// stats through the directory's descriptor (fstatat), which skips resolving
// the whole path once per file.
func logFiles(dir string) ([]logFile, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var out []logFile
	fd := int(d.Fd())
	for {
		entries, err := d.ReadDir(1024)
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, logExt) || !e.Type().IsRegular() {
				continue
			}
			var st unix.Stat_t
			if err := fstatat(fd, name, &st); err != nil {
				if errors.Is(err, syscall.ENOENT) {
					continue
				}
				return nil, &fs.PathError{Op: "fstatat", Path: dir + "/" + name, Err: err}
			}
			out = append(out, logFile{name: name, size: st.Size})
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(entries) == 0 {
			return out, nil
		}
	}
}

func fstatat(fd int, name string, st *unix.Stat_t) error {
	for {
		err := unix.Fstatat(fd, name, st, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			return err
		}
	}
}
