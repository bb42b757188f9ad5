package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	raw      [][]byte // the request bodies as they arrived
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
	m.raw = append(m.raw, b)
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

// addSettings adds top-level keys (`"key":value,...`) to the fixture's
// settings.json.
func (f *termFixture) addSettings(t *testing.T, keys string) {
	t.Helper()
	path := filepath.Join(f.home, "settings.json")
	f.write(t, path, strings.TrimSuffix(strings.TrimSpace(readFile(t, path)), "}")+","+keys+"}")
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
// titles, relative times, turns and subagent counts, hides the subagent
// child session, filters as you type and resumes the one chosen; /resume
// in the session lists the other top-level session alone and /resume 1
// takes it; dsh sessions hides the child too unless --all.
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
	s := tt.waitFor("Resume a session", "write the release notes", "survey the repository", "just now · 1 turn · ", "1 subagent")
	if strings.Contains(s, "List what the repository holds") || strings.Count(s, " turn · ") != 2 {
		t.Fatalf("the picker lists the child session:\n%s", s)
	}
	tt.text("surv")
	tt.waitUntil(func(s string) bool {
		return strings.Contains(s, "filter › surv") && !strings.Contains(s, "write the release notes")
	}, "the filtered list")
	tt.keys("Enter")
	tt.waitFor("── resumed session", "› survey the repository", "Surveyed.")
	// /resume in the session opens the same picker, without the child;
	// /resume n then counts the rows it listed.
	tt.text("/resume")
	tt.keys("Enter")
	s = tt.waitFor("Resume a session", "❯ write the release notes  just now · 1 turn · ")
	if p := s[strings.LastIndex(s, "Resume a session"):]; strings.Count(p, " turn · ") != 1 || strings.Contains(p, "List what the repository holds") {
		t.Fatalf("/resume lists more than the other top-level session:\n%s", p)
	}
	tt.keys("Escape")
	tt.waitUntil(func(s string) bool { return !strings.Contains(lastLines(s, 4), "filter ›") }, "the picker closed")
	tt.text("/resume 1")
	tt.keys("Enter")
	tt.waitFor("› write the release notes", "Second answer.")
	tt.text("/exit")
	tt.keys("Enter")
	tt.waitFor("DSH-EXITED:0")
}

// screenANSI is the visible pane with its colours (SGR sequences).
func (tt *tmuxTerm) screenANSI() string {
	return tt.tmux("capture-pane", "-p", "-e", "-J", "-S", "-300", "-t", tt.name)
}

// lineWith is the first line of s holding sub once its colours are
// stripped ("" when none).
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(sgr.ReplaceAllString(l, ""), sub) {
			return l
		}
	}
	return ""
}

var sgr = regexp.MustCompile(`\x1b\[[0-9;:]*m`)

