package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// rewindModel is a loopback OpenAI-compatible server scripted by the last
// user message: "make a file" writes made.txt, "edit keep" runs sed -i on
// keep.txt, anything else is answered "Fresh start."; after a tool result
// it says "Made it." or "Edited.". It records every request's messages.
func rewindModel(t *testing.T, dir string) (*httptest.Server, func() [][]byte) {
	var mu sync.Mutex
	var seen [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		msgs, _ := json.Marshal(req.Messages)
		mu.Lock()
		seen = append(seen, msgs)
		mu.Unlock()
		lastUser, lastRole := "", ""
		for _, m := range req.Messages {
			lastRole = m.Role
			if m.Role == "user" {
				lastUser = string(m.Content)
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		var events []string
		text := func(s string) {
			events = append(events, fmt.Sprintf(`{"choices":[{"index":0,"delta":{"role":"assistant","content":%q},"finish_reason":null}]}`, s),
				`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":60,"completion_tokens":2}}`)
		}
		call := func(name string, args map[string]string) {
			a, _ := json.Marshal(args)
			events = append(events, fmt.Sprintf(`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"c_%s","type":"function","function":{"name":%q,"arguments":%q}}]},"finish_reason":null}]}`, name, name, a),
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":50,"completion_tokens":10}}`)
		}
		switch {
		case lastRole == "tool" && strings.Contains(lastUser, "make a file"):
			text("Made it.")
		case lastRole == "tool":
			text("Edited.")
		case strings.Contains(lastUser, "make a file"):
			call("write", map[string]string{"file_path": filepath.Join(dir, "made.txt"), "content": "made by the agent\n"})
		case strings.Contains(lastUser, "edit keep"):
			call("bash", map[string]string{"command": "sed -i s/original/changed/ keep.txt", "description": "Edit keep.txt"})
		default:
			text("Fresh start.")
		}
		var b strings.Builder
		for _, e := range events {
			fmt.Fprintf(&b, "data: %s\n\n", e)
		}
		b.WriteString("data: [DONE]\n\n")
		_, _ = io.WriteString(w, b.String()) // one write: no Nagle delay
	}))
	t.Cleanup(srv.Close)
	return srv, func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return append([][]byte(nil), seen...)
	}
}

