package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResumeFromSnapshot: dsh -c on a long log without a snapshot replays
// it and says so on stderr, and its turn end writes a snapshot; the next
// dsh -c resumes from that snapshot without a word; a damaged snapshot is
// refused, said so, and the whole log replayed — the history the model
// gets is the same every time.
func TestResumeFromSnapshot(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	ds := &deepseek{replies: []string{textReply("first answer"), textReply("second answer"), textReply("third answer"), textReply("fourth answer")}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	model := []string{"-p", "-c", "--model", "deepseek/deepseek-chat", "--output-format", "json"}
	r := dsh(t, dir, home, srv.URL, "", "-p", "--model", "deepseek/deepseek-chat", "--output-format", "json", "remember the word kumquat")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	logs, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("logs %v", logs)
	}
	// Make the log long enough to be worth a snapshot: events of a
	// plugin's own type between turns.
	data, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var last struct {
		Seq  int64 `json:"seq"`
		Time int64 `json:"time"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(logs[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= 1100; i++ {
		fmt.Fprintf(f, `{"type":"test/note","seq":%d,"time":%d,"data":{"n":%d}}`+"\n", last.Seq+i, last.Time+i, i)
	}
	f.Close()

	history := func(want ...string) {
		t.Helper()
		ds.mu.Lock()
		hist, _ := json.Marshal(ds.requests[len(ds.requests)-1]["messages"])
		ds.mu.Unlock()
		for _, w := range want {
			if !strings.Contains(string(hist), w) {
				t.Fatalf("the resumed session's request lacks %q: %s", w, hist)
			}
		}
	}
	c := dsh(t, dir, home, srv.URL, "what was the word?", model...)
	if c.code != 0 || !strings.Contains(c.stderr, "has no snapshot; replayed all") {
		t.Fatalf("first resume: exit %d, stderr %q", c.code, c.stderr)
	}
	history("remember the word kumquat", "first answer", "what was the word?")
	snaps, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*.snap"))
	if len(snaps) != 1 {
		t.Fatalf("no snapshot written at the turn end: %v", snaps)
	}

	c = dsh(t, dir, home, srv.URL, "and again?", model...)
	if c.code != 0 || strings.Contains(c.stderr, "replayed") || strings.Contains(c.stderr, "snapshot") {
		t.Fatalf("resume from the snapshot: exit %d, stderr %q", c.code, c.stderr)
	}
	history("remember the word kumquat", "first answer", "what was the word?", "second answer", "and again?")

	raw, err := os.ReadFile(snaps[0])
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-10] ^= 0x01
	if err := os.WriteFile(snaps[0], raw, 0o600); err != nil {
		t.Fatal(err)
	}
	c = dsh(t, dir, home, srv.URL, "once more?", model...)
	if c.code != 0 || !strings.Contains(c.stderr, "its snapshot is torn or damaged") || !strings.Contains(c.stderr, "replayed all") {
		t.Fatalf("resume with a damaged snapshot: exit %d, stderr %q", c.code, c.stderr)
	}
	history("remember the word kumquat", "what was the word?", "and again?", "third answer", "once more?")
}