// What people do at the prompt, through the real binary in tmux: an @
// mention completed with tab and attached (its content reaches the
// model), a ! command whose output reaches the next request, ctrl-r,
// a 200-line paste collapsed on screen and sent whole, a highlighted code
// block, a coloured diff and a right-aligned table in the answer, and the
// status line's cost from the scripted usage and the settings' prices.
func TestPromptFeaturesInTmux(t *testing.T) {
	answer := "Here is the plan.\n\n```go\nfunc main() { return }\n```\n\n```diff\n-old line\n+new line\n```\n\n" +
		"| name | count |\n|:-----|------:|\n| a | 1 |\n| bbbb | 12345 |\n"
	f := newTermFixture(t, `[{"id":"m","contextWindow":10000}]`,
		chatText(answer, 1000, 500),
		chatText("Noted the shell output.", 10, 1),
		chatText("Got the paste.", 10, 1),
	)
	f.write(t, filepath.Join(f.home, "settings.json"), strings.Replace(readFile(t, filepath.Join(f.home, "settings.json")),
		`{"providers"`, `{"pricing":{"local/m":{"input":1000,"output":2000}},"providers"`, 1))
	var src strings.Builder
	src.WriteString("package main\n")
	for i := 2; i <= 12; i++ {
		fmt.Fprintf(&src, "// line %d MARKER-FILE\n", i)
	}
	f.write(t, "main.go", src.String())
	f.write(t, "other.txt", "x\n")
	f.write(t, "AGENTS.md", "Always answer in haiku.\n")
	tt := f.tmux(t, "--trust")
	tt.waitFor("local/m", "›")

	// @ completion and attachment.
	tt.text("explain @mai")
	tt.waitFor("› main.go  (tab)")
	tt.keys("Tab")
	tt.waitUntil(func(s string) bool { return strings.Contains(lastLines(s, 3), "explain @main.go") }, "the completed mention")
	tt.keys("Enter")
	s := tt.waitFor("attached @main.go (12 lines)", "Here is the plan.", "12345")
	if got := f.model.lastMessages(); !strings.Contains(got, "// line 12 MARKER-FILE") || !strings.Contains(got, "explain @main.go") {
		t.Fatalf("the mentioned file did not reach the model:\n%s", got)
	}

	// Rendering: a highlighted code block, a coloured diff, a right-aligned
	// table column.
	colored := tt.screenANSI()
	code := lineWith(colored, "main()")
	if len(sgr.FindAllString(code, -1)) < 2 {
		t.Fatalf("the code block is not highlighted: %q", code)
	}
	minus, plus := lineWith(colored, "old line"), lineWith(colored, "new line")
	if sgr.FindString(minus) == "" || sgr.FindString(plus) == "" || sgr.FindString(minus) == sgr.FindString(plus) {
		t.Fatalf("the diff is not coloured apart: %q %q", minus, plus)
	}
	one, five := lineWith(s, "a    │"), lineWith(s, "bbbb │")
	if i, j := strings.Index(one, "1"), strings.Index(five, "12345"); i < 0 || j < 0 || i != j+4 {
		t.Fatalf("the count column is not right-aligned:\n%s\n%s", one, five)
	}
	// Cost: 1,000 in at $1,000/M and 500 out at $2,000/M is $2.00 (plus the
	// later turns' cents); the context is 15% of the 10k window.
	if tail := lastLines(s, 2); !strings.Contains(tail, "$2.0") || !strings.Contains(tail, "context 15%") {
		t.Fatalf("the status line has no cost or context:\n%s", tail)
	}

	// ! shell mode: shown, then part of the next request.
	tt.text("!echo shell-$((40+2))-marker")
	tt.keys("Enter")
	tt.waitFor("! echo shell-$((40+2))-marker", "shell-42-marker")
	tt.text("and now?")
	tt.keys("Enter")
	tt.waitFor("Noted the shell output.")
	if got := f.model.lastMessages(); !strings.Contains(got, "shell-42-marker") || !strings.Contains(got, "and now?") {
		t.Fatalf("the shell output did not reach the next request:\n%s", got)
	}

	// ctrl-r finds the earlier prompt.
	tt.keys("C-r")
	tt.text("expl")
	tt.waitUntil(func(s string) bool {
		return strings.Contains(lastLines(s, 3), "(reverse-i-search)`expl': explain @main.go")
	}, "the history match")
	tt.keys("C-g")
	tt.waitUntil(func(s string) bool { return !strings.Contains(lastLines(s, 3), "reverse-i-search") }, "the search closed")

	// A 200-line paste: one line on screen, all of it in the request.
	var paste strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&paste, "pasted row %03d\n", i)
	}
	f.write(t, "paste.txt", strings.TrimSuffix(paste.String(), "\n"))
	tt.tmux("load-buffer", "-b", "p", filepath.Join(f.dir, "paste.txt"))
	tt.tmux("paste-buffer", "-p", "-b", "p", "-t", tt.name)
	s = tt.waitFor("[Pasted text #1 +200 lines]")
	if strings.Contains(s, "pasted row 100") {
		t.Fatalf("the paste is not collapsed:\n%s", s)
	}
	tt.keys("Enter")
	tt.waitFor("Got the paste.")
	got := f.model.lastMessages()
	for _, row := range []string{"pasted row 001", "pasted row 100", "pasted row 200"} {
		if !strings.Contains(got, row) {
			t.Fatalf("the paste did not reach the model whole (no %q):\n%.2000s", row, got)
		}
	}
	// /context: the parts of the last request add up to its total, and
	// the system prompt and memory files are the system text sent.
	tt.text("/context")
	tt.keys("Enter")
	s = tt.waitFor("Context of the last request", "  total ")
	parts := map[string]int{}
	for _, name := range []string{"system prompt", "tool schemas", "memory files", "MCP tools", "history", "total"} {
		var n int
		l := lineWith(s[strings.LastIndex(s, "Context of the last request"):], "  "+name+" ")
		if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), name)), "%d tokens", &n); err != nil {
			t.Fatalf("/context has no %s line: %q\n%s", name, l, s)
		}
		parts[name] = n
	}
	if sum := parts["system prompt"] + parts["tool schemas"] + parts["memory files"] + parts["MCP tools"] + parts["history"]; sum != parts["total"] || parts["history"] == 0 || parts["tool schemas"] == 0 {
		t.Fatalf("/context parts %v do not add up to the total", parts)
	}
	msgs, _ := f.model.request(f.model.count() - 1)["messages"].([]any)
	system, _ := msgs[0].(map[string]any)["content"].(string)
	if d := parts["system prompt"] + parts["memory files"] - (len(system)+3)/4; d < 0 || d > 1 || parts["memory files"] == 0 {
		t.Fatalf("/context's system prompt and memory files (%v) are not the %d bytes of system text sent", parts, len(system))
	}
	if !strings.Contains(lineWith(s, "  memory files "), "AGENTS.md") {
		t.Fatalf("/context does not name the memory file:\n%s", s)
	}
	// /status names the model, provider, mode, sandbox and memory file.
	tt.text("/status")
	tt.keys("Enter")
	s = tt.waitFor("Status", "  provider         local", "  permission mode  default", "  sandbox ", "  memory files ")
	if !strings.Contains(lineWith(s[strings.LastIndex(s, "Status"):], "  memory files "), "AGENTS.md") {
		t.Fatalf("/status does not list the memory file:\n%s", s)
	}

	tt.text("/exit")
	tt.keys("Enter")
	tt.waitFor("DSH-EXITED:0")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Images through the real binary: an @-mentioned PNG reaches a model that