// Esc Esc on an empty prompt opens the rewind picker: the turns with their
// prompts and file changes; enter on one asks what to restore; a file the
// user changed since the agent's checkpoint is shown as a conflict with
// its diff and asked about; "s" rewinds the others and leaves it. The
// files are restored (bytes and mode), the rewound prompt comes back to
// the editor, and the next request carries only the history before the
// turn.
func TestRewindPickerInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	dir, home := t.TempDir(), t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	srv, requests := rewindModel(t, dir)
	bin := buildDsh(t)
	settings := fmt.Sprintf(`{"providers":{"local":{"type":"openai","baseURL":%q,"models":[{"id":"m"}]}}}`, srv.URL+"/v1")
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	keep, made := filepath.Join(dir, "keep.txt"), filepath.Join(dir, "made.txt")
	if err := os.WriteFile(keep, []byte("the original\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	tt := startTmux(t, bin, dir, home, "--model", "local/m", "--permission-mode", "bypassPermissions")
	tt.waitFor("local/m", "›")
	tt.text("make a file")
	tt.keys("Enter")
	tt.waitFor("Made it.")
	tt.text("edit keep")
	tt.keys("Enter")
	tt.waitFor("Edited.")
	idle := func() {
		tt.waitUntil(func(s string) bool {
			tail := lastLines(s, 2)
			return strings.Contains(tail, "›") && !strings.Contains(tail, "to interrupt")
		}, "the idle prompt")
	}
	idle()
	if b, _ := os.ReadFile(keep); string(b) != "the changed\n" {
		t.Fatalf("the agent's sed: %q\n%s", b, tt.screen())
	}
	// The user edits the file the agent made.
	if err := os.WriteFile(made, []byte("the user's edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tt.keys("Escape")
	time.Sleep(150 * time.Millisecond)
	tt.keys("Escape")
	tt.waitFor("Rewind — back to before which turn?", "1. make a file  · 1 created", "2. edit keep  · 1 modified")
	tt.keys("Up")
	tt.waitFor("❯  1. make a file")
	tt.keys("Enter")
	tt.waitFor("Rewind to before turn 1", "files: 1 created", "1. Restore code and conversation", "2. Restore conversation", "3. Restore code", "4. Never mind")
	tt.keys("Enter")
	tt.waitFor("conflict: "+made, "+the user's edit", "nothing was changed yet", "[o] overwrite them", "[s] rewind the others")
	if b, _ := os.ReadFile(keep); string(b) != "the changed\n" {
		t.Fatalf("keep.txt changed before the question was answered: %q", b)
	}
	tt.keys("s")
	s := tt.waitFor("rewound code and conversation to before turn 1", "left alone", "hidden from the model")
	if b, _ := os.ReadFile(keep); string(b) != "the original\n" {
		t.Fatalf("keep.txt after the rewind: %q\n%s", b, s)
	}
	if fi, _ := os.Stat(keep); fi.Mode().Perm() != 0o640 {
		t.Fatalf("keep.txt mode %v", fi.Mode())
	}
	if b, _ := os.ReadFile(made); string(b) != "the user's edit\n" {
		t.Fatalf("the user's file was not left alone: %q", b)
	}
	// The rewound prompt is back on the prompt line, to edit or resend.
	tt.waitUntil(func(s string) bool { return strings.Contains(lastLines(s, 3), "› make a file") }, "the rewound prompt in the editor")
	tt.keys("C-u")
	tt.text("what now?")
	tt.keys("Enter")
	tt.waitFor("Fresh start.")
	reqs := requests()
	last := string(reqs[len(reqs)-1])
	if !strings.Contains(last, "what now?") || strings.Contains(last, "make a file") || strings.Contains(last, "edit keep") {
		t.Fatalf("after the rewind the model was sent %s", last)
	}
	idle()
	tt.text("/exit")
	tt.keys("Enter")
	tt.waitFor("DSH-EXITED:0")
}

// /diff shows what the session's agent changed, coloured: the file the
// agent wrote and the one its sed edited, but not a file the user edited
// between turns.
func TestDiffInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	dir, home := t.TempDir(), t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	srv, _ := rewindModel(t, dir)
	bin := buildDsh(t)
	settings := fmt.Sprintf(`{"providers":{"local":{"type":"openai","baseURL":%q,"models":[{"id":"m"}]}}}`, srv.URL+"/v1")
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"keep.txt": "the original\n", "user.txt": "mine\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tt := startTmux(t, bin, dir, home, "--model", "local/m", "--permission-mode", "bypassPermissions")
	tt.waitFor("local/m", "›")
	tt.text("/diff")
	tt.keys("Enter")
	tt.waitFor("no changes yet")
	tt.text("make a file")
	tt.keys("Enter")
	tt.waitFor("Made it.")
	tt.idle()
	// The user edits a file of their own between the turns.
	if err := os.WriteFile(filepath.Join(dir, "user.txt"), []byte("mine, edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tt.text("edit keep")
	tt.keys("Enter")
	tt.waitFor("Edited.")
	tt.idle()
	tt.text("/diff")
	tt.keys("Enter")
	s := tt.waitFor("Changes this session", "1 modified, 1 created", "+++ b/keep.txt", "-the original", "+the changed", "+++ b/made.txt", "+made by the agent")
	if strings.Contains(s, "user.txt") {
		t.Fatalf("/diff shows the user's own edit:\n%s", s)
	}
	colored := tt.screenANSI()
	minus, plus := lineWith(colored, "-the original"), lineWith(colored, "+the changed")
	if sgr.FindString(minus) == "" || sgr.FindString(plus) == "" || sgr.FindString(minus) == sgr.FindString(plus) {
		t.Fatalf("the diff is not coloured apart: %q %q", minus, plus)
	}
	tt.exit()
}
