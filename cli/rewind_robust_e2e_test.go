package cli_test

import (
	"bufio"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// turnsOf lists the turns of the session's log (dsh sessions export)
// with their trigger kinds (turn number → kind).
func turnsOf(t *testing.T, dir, home, url, id string) map[int]string {
	t.Helper()
	r := dsh(t, dir, home, url, "", "sessions", "export", id)
	if r.code != 0 {
		t.Fatalf("export: %+v", r)
	}
	out := map[int]string{}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var e struct {
			Type string `json:"type"`
			Data struct {
				Turn    int `json:"turn"`
				Trigger struct {
					Kind string `json:"kind"`
				} `json:"trigger"`
			} `json:"data"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == "turn/start" {
			out[e.Data.Turn] = e.Data.Trigger.Kind
		}
	}
	return out
}

// The Robust item through the real binary: rewinding twice (the
// second finds nothing to restore and changes nothing), rewinding a rewind
// (to before the rewind's own turn: the agent's changes come back), and
// rewinding after compaction (the code of a turn the summary covers still
// rewinds; its conversation is refused with a clear message; a turn after
// the compaction rewinds both).
func TestRewindTwiceRewoundAndAfterCompaction(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	made := filepath.Join(dir, "made.txt")
	// Compaction keeps almost nothing verbatim, so /compact has something
	// to summarize in a short session.
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(`{"compaction":{"retainTokens":1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ds := &deepseek{replies: []string{textReply("Hello.")}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	model := []string{"-p", "--model", "deepseek/deepseek-chat", "--dangerously-skip-permissions"}
	turn := func(prompt string, replies ...string) {
		t.Helper()
		ds.setReplies(replies...)
		args := append([]string(nil), model...)
		if prompt != "say hello" {
			args = append(args, "-c")
		}
		if r := dsh(t, dir, home, srv.URL, "", append(args, prompt)...); r.code != 0 {
			t.Fatalf("%q: %+v", prompt, r)
		}
	}
	turn("say hello", textReply(strings.Repeat("Hello at length, to summarize later. ", 200)))
	turn("make a file", toolReply("c1", "write", map[string]string{"file_path": "made.txt", "content": "made by the agent\n"}), textReply(strings.Repeat("Made it, and more words. ", 200)))
	turn("say more", textReply(strings.Repeat("More words to summarize later. ", 200)))
	turn("/compact", textReply("Summary: the user said hello, the agent made made.txt, then said more."))
	turn("after the summary", textReply("Noted."))
	id := sessionOf(t, dir, home, srv.URL)
	turns := turnsOf(t, dir, home, srv.URL, id)
	compacted := 0
	for n, kind := range turns {
		if kind != "message" && kind != "" {
			compacted = n
		}
	}
	if compacted == 0 || len(turns) != 5 {
		t.Fatalf("turns %v: want four of messages and the compaction's", turns)
	}
	rewind := func(args ...string) run {
		t.Helper()
		return dsh(t, dir, home, srv.URL, "", append([]string{"rewind", id}, args...)...)
	}

	// After the compaction, the code of turn 2 (inside the summary) rewinds.
	if r := rewind("--to", "2", "--code"); r.code != 0 || !strings.Contains(r.stdout, "remove") {
		t.Fatalf("code rewind after compaction: %+v", r)
	}
	if _, err := os.Stat(made); !os.IsNotExist(err) {
		t.Fatalf("made.txt after the rewind: %v", err)
	}
	// Twice: nothing left to restore, nothing changed, no second rewind turn.
	if r := rewind("--to", "2", "--code"); r.code != 0 || !strings.Contains(r.stdout, "files: nothing to restore") {
		t.Fatalf("the second rewind: %+v", r)
	}
	if _, err := os.Stat(made); !os.IsNotExist(err) {
		t.Fatalf("made.txt after the second rewind: %v", err)
	}
	after := turnsOf(t, dir, home, srv.URL, id)
	rewindTurn := 0
	for n, kind := range after {
		if kind == "rewind" {
			if rewindTurn != 0 {
				t.Fatalf("two rewind turns: %v", after)
			}
			rewindTurn = n
		}
	}
	if rewindTurn == 0 {
		t.Fatalf("no rewind turn in %v", after)
	}
	// A rewind of the rewind: to before its turn, the agent's file is back.
	if r := rewind("--to", strconv.Itoa(rewindTurn), "--code"); r.code != 0 || !strings.Contains(r.stdout, "restore") {
		t.Fatalf("rewinding the rewind: %+v", r)
	}
	if b, err := os.ReadFile(made); err != nil || string(b) != "made by the agent\n" {
		t.Fatalf("made.txt after rewinding the rewind: %q %v", b, err)
	}
	// The conversation of a turn the summary covers is gone from the
	// surface: refused, saying why; nothing hidden.
	r := rewind("--to", "2", "--chat")
	if r.code == 0 || !strings.Contains(r.stderr+r.stdout, "no longer in the history") {
		t.Fatalf("chat rewind into the summary: %+v", r)
	}
	// A turn after the compaction rewinds its conversation.
	if r := rewind("--to", "5", "--chat"); r.code != 0 || !strings.Contains(r.stdout, "hidden from the model") {
		t.Fatalf("chat rewind after the compaction: %+v", r)
	}
	turn("once more", textReply("Again."))
	ds.mu.Lock()
	last, _ := json.Marshal(ds.requests[len(ds.requests)-1]["messages"])
	ds.mu.Unlock()
	if strings.Contains(string(last), "after the summary") || !strings.Contains(string(last), "Summary: the user said hello") || !strings.Contains(string(last), "once more") {
		t.Fatalf("after the conversation rewind the model got %s", last)
	}
}
