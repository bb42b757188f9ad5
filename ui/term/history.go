package term

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// HistoryLimit is how many entries the history file keeps.
const HistoryLimit = 1000

// History is the input history: oldest first, persisted one JSON string per
// line (so multi-line entries survive) in a file shared by every dsh
// process of the user. A missing or unwritable file only costs persistence.
type History struct {
	path    string
	entries []string
}

// History file limits: an entry longer than maxHistoryEntry bytes stays in
// memory but is not written; a line longer than maxHistoryLine (which no
// written entry reaches) is skipped when loading. The file is compacted to
// its newest HistoryLimit entries (and at most compactTarget bytes) once it
// grows past compactAbove bytes, so compaction runs now and then rather
// than at every Add.
const (
	maxHistoryEntry = 64 * 1024
	maxHistoryLine  = 1024 * 1024
	compactAbove    = 1024 * 1024
	compactTarget   = 512 * 1024
)

// LoadHistory reads path; an empty path keeps the history in memory.
func LoadHistory(path string) *History {
	h := &History{path: path}
	if path == "" {
		return h
	}
	h.entries = readHistory(path, HistoryLimit)
	return h
}

// readHistory returns the newest limit entries of the file at path (nil if
// it cannot be read). Overlong and blank lines are skipped.
func readHistory(path string, limit int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var entries []string
	r := bufio.NewReaderSize(f, 64*1024)
	var line []byte
	skip := false // the current line is overlong
	for {
		chunk, err := r.ReadSlice('\n')
		if !skip {
			line = append(line, chunk...)
			if len(line) > maxHistoryLine {
				line, skip = line[:0], true
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if !skip && len(line) > 0 {
			if s, ok := historyEntry(bytes.TrimRight(line, "\r\n")); ok {
				entries = append(entries, s)
				if len(entries) > 2*limit {
					entries = append(entries[:0], entries[len(entries)-limit:]...)
				}
			}
		}
		line, skip = line[:0], false
		if err != nil {
			break
		}
	}
	if len(entries) > limit {
		entries = entries[len(entries)-limit:]
	}
	return entries
}

// historyEntry decodes one line of the file.
func historyEntry(line []byte) (string, bool) {
	var s string
	if json.Unmarshal(line, &s) != nil {
		s = string(line) // a plain-text line from an older or hand-edited file
	}
	return s, strings.TrimSpace(s) != ""
}

// Len is the number of entries.
func (h *History) Len() int { return len(h.entries) }

// At returns entry i (0 is the oldest).
func (h *History) At(i int) string { return h.entries[i] }

// Add records an entry (skipping blanks and repeats of the newest) and
// appends it to the file (unless it is longer than maxHistoryEntry bytes).
func (h *History) Add(s string) {
	if strings.TrimSpace(s) == "" || (len(h.entries) > 0 && h.entries[len(h.entries)-1] == s) {
		return
	}
	h.entries = append(h.entries, s)
	if len(h.entries) > HistoryLimit {
		h.entries = h.entries[len(h.entries)-HistoryLimit:]
	}
	if h.path == "" || len(s) > maxHistoryEntry {
		return
	}
	b, err := json.Marshal(s)
	if err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		return
	}
	f, err := os.OpenFile(h.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	_, _ = f.Write(append(b, '\n'))
	fi, err := f.Stat()
	_ = f.Close()
	// Compact now and then so the file does not grow without bound.
	if err == nil && fi.Size() > compactAbove {
		h.rewrite()
	}
}

// rewrite compacts the file from what it holds now — other dsh processes
// append to it too — to its newest entries, through a temporary file
// renamed over it.
func (h *History) rewrite() {
	entries := readHistory(h.path, HistoryLimit)
	var lines [][]byte
	size := 0
	for i := len(entries) - 1; i >= 0; i-- {
		if len(entries[i]) > maxHistoryEntry {
			continue
		}
		b, err := json.Marshal(entries[i])
		if err != nil || size+len(b)+1 > compactTarget {
			break
		}
		size += len(b) + 1
		lines = append(lines, b)
	}
	var buf bytes.Buffer
	buf.Grow(size)
	for i := len(lines) - 1; i >= 0; i-- {
		buf.Write(lines[i])
		buf.WriteByte('\n')
	}
	tmp, err := os.CreateTemp(filepath.Dir(h.path), filepath.Base(h.path)+".*.tmp")
	if err != nil {
		return
	}
	_, werr := tmp.Write(buf.Bytes())
	cerr := tmp.Close()
	if werr == nil && cerr == nil && os.Chmod(tmp.Name(), 0o600) == nil && os.Rename(tmp.Name(), h.path) == nil {
		return
	}
	_ = os.Remove(tmp.Name())
}
