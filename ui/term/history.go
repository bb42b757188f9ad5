package term

import (
	"bufio"
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

// LoadHistory reads path; an empty path keeps the history in memory.
func LoadHistory(path string) *History {
	h := &History{path: path}
	if path == "" {
		return h
	}
	f, err := os.Open(path)
	if err != nil {
		return h
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		var s string
		line := sc.Bytes()
		if json.Unmarshal(line, &s) != nil {
			s = string(line) // a plain-text line from an older or hand-edited file
		}
		if strings.TrimSpace(s) != "" {
			h.entries = append(h.entries, s)
		}
	}
	if len(h.entries) > HistoryLimit {
		h.entries = h.entries[len(h.entries)-HistoryLimit:]
	}
	return h
}

// Len is the number of entries.
func (h *History) Len() int { return len(h.entries) }

// At returns entry i (0 is the oldest).
func (h *History) At(i int) string { return h.entries[i] }

// Add records an entry (skipping blanks and repeats of the newest) and
// appends it to the file.
func (h *History) Add(s string) {
	if strings.TrimSpace(s) == "" || (len(h.entries) > 0 && h.entries[len(h.entries)-1] == s) {
		return
	}
	h.entries = append(h.entries, s)
	if len(h.entries) > HistoryLimit {
		h.entries = h.entries[len(h.entries)-HistoryLimit:]
	}
	if h.path == "" {
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
	if err == nil && fi.Size() > 512*1024 {
		h.rewrite()
	}
}

func (h *History) rewrite() {
	var sb strings.Builder
	for _, e := range h.entries {
		b, _ := json.Marshal(e)
		sb.Write(b)
		sb.WriteByte('\n')
	}
	tmp := h.path + ".tmp"
	if os.WriteFile(tmp, []byte(sb.String()), 0o600) == nil {
		_ = os.Rename(tmp, h.path)
	}
}
