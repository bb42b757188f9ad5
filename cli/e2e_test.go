package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var dshBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dsh-e2e-")
	if err != nil {
		panic(err)
	}
	dshBin = filepath.Join(dir, "dsh")
	// The dshtest tag adds one test switch, off unless a test sets it:
	// DSH_TEST_PERMISSION=allow forces the permission layer's decisions to
	// allow, so the sandbox's escape tests meet only the kernel.
	out, err := exec.Command("go", "build", "-tags", "dshtest", "-o", dshBin, "../cmd/dsh").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building dsh: %v\n%s", err, out)
		os.Exit(1)
	}
	// The terminal tests of package cli (same test binary) run this one
	// binary instead of building their own — or the DSH_TEST_BIN given, to
	// see them fail on an older build.
	if os.Getenv("DSH_TEST_BIN") == "" {
		os.Setenv("DSH_TEST_BIN", dshBin)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// deepseek is a loopback server speaking DeepSeek's Chat Completions SSE.
// Each request gets the next scripted reply; requests are recorded.
type deepseek struct {
	mu       sync.Mutex
	replies  []string // each a full SSE body
	requests []map[string]any
	key      string // the API key it expects ("" is test-key)
}

// setReplies replaces the script; the server's goroutines read it under
// d.mu (a plain write after the server started is a data race: the race
// detector sees no order through the dsh process and its connection).
func (d *deepseek) setReplies(replies ...string) {
	d.mu.Lock()
	d.replies = replies
	d.mu.Unlock()
}

func (d *deepseek) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := d.key
	if key == "" {
		key = "test-key"
	}
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") || r.Header.Get("Authorization") != "Bearer "+key {
		http.Error(w, `{"error":{"message":"bad request path or key","type":"invalid_request_error"}}`, http.StatusUnauthorized)
		return
	}
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	d.mu.Lock()
	d.requests = append(d.requests, body)
	var reply string
	if len(d.replies) > 0 {
		reply, d.replies = d.replies[0], d.replies[1:]
	}
	d.mu.Unlock()
	if reply == "" {
		http.Error(w, `{"error":{"message":"script exhausted"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, reply)
}

func sse(chunks ...map[string]any) string {
	var b strings.Builder
	for _, c := range chunks {
		c["id"], c["object"], c["model"] = "chatcmpl-1", "chat.completion.chunk", "deepseek-chat"
		j, _ := json.Marshal(c)
		b.WriteString("data: " + string(j) + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

func toolReply(id, name string, args any) string {
	a, _ := json.Marshal(args)
	return sse(
		map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}}}},
		map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{map[string]any{
			"index": 0, "id": id, "type": "function", "function": map[string]any{"name": name, "arguments": string(a)}}}}}}},
		map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "tool_calls"}},
			"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110, "prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 36}},
	)
}

func textReply(s string) string {
	return sse(
		map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": s[:len(s)/2]}}}},
		map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": s[len(s)/2:]}, "finish_reason": "stop"}},
			"usage": map[string]any{"prompt_tokens": 120, "completion_tokens": 5, "total_tokens": 125}},
	)
}

type run struct {
	stdout, stderr string
	code           int
}

func dsh(t *testing.T, dir, home, baseURL string, stdin string, args ...string) run {
	t.Helper()
	return invocation{dir: dir, home: home, baseURL: baseURL, stdin: stdin}.run(t, args...)
}

// The end-to-end: a multi-step tool turn (bash, read, edit, final
// answer) headless against a DeepSeek-format server, in every output format,
// then --continue.
func TestHeadlessToolTurn(t *testing.T) {
	for _, format := range []string{"text", "json", "stream-json"} {
		t.Run(format, func(t *testing.T) {
			dir, home := t.TempDir(), t.TempDir()
			ds := &deepseek{replies: []string{
				toolReply("call_1", "bash", map[string]string{"command": "printf 'hello world\\n' > notes.txt", "description": "create notes"}),
				toolReply("call_2", "read", map[string]string{"file_path": "notes.txt"}),
				toolReply("call_3", "edit", map[string]string{"file_path": "notes.txt", "old_string": "hello", "new_string": "goodbye"}),
				textReply("All done: notes.txt now says goodbye."),
			}}
			srv := httptest.NewServer(ds)
			defer srv.Close()
			r := dsh(t, dir, home, srv.URL, "", "-p", "--model", "deepseek/deepseek-chat", "--output-format", format,
				"--allowedTools", "Bash(printf:*) Edit", "change hello to goodbye in notes.txt")
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
			}
			b, err := os.ReadFile(filepath.Join(dir, "notes.txt"))
			if err != nil || string(b) != "goodbye world\n" {
				t.Fatalf("notes.txt = %q, %v", b, err)
			}
			var sessionID string
			switch format {
			case "text":
				if strings.TrimSpace(r.stdout) != "All done: notes.txt now says goodbye." {
					t.Fatalf("stdout %q", r.stdout)
				}
			case "json":
				var res map[string]any
				if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
					t.Fatalf("json output: %v\n%s", err, r.stdout)
				}
				if res["result"] != "All done: notes.txt now says goodbye." || res["terminal_reason"] != "completed" || res["num_turns"].(float64) != 4 {
					t.Fatalf("result %v", res)
				}
				u := res["usage"].(map[string]any)
				if u["cache_read_input_tokens"].(float64) != 3*64 {
					t.Fatalf("usage %v", u)
				}
				sessionID = res["session_id"].(string)
			case "stream-json":
				sc := bufio.NewScanner(strings.NewReader(r.stdout))
				sc.Buffer(make([]byte, 1<<20), 1<<20)
				var types []string
				var last map[string]any
				for sc.Scan() {
					var line map[string]any
					if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
						t.Fatalf("line is not JSON: %v: %s", err, sc.Text())
					}
					types = append(types, line["type"].(string))
					last = line
				}
				want := []string{"system", "assistant", "user", "assistant", "user", "assistant", "user", "assistant", "result"}
				if strings.Join(types, " ") != strings.Join(want, " ") || last["subtype"] != "success" {
					t.Fatalf("stream types %v (want %v)", types, want)
				}
				sessionID = last["session_id"].(string)
			}
			// The tool results reached the model in later requests.
			ds.mu.Lock()
			reqs := ds.requests
			ds.mu.Unlock()
			if len(reqs) != 4 {
				t.Fatalf("%d requests", len(reqs))
			}
			msgs, _ := json.Marshal(reqs[3]["messages"])
			if !strings.Contains(string(msgs), `"role":"tool"`) || !strings.Contains(string(msgs), "call_3") {
				t.Fatalf("request 4 messages %s", msgs)
			}
			// The session is on disk.
			ls := dsh(t, dir, home, srv.URL, "", "sessions", "--json")
			if ls.code != 0 || !strings.Contains(ls.stdout, "change hello to goodbye") {
				t.Fatalf("sessions: %+v", ls)
			}
			if sessionID == "" {
				return
			}
			// --continue appends a new turn to the same session.
			ds.mu.Lock()
			ds.replies = []string{textReply("Second turn here.")}
			ds.mu.Unlock()
			c := dsh(t, dir, home, srv.URL, "what did you change?", "-p", "-c", "--model", "deepseek/deepseek-chat", "--output-format", "json")
			if c.code != 0 {
				t.Fatalf("continue: %+v", c)
			}
			var res map[string]any
			_ = json.Unmarshal([]byte(c.stdout), &res)
			if res["session_id"] != sessionID || res["result"] != "Second turn here." {
				t.Fatalf("continue result %v (want session %s)", res, sessionID)
			}
			ds.mu.Lock()
			last := ds.requests[len(ds.requests)-1]
			ds.mu.Unlock()
			hist, _ := json.Marshal(last["messages"])
			if !strings.Contains(string(hist), "change hello to goodbye") || !strings.Contains(string(hist), "what did you change?") {
				t.Fatalf("continued history %s", hist)
			}
			show := dsh(t, dir, home, srv.URL, "", "sessions", "show", sessionID)
			if !strings.Contains(show.stdout, "what did you change?") || !strings.Contains(show.stdout, "● edit") {
				t.Fatalf("show: %s", show.stdout)
			}
			exp := dsh(t, dir, home, srv.URL, "", "sessions", "export", sessionID)
			if !strings.HasPrefix(exp.stdout, `{"type":"session"`) {
				t.Fatalf("export: %.200s", exp.stdout)
			}
		})
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Bad settings, a missing key, an unreachable provider and an unknown model
// each give one clear message and a non-zero exit, never a stack trace.
func TestHeadlessFailures(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	check := func(name string, r run, code int, want string) {
		t.Helper()
		if r.code != code || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "goroutine") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("%s: exit %d stderr %q (want exit %d containing %q)", name, r.code, r.stderr, code, want)
		}
	}
	os.MkdirAll(filepath.Join(dir, ".dsh"), 0o755)
	os.WriteFile(filepath.Join(dir, ".dsh", "settings.json"), []byte(`{"modle":"x"}`), 0o644)
	check("bad settings", dsh(t, dir, home, "http://127.0.0.1:1", "", "-p", "hi"), 2, `settings.json: modle: unknown key (did you mean "model"?)`)
	os.Remove(filepath.Join(dir, ".dsh", "settings.json"))

	cmd := exec.Command(dshBin, "-p", "hi")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DSH_HOME="+home, "DEEPSEEK_API_KEY=", "ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "DSH_MODEL=")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	ee, _ := err.(*exec.ExitError)
	check("missing key", run{stderr: errb.String(), code: ee.ExitCode()}, 2, "no model is configured")

	check("unknown model", dsh(t, dir, home, "http://127.0.0.1:1", "", "-p", "--model", "nope/nothing", "hi"), 2, `unknown model "nope/nothing"`)
	r := dsh(t, dir, home, "http://127.0.0.1:1", "", "-p", "--model", "deepseek/deepseek-chat", "hi")
	if r.code != 1 || !strings.Contains(strings.ToLower(r.stderr), "deepseek") {
		t.Errorf("unreachable provider: exit %d stderr %q", r.code, r.stderr)
	}
}

// Headless runs have no approver: a call that would ask fails closed with a
// reason the model reads, and nothing is written.
func TestHeadlessAskFailsClosed(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	ds := &deepseek{replies: []string{
		toolReply("call_1", "bash", map[string]string{"command": "printf 'x' > made.txt", "description": "write"}),
		textReply("I could not run it."),
	}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	// Outside the sandbox nothing confines the command, so it asks.
	r := dsh(t, dir, home, srv.URL, "", "-p", "--sandbox", "danger-full-access", "--model", "deepseek/deepseek-chat", "make a file")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "made.txt")); err == nil {
		t.Fatal("the command ran without approval")
	}
	ds.mu.Lock()
	msgs, _ := json.Marshal(ds.requests[1]["messages"])
	ds.mu.Unlock()
	if !strings.Contains(string(msgs), "no approver is attached") {
		t.Fatalf("the model must read why: %s", msgs)
	}
	// bypassPermissions from the command line runs it.
	ds.mu.Lock()
	ds.replies = []string{toolReply("call_1", "bash", map[string]string{"command": "printf 'x' > made.txt", "description": "write"}), textReply("done")}
	ds.mu.Unlock()
	r = dsh(t, dir, home, srv.URL, "", "-p", "--sandbox", "danger-full-access", "--model", "deepseek/deepseek-chat", "--permission-mode", "bypassPermissions", "make a file")
	if _, err := os.Stat(filepath.Join(dir, "made.txt")); err != nil || r.code != 0 {
		t.Fatalf("bypass did not run it: %+v", r)
	}
}

// The same Claude Code hook file drives dsh -p: a PreToolUse guard blocks
// rm -rf once the project is trusted, and is ignored before that.
func TestHeadlessProjectHooks(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	guard, _ := filepath.Abs("../hooks/testdata/guard.sh")
	os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
	cfg := `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"` + guard + `"}]}]}}`
	os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(cfg), 0o644)
	script := func() []string {
		return []string{toolReply("call_1", "bash", map[string]string{"command": "rm -rf victim", "description": "clean"}), textReply("ok")}
	}
	os.MkdirAll(filepath.Join(dir, "victim"), 0o755)
	ds := &deepseek{replies: script()}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	// Trusted: the hook blocks the command (bypass mode would otherwise run it).
	r := dsh(t, dir, home, srv.URL, "", "-p", "--trust", "--permission-mode", "bypassPermissions", "--model", "deepseek/deepseek-chat", "clean up")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "victim")); err != nil {
		t.Fatal("the trusted guard hook did not block rm -rf")
	}
	ds.mu.Lock()
	msgs, _ := json.Marshal(ds.requests[1]["messages"])
	ds.requests = nil
	ds.replies = script()
	ds.mu.Unlock()
	if !strings.Contains(string(msgs), "rm -rf is not allowed") {
		t.Fatalf("hook reason missing: %s", msgs)
	}
	// Changing the hook file revokes trust: without --trust the project's
	// hooks are ignored (and dsh says so).
	os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(strings.Replace(cfg, "Bash", "Bash|Edit", 1)), 0o644)
	r = dsh(t, dir, home, srv.URL, "", "-p", "--permission-mode", "bypassPermissions", "--model", "deepseek/deepseek-chat", "clean up")
	if !strings.Contains(r.stderr, "ignoring this project's settings") {
		t.Fatalf("stderr %q", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "victim")); err == nil {
		t.Fatal("an untrusted project's hook must not run (so rm -rf ran in bypass mode)")
	}
}

// A subagent's transcript is stored with lineage, and `dsh sessions show`
// of the parent includes it.
func TestHeadlessSubagentLineage(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	ds := &deepseek{replies: []string{
		toolReply("call_1", "task", map[string]string{"description": "look around", "prompt": "CHILD-TASK: list nothing, just answer"}),
		textReply("child says hi"),
		textReply("parent done"),
	}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := dsh(t, dir, home, srv.URL, "", "-p", "--model", "deepseek/deepseek-chat", "--allowedTools", "task", "--output-format", "json", "delegate")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	var res map[string]any
	json.Unmarshal([]byte(r.stdout), &res)
	id, _ := res["session_id"].(string)
	show := dsh(t, dir, home, srv.URL, "", "sessions", "show", id)
	if !strings.Contains(show.stdout, "subagent session") || !strings.Contains(show.stdout, "CHILD-TASK") || !strings.Contains(show.stdout, "child says hi") {
		t.Fatalf("show: %s", show.stdout)
	}
}

// enabledPlugins switches optional plugins off: their tools leave the
// model's tool list.
func TestEnabledPlugins(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	ds := &deepseek{replies: []string{textReply("ok"), textReply("ok")}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	toolNames := func(req map[string]any) string {
		b, _ := json.Marshal(req["tools"])
		return string(b)
	}
	if r := dsh(t, dir, home, srv.URL, "", "-p", "--model", "deepseek/deepseek-chat", "hi"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	os.WriteFile(filepath.Join(home, "settings.json"), []byte(`{"enabledPlugins":{"web":false,"subagents":false}}`), 0o644)
	if r := dsh(t, dir, home, srv.URL, "", "-p", "--model", "deepseek/deepseek-chat", "hi"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	on, off := toolNames(ds.requests[0]), toolNames(ds.requests[1])
	if !strings.Contains(on, `"web_fetch"`) || !strings.Contains(on, `"task"`) {
		t.Fatalf("default tools %s", on)
	}
	if strings.Contains(off, `"web_fetch"`) || strings.Contains(off, `"task"`) || !strings.Contains(off, `"bash"`) {
		t.Fatalf("tools with plugins off %s", off)
	}
}

// TestHeadlessSQLiteStore: "sessionStore": "sqlite" in the user's settings
// puts sessions in $DSH_HOME/sessions.db for every front door (headless
// runs, --continue, `dsh sessions`); the same key in a project's settings
// is ignored, since a repository must not move the user's sessions.
func TestHeadlessSQLiteStore(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(`{"sessionStore": "sqlite"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ds := &deepseek{replies: []string{textReply("first answer"), textReply("second answer")}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := dsh(t, dir, home, srv.URL, "", "-p", "--model", "deepseek/deepseek-chat", "--output-format", "json", "remember the word kumquat")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	id, _ := res["session_id"].(string)
	if _, err := os.Stat(filepath.Join(home, "sessions.db")); err != nil || id == "" {
		t.Fatalf("no SQLite store after a run (session %q): %v", id, err)
	}
	logs, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*.jsonl"))
	if len(logs) != 0 {
		t.Fatalf("JSONL logs written with the SQLite store chosen: %v", logs)
	}
	c := dsh(t, dir, home, srv.URL, "what was the word?", "-p", "-c", "--model", "deepseek/deepseek-chat", "--output-format", "json")
	if err := json.Unmarshal([]byte(c.stdout), &res); err != nil || c.code != 0 || res["session_id"] != id {
		t.Fatalf("continue: %+v", c)
	}
	ds.mu.Lock()
	hist, _ := json.Marshal(ds.requests[len(ds.requests)-1]["messages"])
	ds.mu.Unlock()
	if !strings.Contains(string(hist), "kumquat") {
		t.Fatalf("the continued session lost its history: %s", hist)
	}
	ls := dsh(t, dir, home, srv.URL, "", "sessions", "--json")
	if ls.code != 0 || !strings.Contains(ls.stdout, id) || !strings.Contains(ls.stdout, "remember the word kumquat") {
		t.Fatalf("sessions: %+v", ls)
	}
	show := dsh(t, dir, home, srv.URL, "", "sessions", "show", id)
	if !strings.Contains(show.stdout, "what was the word?") || !strings.Contains(show.stdout, "second answer") {
		t.Fatalf("show: %s", show.stdout)
	}

	// A project asking for SQLite does not get it.
	proj, home2 := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(proj, ".dsh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, ".dsh", "settings.json"), []byte(`{"sessionStore": "sqlite"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ds.mu.Lock()
	ds.replies = []string{textReply("project answer")}
	ds.mu.Unlock()
	p := dsh(t, proj, home2, srv.URL, "", "-p", "--trust", "--model", "deepseek/deepseek-chat", "hi")
	if p.code != 0 {
		t.Fatalf("project run: %+v", p)
	}
	if _, err := os.Stat(filepath.Join(home2, "sessions.db")); err == nil {
		t.Fatal("a project's settings moved the user's sessions to SQLite")
	}
	if logs, _ := filepath.Glob(filepath.Join(home2, "sessions", "*", "*.jsonl")); len(logs) != 1 {
		t.Fatalf("JSONL logs %v, want the one session", logs)
	}
}

// TestSessionsCopyBetweenStores: switching to SQLite, `dsh sessions copy`
// brings the JSONL sessions along (once: a second copy finds them there),
// and a copied session continues with its history.
func TestSessionsCopyBetweenStores(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	ds := &deepseek{replies: []string{textReply("one"), textReply("two"), textReply("three")}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	for _, prompt := range []string{"first prompt about figs", "second prompt about dates"} {
		if r := dsh(t, dir, home, srv.URL, "", "-p", "--model", "deepseek/deepseek-chat", prompt); r.code != 0 {
			t.Fatalf("run: %+v", r)
		}
	}
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(`{"sessionStore": "sqlite"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if ls := dsh(t, dir, home, srv.URL, "", "sessions"); !strings.Contains(ls.stdout, "no sessions yet") {
		t.Fatalf("the new store is not empty: %+v", ls)
	}
	cp := dsh(t, dir, home, srv.URL, "", "sessions", "copy")
	if cp.code != 0 || !strings.Contains(cp.stdout, "copied 2 sessions from jsonl to sqlite (0 already there, 0 failed)") {
		t.Fatalf("copy: %+v", cp)
	}
	again := dsh(t, dir, home, srv.URL, "", "sessions", "copy", "--from", "jsonl")
	if again.code != 0 || !strings.Contains(again.stdout, "copied 0 sessions from jsonl to sqlite (2 already there, 0 failed)") {
		t.Fatalf("second copy: %+v", again)
	}
	if bad := dsh(t, dir, home, srv.URL, "", "sessions", "copy", "--from", "sqlite"); bad.code != 2 || !strings.Contains(bad.stderr, "--from and --to are both sqlite") {
		t.Fatalf("copy from the store in use: %+v", bad)
	}
	ls := dsh(t, dir, home, srv.URL, "", "sessions")
	if !strings.Contains(ls.stdout, "first prompt about figs") || !strings.Contains(ls.stdout, "second prompt about dates") {
		t.Fatalf("copied sessions not listed: %s", ls.stdout)
	}
	c := dsh(t, dir, home, srv.URL, "and then?", "-p", "-c", "--model", "deepseek/deepseek-chat")
	if c.code != 0 || strings.TrimSpace(c.stdout) != "three" {
		t.Fatalf("continue: %+v", c)
	}
	ds.mu.Lock()
	hist, _ := json.Marshal(ds.requests[len(ds.requests)-1]["messages"])
	ds.mu.Unlock()
	if !strings.Contains(string(hist), "second prompt about dates") {
		t.Fatalf("the continued copy lost its history: %s", hist)
	}
}

// TestResumeElsewhereKeepsProjectUntrusted: resuming, from a clean
// directory, a session recorded in an untrusted project must not run that
// project's hooks (they are read from the session's directory).
func TestResumeElsewhereKeepsProjectUntrusted(t *testing.T) {
	evil, clean, home := t.TempDir(), t.TempDir(), t.TempDir()
	marker := filepath.Join(t.TempDir(), "PWNED")
	if err := os.MkdirAll(filepath.Join(evil, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	hook := `{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"touch ` + marker + `"}]}]}}`
	if err := os.WriteFile(filepath.Join(evil, ".claude", "settings.json"), []byte(hook), 0o600); err != nil {
		t.Fatal(err)
	}
	ds := &deepseek{replies: []string{textReply("one"), textReply("two")}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := dsh(t, evil, home, srv.URL, "", "-p", "--model", "deepseek/deepseek-chat", "--output-format", "json", "hi")
	var res map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 {
		t.Fatalf("first run: %+v", r)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the untrusted project's hook ran in its own directory")
	}
	id, _ := res["session_id"].(string)
	r = dsh(t, clean, home, srv.URL, "", "-p", "--model", "deepseek/deepseek-chat", "-r", id, "again")
	if r.code != 0 {
		t.Fatalf("resume: %+v", r)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("resuming from a clean directory ran the untrusted project's hook")
	}
}

// TestHeadlessInterruptWhileMCPStarts: SIGINT while an MCP server is still
// starting (and the model has not answered) exits with the documented
// "cancelled" code.
func TestHeadlessInterruptWhileMCPStarts(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	arg := fmt.Sprintf("97.%d", os.Getpid()%1000) // a sleep only this test starts
	cfg := `{"mcpServers":{"slow":{"command":"sleep","args":["` + arg + `"]}}}`
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{}, 1)
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hold)
	cmd := exec.Command(dshBin, "-p", "--model", "deepseek/deepseek-chat", "hi")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DSH_HOME="+home, "DEEPSEEK_API_KEY=test-key", "DEEPSEEK_BASE_URL="+srv.URL, "DSH_MODEL=")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The prompt reaches the model while the MCP server is still starting:
	// a server that never answers does not hold the first request up.
	select {
	case <-asked:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the first request never reached the model")
	}
	if !childRuns(cmd.Process.Pid, "sleep\x00"+arg) {
		t.Error("the MCP server was not started, or not in the background")
	}
	_ = cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	ee, _ := err.(*exec.ExitError)
	if ee == nil || ee.ExitCode() != 3 {
		t.Fatalf("exit %v, want 3 (cancelled); stderr %q", err, errb.String())
	}
	if !strings.Contains(errb.String(), `server "slow" is still starting`) {
		t.Errorf("stderr does not say the server is still starting: %q", errb.String())
	}
}

// childRuns reports whether a child of pid runs the given command line
// (NUL-separated arguments, as in /proc/PID/cmdline).
func childRuns(pid int, cmdline string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.HasPrefix(string(b), cmdline) {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}

// TestHeadlessDemoChosenByName: the offline demo chosen by DSH_MODEL (not
// only by --model) runs headless; without any choice it is refused.
func TestHeadlessDemoChosenByName(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	run := func(env ...string) (string, int) {
		cmd := exec.Command(dshBin, "-p", "hello")
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), "DSH_HOME="+home, "DEEPSEEK_API_KEY=", "ANTHROPIC_API_KEY=", "OPENAI_API_KEY="), env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return string(out), code
	}
	if out, code := run("DSH_MODEL=demo"); code != 0 {
		t.Fatalf("DSH_MODEL=demo: exit %d: %s", code, out)
	}
	if out, code := run("DSH_MODEL="); code != 2 || !strings.Contains(out, "no model is configured") {
		t.Fatalf("no model: exit %d: %s", code, out)
	}
	// Resuming a session that does not exist is a usage error: nothing ran.
	rc := exec.Command(dshBin, "-p", "-r", "no-such-session", "hello")
	rc.Dir = dir
	rc.Env = append(os.Environ(), "DSH_HOME="+home, "DSH_MODEL=demo")
	if out, err := rc.CombinedOutput(); err == nil || err.(*exec.ExitError).ExitCode() != 2 || !strings.Contains(string(out), `no session "no-such-session"`) {
		t.Fatalf("-r of an unknown session: %v %s", err, out)
	}
	cmd := exec.Command(dshBin, "-p")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DSH_HOME="+home, "DSH_MODEL=demo")
	cmd.Stdin = strings.NewReader("\x00\x00\n")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "no prompt") {
		t.Fatalf("NUL-only stdin: %v %s", err, out)
	}
}

// TestSettingsEnvReachesCommands: the settings' "env" is in the bash
// tool's environment, as the README promises.
func TestSettingsEnvReachesCommands(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(`{"env":{"DSH_TEST_FOO":"from-settings"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ds := &deepseek{replies: []string{
		toolReply("call_1", "bash", map[string]string{"command": "echo FOO=[$DSH_TEST_FOO]", "description": "show it"}),
		textReply("done"),
	}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := dsh(t, dir, home, srv.URL, "", "-p", "--model", "deepseek/deepseek-chat", "--allowedTools", "Bash(echo:*)", "show the variable")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	ds.mu.Lock()
	msgs, _ := json.Marshal(ds.requests[len(ds.requests)-1]["messages"])
	ds.mu.Unlock()
	if !strings.Contains(string(msgs), "FOO=[from-settings]") {
		t.Fatalf("the command did not see the settings' env: %s", msgs)
	}
}
