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

// scriptModel is a loopback OpenAI-compatible chat server: each request
// gets the next scripted reply (then "Done."), and every request body is
// kept for the test to read. Each response is one write, so Nagle's
// algorithm adds no delay.
type scriptModel struct {
	mu       sync.Mutex
	replies  []string
	requests []map[string]any
}

func newScriptModel(t *testing.T, replies ...string) (*scriptModel, string) {
	m := &scriptModel{replies: replies}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return m, srv.URL + "/v1"
}

func (m *scriptModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	m.mu.Lock()
	m.requests = append(m.requests, body)
	reply := chatText("Done.", 10, 1)
	if len(m.replies) > 0 {
		reply, m.replies = m.replies[0], m.replies[1:]
	}
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = io.WriteString(w, reply)
}

// request is the n-th request's body (0-based).
func (m *scriptModel) request(n int) map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n >= len(m.requests) {
		return nil
	}
	return m.requests[n]
}

// count is how many requests arrived.
func (m *scriptModel) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

// lastMessages is the last request's messages as JSON text.
func (m *scriptModel) lastMessages() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.requests) == 0 {
		return ""
	}
	b, _ := json.Marshal(m.requests[len(m.requests)-1]["messages"])
	return string(b)
}

func sseBody(chunks ...map[string]any) string {
	var b strings.Builder
	for _, c := range chunks {
		j, _ := json.Marshal(c)
		fmt.Fprintf(&b, "data: %s\n\n", j)
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// chatText is a streamed answer with the usage given.
func chatText(s string, in, out int) string {
	return sseBody(
		map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": s}}}},
		map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}},
			"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out}},
	)
}

// chatTool is one tool call.
func chatTool(id, name string, args any) string {
	a, _ := json.Marshal(args)
	return sseBody(
		map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{
			"index": 0, "id": id, "type": "function", "function": map[string]any{"name": name, "arguments": string(a)}}}}}}},
		map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "tool_calls"}},
			"usage": map[string]any{"prompt_tokens": 20, "completion_tokens": 5}},
	)
}

// termFixture is a working directory and a $DSH_HOME whose settings
// point provider "local" at a scripted model.
type termFixture struct {
	bin, dir, home string
	model          *scriptModel
}

// newTermFixture writes the settings; models is the provider's model list
// as JSON (default: one model "m").
func newTermFixture(t *testing.T, models string, replies ...string) *termFixture {
	t.Helper()
	if testing.Short() {
		t.Skip("drives the binary")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	m, url := newScriptModel(t, replies...)
	if models == "" {
		models = `[{"id":"m"}]`
	}
	f := &termFixture{bin: buildDsh(t), dir: t.TempDir(), home: t.TempDir(), model: m}
	settings := fmt.Sprintf(`{"providers":{"local":{"type":"openai","baseURL":%q,"models":%s}}}`, url, models)
	f.write(t, filepath.Join(f.home, "settings.json"), settings)
	return f
}

func (f *termFixture) write(t *testing.T, path, content string) {
	t.Helper()
	if !filepath.IsAbs(path) {
		path = filepath.Join(f.dir, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// headless runs dsh -p in the fixture's directory.
func (f *termFixture) headless(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(f.bin, append([]string{"-p", "--model", "local/m"}, args...)...)
	cmd.Dir = f.dir
	cmd.Env = append(os.Environ(), "DSH_HOME="+f.home, "DEEPSEEK_API_KEY=", "ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "DSH_MODEL=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dsh -p %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// run runs another dsh command (no model).
func (f *termFixture) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(f.bin, args...)
	cmd.Dir = f.dir
	cmd.Env = append(os.Environ(), "DSH_HOME="+f.home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dsh %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (f *termFixture) tmux(t *testing.T, args ...string) *tmuxTerm {
	return startTmux(t, f.bin, f.dir, f.home, append([]string{"--model", "local/m"}, args...)...)
}

// The session picker: dsh -r lists the directory's sessions with their
// titles, turns and subagent counts, hides the subagent child session,
// filters as you type and resumes the one chosen; dsh sessions hides the
// child too unless --all.
func TestSessionPickerInTmux(t *testing.T) {
	f := newTermFixture(t, "",
		chatTool("c1", "task", map[string]string{"description": "Survey the code", "prompt": "List what the repository holds."}),
		chatText("The repository is empty.", 30, 5), // the child's answer
		chatText("Surveyed.", 40, 3),
		chatText("Second answer.", 10, 2),
	)
	f.headless(t, "--allowedTools", "task", "survey the repository")
	f.headless(t, "write the release notes")
	if n := f.model.count(); n != 4 {
		t.Fatalf("%d requests, want 4 (parent, child, parent, second session)", n)
	}
	ls := f.run(t, "sessions")
	if strings.Count(ls, "\n") != 3 || !strings.Contains(ls, "survey the repository") || strings.Contains(ls, "subagent of") {
		t.Fatalf("dsh sessions shows children:\n%s", ls)
	}
	if all := f.run(t, "sessions", "--all"); strings.Count(all, "\n") != 4 || !strings.Contains(all, "↳ subagent of") {
		t.Fatalf("dsh sessions --all:\n%s", all)
	}

	tt := f.tmux(t, "-r")
	s := tt.waitFor("Resume a session", "write the release notes", "survey the repository", "1 subagent")
	if strings.Contains(s, "List what the repository holds") || strings.Count(s, " turn · ") != 2 {
		t.Fatalf("the picker lists the child session:\n%s", s)
	}
	tt.text("surv")
	tt.waitUntil(func(s string) bool {
		return strings.Contains(s, "filter › surv") && !strings.Contains(s, "write the release notes")
	}, "the filtered list")
	tt.keys("Enter")
	tt.waitFor("── resumed session", "› survey the repository", "Surveyed.")
	tt.text("/exit")
	tt.keys("Enter")
	tt.waitFor("DSH-EXITED:0")
}
