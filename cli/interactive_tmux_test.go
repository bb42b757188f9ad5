package cli

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// These tests drive the real dsh binary in a detached tmux session: type
// with send-keys, read the screen with capture-pane. They need tmux and are
// skipped without it.

type tmuxTerm struct {
	t      *testing.T
	socket string
	name   string
	// resized is when resize last changed the pane's size (see resize).
	resized time.Time
}

// buildDsh returns the dsh binary to drive: the one TestMain built for
// this test binary, or (run alone) a fresh build.
func buildDsh(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("DSH_TEST_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "dsh")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/dshq/dsh/cmd/dsh").CombinedOutput()
	if err != nil {
		t.Fatalf("building dsh: %v\n%s", err, out)
	}
	return bin
}

// startTmux runs dsh with args in dir under a private tmux server. The
// shell prints the exit status when dsh ends, so tests can see it exit.
func startTmux(t *testing.T, bin, dir, home string, args ...string) *tmuxTerm {
	t.Helper()
	return startTmuxEnv(t, bin, dir, home, nil, args...)
}

// startTmuxEnv is startTmux with more environment variables (NAME=value).
func startTmuxEnv(t *testing.T, bin, dir, home string, env []string, args ...string) *tmuxTerm {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	tt := &tmuxTerm{t: t, socket: fmt.Sprintf("dsh-test-%d-%d", os.Getpid(), time.Now().UnixNano()), name: "dsh"}
	extra := ""
	for _, e := range env {
		extra += fmt.Sprintf("%q ", e)
	}
	cmd := fmt.Sprintf("cd %q && env -u DEEPSEEK_API_KEY -u ANTHROPIC_API_KEY -u OPENAI_API_KEY -u DSH_MODEL -u NO_COLOR %sDSH_HOME=%q %q %s; echo DSH-EXITED:$?; sleep 600",
		dir, extra, home, bin, strings.Join(args, " "))
	tt.tmux("new-session", "-d", "-s", tt.name, "-x", "110", "-y", "40", cmd)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", tt.socket, "kill-server").Run() })
	return tt
}

