//go:build !unix

package jsonl

import (
	"errors"
	"io/fs"
	"os"
	"strings"
)

// logFiles lists the regular *.jsonl files of dir with their sizes.
func logFiles(dir string) ([]logFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []logFile
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), logExt) || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, err
		}
		out = append(out, logFile{name: e.Name(), size: fi.Size()})
	}
	return out, nil
}
