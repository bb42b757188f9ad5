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
)

// recordingModel answers every chat completion with "Done." and keeps
// each request's messages as JSON text.
type recordingModel struct {
	mu       sync.Mutex
	requests []string
}

func (m *recordingModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	var body struct {
		Messages json.RawMessage `json:"messages"`
	}
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &body)
	m.mu.Lock()
	m.requests = append(m.requests, string(body.Messages))
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Done.\"},\"finish_reason\":null}]}\n\n"+
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
}

func (m *recordingModel) last() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.requests) == 0 {
		return ""
	}
	return m.requests[len(m.requests)-1]
}

// The drop-in in the terminal: a Claude Code command (with $ARGUMENTS,
// @file and !`git rev-parse --short HEAD`) completes on tab with its
// description and runs; /permissions lists .claude/settings.json's rules
// with their file.
func TestDropinTerminalInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	model := &recordingModel{}
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	bin := buildDsh(t)
	userHome, dir := t.TempDir(), t.TempDir()
	home := filepath.Join(userHome, ".dsh")
	files := map[string]string{
		".claude/commands/release/ship.md": "---\ndescription: Ship a component\nargument-hint: [component]\nallowed-tools: Bash(git rev-parse --short HEAD), Read\n---\nShip $ARGUMENTS at commit !`git rev-parse --short HEAD`. Notes: @notes.md\n",
		".claude/settings.json":            `{"permissions": {"deny": ["Read(./secrets/**)"], "allow": ["Bash(make build)"]}}`,
		"notes.md":                         "Fixed the flux capacitor.\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var head string
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first"}, {"rev-parse", "--short", "HEAD"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		head = strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	settings := fmt.Sprintf(`{"providers":{"local":{"type":"openai","baseURL":%q,"models":[{"id":"m"}]}}}`, srv.URL+"/v1")
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	tt := startTmuxEnv(t, bin, dir, home, []string{"HOME=" + userHome, "CODEX_HOME="}, "--model", "local/m", "--trust")
	tt.waitFor("local/m", "›")
	tt.text("/sh")
	tt.keys("Tab")
	tt.waitFor("[component] · Ship a component")
	tt.text("gizmo")
	tt.keys("Enter")
	tt.waitFor("› /ship gizmo", "(expanded to", "Done.")
	if got := model.last(); !strings.Contains(got, "Ship gizmo at commit "+head+".") || !strings.Contains(got, "Fixed the flux capacitor.") {
		t.Fatalf("the model got:\n%s", got)
	}
	tt.text("/permissions")
	tt.keys("Enter")
	settingsPath := filepath.Join(dir, ".claude", "settings.json")
	tt.waitFor("Read(./secrets/**)", "Bash(make build)")
	s := tt.screen()
	if strings.Count(s, filepath.Base(dir)+"/.claude/settings.json") < 2 && !strings.Contains(s, settingsPath) {
		t.Fatalf("/permissions does not name the rules' file:\n%s", s)
	}
	tt.text("/help")
	tt.keys("Enter")
	tt.waitFor("Custom commands", "/release:ship [component]", "Ship a component (project)")
	tt.text("/exit")
	tt.keys("Enter")
	tt.waitFor("DSH-EXITED:0")
}