// reads images as an image part holding the file's bytes; a dragged path
// (a paste of the file's path) becomes the same mention; a text-only
// model ("images": false in its settings) is refused the message, which
// comes back to the editor and is not sent.
func TestImageAttachmentInTmux(t *testing.T) {
	f := newTermFixture(t, `[{"id":"m"},{"id":"text","images":false}]`, chatText("A red pixel.", 10, 1))
	img := pngFile(t)
	f.write(t, "shot.png", string(img))
	tt := f.tmux(t, "--trust")
	tt.waitFor("local/m", "›")

	tt.text("describe @sho")
	tt.waitFor("› shot.png  (tab)")
	tt.keys("Tab")
	tt.keys("Enter")
	s := tt.waitFor("A red pixel.")
	if !strings.Contains(s, "attached @shot.png (png, ") {
		t.Fatalf("no attachment note:\n%s", s)
	}
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(img)
	var found bool
	msgs, _ := f.model.request(0)["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	parts, _ := last["content"].([]any)
	for _, p := range parts {
		if p, _ := p.(map[string]any); p["type"] == "image_url" {
			u, _ := p["image_url"].(map[string]any)
			found = u["url"] == want
		}
	}
	if !found {
		t.Fatalf("the request has no image part with the file's bytes: %.600s", f.model.lastMessages())
	}

	// A dragged file arrives as a paste of its path.
	f.write(t, "drop.txt", filepath.Join(f.dir, "shot.png"))
	tt.tmux("load-buffer", "-b", "d", filepath.Join(f.dir, "drop.txt"))
	tt.tmux("paste-buffer", "-p", "-b", "d", "-t", tt.name)
	tt.waitUntil(func(s string) bool { return strings.Contains(lastLines(s, 3), "› @shot.png") }, "the pasted path as a mention")
	tt.keys("C-u")

	f.refusedByTextModel(t, tt, func() { tt.text("again @shot.png please") },
		"not sent: local/text does not read images (@shot.png)", "› again @shot.png please")
}

// refusedByTextModel switches to the text-only model local/text, has
// compose type a message holding an image, sends it, and checks that it
// is refused with reason, comes back to the editor as back, and never
// reaches the model (which had one request before); then dsh exits.
func (f *termFixture) refusedByTextModel(t *testing.T, tt *tmuxTerm, compose func(), reason, back string) {
	t.Helper()
	tt.text("/model local/text")
	tt.keys("Enter")
	tt.waitFor("model set to local/text")
	compose()
	tt.keys("Enter")
	s := tt.waitFor(reason)
	if !strings.Contains(lastLines(s, 3), back) {
		t.Fatalf("the refused message is not back in the editor:\n%s", lastLines(s, 6))
	}
	if n := f.model.count(); n != 1 {
		t.Fatalf("%d requests: the refused message reached the model", n)
	}
	tt.keys("C-u")
	tt.text("/exit")
	tt.keys("Enter")
	tt.waitFor("DSH-EXITED:0")
}

// pngFile is a real 2×2 PNG.
func pngFile(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// chatCached is a streamed answer whose usage has cached prompt tokens.
func chatCached(s string, in, cached, out int) string {
	return sseBody(
		map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": s}}}},
		map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}},
			"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "prompt_tokens_details": map[string]any{"cached_tokens": cached}}},
	)
}