func (tt *tmuxTerm) tmux(args ...string) string {
	tt.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tt.socket}, args...)...).CombinedOutput()
	if err != nil {
		tt.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// screen is the visible pane plus its scrollback.
func (tt *tmuxTerm) screen() string {
	return tt.tmux("capture-pane", "-p", "-J", "-S", "-300", "-t", tt.name)
}

func (tt *tmuxTerm) keys(keys ...string) {
	tt.t.Helper()
	tt.tmux(append([]string{"send-keys", "-t", tt.name}, keys...)...)
}

// text types literally (no key-name lookup).
func (tt *tmuxTerm) text(s string) {
	tt.t.Helper()
	tt.tmux("send-keys", "-t", tt.name, "-l", s)
}

// waitFor polls the screen until every substring shows, or fails.
func (tt *tmuxTerm) waitFor(subs ...string) string {
	tt.t.Helper()
	return tt.waitUntil(func(s string) bool {
		for _, sub := range subs {
			if !strings.Contains(s, sub) {
				return false
			}
		}
		return true
	}, fmt.Sprintf("%q", subs))
}

func (tt *tmuxTerm) waitUntil(ok func(string) bool, what string) string {
	tt.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := tt.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			tt.t.Fatalf("timed out waiting for %s; screen:\n%s", what, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestInteractiveDemoInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	bin := buildDsh(t)
	dir, home := t.TempDir(), t.TempDir()
	tt := startTmux(t, bin, dir, home, "--model", "demo")
	// The footer names the sandbox's mode, enforced on this machine.
	tt.waitFor("DEMO", "offline demo model", "›", "sandbox: workspace-write")
	tt.text("show me around")
	tt.keys("Enter")
	// Streamed text and the first tool card.
	tt.waitFor("› show me around", "Listing the directory with the bash tool", "Bash ls -la")
	var s string
	// The permission layer asks before the demo's commands and its write:
	// answer every question with y, one at a time.
	sawWrite := false
	deadline := time.Now().Add(30 * time.Second)
	for {
		s = tt.screen()
		if strings.Contains(s, "That was the whole loop") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo did not finish; screen:\n%s", s)
		}
		tail := lastLines(s, 8)
		if !strings.Contains(tail, "[y] allow once") {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if strings.Contains(tail, "Allow Write dsh-demo-note.txt?") {
			sawWrite = true
			if !strings.Contains(tail, "+ Written by dsh's offline demo model.") {
				t.Fatalf("the write question shows no diff:\n%s", tail)
			}
		}
		finished := strings.Count(s, "● ")
		tt.keys("y")
		tt.waitUntil(func(s string) bool { return strings.Count(s, "● ") > finished }, "the approved call to finish")
	}
	if !sawWrite {
		t.Fatalf("no approval question for the write; screen:\n%s", s)
	}
	s = tt.waitFor("Write dsh-demo-note.txt", "That was the whole loop", "cache read")
	if _, err := os.Stat(filepath.Join(dir, "dsh-demo-note.txt")); err != nil {
		t.Fatalf("dsh-demo-note.txt was not created: %v\n%s", err, s)
	}
	// Line editing: type, move, fix, then recall it from history.
	tt.text("/hepl")
	tt.keys("BSpace", "BSpace", "BSpace", "e", "l", "p", "Enter")
	tt.waitFor("Commands", "/permissions")
	tt.keys("Up")
	tt.waitUntil(func(s string) bool { return strings.Contains(lastLines(s, 3), "› /help") }, "the history entry on the prompt")
	tt.keys("C-u")
	tt.text("/exit")
	tt.keys("Enter")
	s = tt.waitFor("DSH-EXITED:0")
	if !strings.Contains(s, "Resume it with: dsh --resume") {
		t.Fatalf("no resume hint at exit:\n%s", s)
	}
	if b, err := os.ReadFile(filepath.Join(home, "history")); err != nil || !strings.Contains(string(b), "show me around") {
		t.Fatalf("history not saved: %q %v", b, err)
	}
	t.Logf("final screen:\n%s", s)
}

// lastLines returns the last n non-empty lines.
func lastLines(s string, n int) string {
	var ls []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			ls = append(ls, l)
		}
	}
	return strings.Join(ls[max(0, len(ls)-n):], "\n")
}

// sseModel is a loopback OpenAI-compatible server: the first request gets
// a bash tool call running `sleep 30`; later ones get a short answer.
func sseModel(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(s string) {
			fmt.Fprintf(w, "data: %s\n\n", s)
			w.(http.Flusher).Flush()
		}
		if calls.Add(1) == 1 {
			send(`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Running a slow command."},"finish_reason":null}]}`)
			send(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"sleep 30\",\"description\":\"Sleep a while\"}"}}]},"finish_reason":null}]}`)
			send(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":50,"completion_tokens":10}}`)
		} else {
			send(`{"choices":[{"index":0,"delta":{"content":"Done."},"finish_reason":null}]}`)
			send(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":60,"completion_tokens":2}}`)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestInteractiveCancelInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	srv, _ := sseModel(t)
	bin := buildDsh(t)
	dir, home := t.TempDir(), t.TempDir()
	settings := fmt.Sprintf(`{"providers":{"local":{"type":"openai","baseURL":%q,"models":[{"id":"m"}]}}}`, srv.URL+"/v1")
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	tt := startTmux(t, bin, dir, home, "--model", "local/m")
	tt.waitFor("local/m", "›")
	tt.text("please wait")
	tt.keys("Enter")
	tt.waitFor("Running a slow command.", "Bash sleep 30", "running", "esc or ctrl-c to interrupt")
	tt.keys("C-c")
	s := tt.waitFor("⏹ Interrupted · interrupted by user")
	// The prompt is back: the idle status line replaces the spinner.
	tt.waitUntil(func(s string) bool {
		tail := lastLines(s, 2)
		return strings.Contains(tail, "›") && strings.Contains(tail, "mode") && !strings.Contains(tail, "to interrupt")
	}, "the idle prompt")
	if strings.Contains(s, "running 3") { // sleep 30 was killed early
		t.Logf("screen:\n%s", s)
	}
	tt.text("/exit")
	tt.keys("Enter")
	s = tt.waitFor("DSH-EXITED:0")
	t.Logf("final screen:\n%s", s)
}
