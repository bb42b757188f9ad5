//go:build linux

package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// unprivileged prepares a dsh run as an ordinary user. Root reads any
// process's /proc files and survives every permission check, so as root the
// binary is copied somewhere nobody can execute it and run as nobody, with
// dir and home handed over: what these tests defend against is a command of
// the same, unprivileged user as dsh.
func unprivileged(t *testing.T) (bin, dir, home string, attr *syscall.SysProcAttr) {
	t.Helper()
	mk := func() string {
		d, err := os.MkdirTemp("", "dsh-e2e-hard-") // t.TempDir's parent is private
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	bin, dir, home, attr = dshBin, mk(), mk(), &syscall.SysProcAttr{}
	if os.Getuid() != 0 {
		return
	}
	binDir := mk()
	b, err := os.ReadFile(dshBin)
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(binDir, "dsh")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{binDir, dir, home} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	attr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
	return
}

func dshCommand(t *testing.T, bin, dir, home, baseURL string, attr *syscall.SysProcAttr, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = attr
	cmd.Env = append(os.Environ(), "HOME="+home, "DSH_HOME="+filepath.Join(home, ".dsh"), "DEEPSEEK_API_KEY=test-key",
		"DEEPSEEK_BASE_URL="+baseURL, "ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "DSH_MODEL=",
		"DSH_E2E_SECRET_TOKEN=canary-91c3")
	return cmd
}

// A bash tool command cannot read dsh's own environment, API keys included,
// back from /proc: the scrubbed environment it was given is all it gets.
func TestHeadlessCommandCannotReadDshEnviron(t *testing.T) {
	bin, dir, home, attr := unprivileged(t)
	ds := &deepseek{replies: []string{
		toolReply("call_1", "bash", map[string]string{
			"command":     `tr '\0' '\n' < /proc/$PPID/environ; echo "read-exit=$?"; echo "own=${DSH_E2E_SECRET_TOKEN-absent}"`,
			"description": "peek"}),
		textReply("done"),
	}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	cmd := dshCommand(t, bin, dir, home, srv.URL, attr, "-p", "--model", "deepseek/deepseek-chat",
		"--permission-mode", "bypassPermissions", "peek")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dsh: %v\n%s", err, out)
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if len(ds.requests) != 2 {
		t.Fatalf("%d requests\n%s", len(ds.requests), out)
	}
	msgs, _ := json.Marshal(ds.requests[1]["messages"])
	if !strings.Contains(string(msgs), "read-exit=") || !strings.Contains(string(msgs), "own=absent") {
		t.Fatalf("the command did not run: %s", msgs)
	}
	for _, secret := range []string{"canary-91c3", "test-key"} {
		if strings.Contains(string(msgs), secret) {
			t.Errorf("the command read %q from dsh's environment: %s", secret, msgs)
		}
	}
}

// hangingModel answers the first request with a background task and holds
// the second open until dsh goes away.
type hangingModel struct {
	first   string
	mu      sync.Mutex
	n       int
	waiting chan struct{}
}

func (h *hangingModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.n++
	n := h.n
	h.mu.Unlock()
	if n == 1 {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(h.first))
		return
	}
	_, _ = io.Copy(io.Discard, r.Body) // only then does the server notice a client going away
	close(h.waiting)
	select {
	case <-r.Context().Done():
	case <-time.After(time.Minute):
	}
}

// Closing the terminal (SIGHUP) ends dsh the way SIGTERM does: its
// background tasks — the shell and what it started — are killed, not left
// running.
func TestHeadlessSIGHUPKillsBackgroundTasks(t *testing.T) {
	bin, dir, home, attr := unprivileged(t)
	pidFile := filepath.Join(dir, "pid")
	hm := &hangingModel{waiting: make(chan struct{}), first: toolReply("call_1", "bash", map[string]any{
		"command":           "sleep 60 & echo $! > " + pidFile + "; wait",
		"description":       "serve",
		"run_in_background": true,
	})}
	srv := httptest.NewServer(hm)
	defer srv.Close()
	cmd := dshCommand(t, bin, dir, home, srv.URL, attr, "-p", "--model", "deepseek/deepseek-chat",
		"--permission-mode", "bypassPermissions", "start a server")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })

	select {
	case <-hm.waiting:
	case <-exited:
		t.Fatalf("dsh exited early:\n%s", out.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("dsh never made its second request:\n%s", out.String())
	}
	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the background task never wrote its pid")
		}
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })

	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("dsh did not exit after SIGHUP:\n%s", out.String())
	}
	// Give an unreaped orphan no excuse: it would be a zombie, not alive.
	for deadline := time.Now().Add(5 * time.Second); alive(pid) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("background sleep %d outlived dsh after SIGHUP", pid)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}