// One scripted usage (1,000 prompt tokens of which 400 cached, 500 out)
// priced by the settings (cache reads apart) is the same figure in
// dsh -p --output-format json's total_cost_usd and in the terminal's
// status line and /cost for that session resumed: 600 × $1,000/M +
// 400 × $100/M + 500 × $2,000/M = $1.64 ($2.00 if cache reads were
// priced as input).
func TestCostSameInJSONAndTerminalInTmux(t *testing.T) {
	f := newTermFixture(t, "", chatCached("Priced.", 1000, 400, 500))
	f.write(t, filepath.Join(f.home, "settings.json"), strings.Replace(readFile(t, filepath.Join(f.home, "settings.json")),
		`{"providers"`, `{"pricing":{"local/m":{"input":1000,"output":2000,"cacheRead":100}},"providers"`, 1))
	var res struct {
		Cost    float64 `json:"total_cost_usd"`
		Session string  `json:"session_id"`
	}
	cmd := exec.Command(f.bin, "-p", "--model", "local/m", "--output-format", "json", "price this")
	cmd.Dir = f.dir
	cmd.Env = append(os.Environ(), "DSH_HOME="+f.home, "DEEPSEEK_API_KEY=", "ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "DSH_MODEL=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("dsh -p: %v\n%s", err, out)
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if fmt.Sprintf("%.4f", res.Cost) != "1.6400" {
		t.Fatalf("total_cost_usd %v, want 1.64", res.Cost)
	}
	tt := f.tmux(t, "-r", res.Session)
	s := tt.waitFor("› price this", "Priced.", "default mode")
	if tail := lastLines(s, 2); !strings.Contains(tail, "$1.64") {
		t.Fatalf("the status line does not show total_cost_usd's $1.64:\n%s", tail)
	}
	tt.text("/cost")
	tt.keys("Enter")
	tt.waitFor("$1.64 this session (1 turn)", "in 600 · out 500 · cache read 400")
	tt.text("/exit")
	tt.keys("Enter")
	tt.waitFor("DSH-EXITED:0")
}
