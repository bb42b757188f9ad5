package acp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/acp"
	"github.com/dshq/dsh/acp/acptest"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/session"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// dshBinary builds cmd/dsh once per test run.
func dshBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dsh-acp-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "dsh")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/dsh").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("building dsh: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// e2e is one workspace and home for processes of the dsh binary.
type e2e struct {
	t     testing.TB
	model *acptest.Server
	home  string
	dir   string
	env   map[string]string
}

func newE2E(t testing.TB, model *acptest.Server) *e2e {
	home, dir := t.TempDir(), t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	env := model.Env()
	env["DSH_HOME"], env["HOME"], env["DSH_BIN"], env["DSH_CWD"] = home, home, dshBinary(t), dir
	return &e2e{t: t, model: model, home: home, dir: dir, env: env}
}

func (e *e2e) environ(extra map[string]string) []string {
	env := os.Environ()
	all := maps.Clone(e.env)
	maps.Copy(all, extra)
	for k, v := range all {
		env = append(env, k+"="+v)
	}
	return env
}

func needNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat("../node_modules/@agentclientprotocol/sdk/package.json"); err != nil {
		t.Skip("node_modules is missing (run npm ci at the repository root)")
	}
}

// node runs one scenario of testdata/client.mjs and returns its result.
func (e *e2e) node(scenario string, extra map[string]string) map[string]any {
	e.t.Helper()
	cmd := exec.Command("node", "testdata/client.mjs", scenario)
	cmd.Env = e.environ(extra)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			e.t.Fatalf("node %s: %v\nstdout %s\nstderr %s", scenario, err, stdout.String(), stderr.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		e.t.Fatalf("node %s timed out\nstdout %s\nstderr %s", scenario, stdout.String(), stderr.String())
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		e.t.Fatalf("node %s printed %q: %v (stderr %s)", scenario, stdout.String(), err, stderr.String())
	}
	if msg, ok := out["error"]; ok {
		e.t.Fatalf("node %s failed: %v\ndsh stderr: %v", scenario, msg, out["stderr"])
	}
	if ex, _ := out["exit"].(map[string]any); ex["code"] != float64(0) {
		e.t.Fatalf("dsh exited %v after the client left; stderr %v", ex, out["stderr"])
	}
	return out
}

func (e *e2e) events(id string) []session.Event {
	e.t.Helper()
	h := &harness{t: e.t, home: e.home}
	_, ev := h.events(sdkID(id))
	return ev
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func TestNodeClientStream(t *testing.T) {
	needNode(t)
	model := acptest.New(acptest.Text("Hel", "lo from ", "dsh"))
	defer model.Close()
	e := newE2E(t, model)
	out := e.node("stream", nil)
	init := out["initialize"].(map[string]any)
	if init["protocolVersion"] != float64(1) || init["agentCapabilities"].(map[string]any)["loadSession"] != true {
		t.Fatalf("initialize %v", init)
	}
	if out["stopReason"] != "end_turn" || !slices.Equal(strs(out["chunks"]), []string{"Hel", "lo from ", "dsh"}) {
		t.Fatalf("stream %v", out)
	}
	if !slices.Contains(strs(out["kinds"]), "available_commands_update") || out["usage"] == nil {
		t.Fatalf("stream %v", out)
	}
	if r := balanced(t, e.events(out["sessionId"].(string))); !slices.Equal(r, []string{"completed"}) {
		t.Fatalf("turns %v", r)
	}
}

func TestNodeClientPermission(t *testing.T) {
	needNode(t)
	model := acptest.New(
		writeCall("call_1", "out.txt", "one\n"), acptest.Text("ok"),
		writeCall("call_2", "out.txt", "two\n"), acptest.Text("done"),
	)
	defer model.Close()
	e := newE2E(t, model)
	out := e.node("permission", nil)
	if out["rejected"] != "end_turn" || out["allowed"] != "end_turn" {
		t.Fatalf("stops %v", out)
	}
	reqs := out["permissionRequests"].([]any)
	if len(reqs) != 2 {
		t.Fatalf("permission requests %v", reqs)
	}
	r0 := reqs[0].(map[string]any)
	if r0["toolCallId"] != "call_1" || r0["title"] != "Write out.txt" ||
		!slices.Equal(strs(r0["kinds"]), []string{"allow_once", "allow_always", "reject_once", "reject_always"}) {
		t.Fatalf("request %v", r0)
	}
	st := out["statuses"].(map[string]any)
	if !slices.Equal(strs(st["call_1"]), []string{"pending", "failed"}) || !slices.Equal(strs(st["call_2"]), []string{"pending", "in_progress", "completed"}) {
		t.Fatalf("statuses %v", st)
	}
	diff := out["diff"].([]any)
	if len(diff) != 1 || diff[0].(map[string]any)["type"] != "diff" || diff[0].(map[string]any)["newText"] != "two\n" {
		t.Fatalf("diff %v", diff)
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "out.txt")); string(b) != "two\n" {
		t.Fatalf("out.txt %q", b)
	}
}

func TestNodeClientCancel(t *testing.T) {
	needNode(t)
	release := make(chan struct{})
	defer close(release)
	model := acptest.New(acptest.Stall("partial", release), acptest.Text("yes"))
	defer model.Close()
	e := newE2E(t, model)
	out := e.node("cancel", nil)
	if out["stopReason"] != "cancelled" || out["after"] != "end_turn" || strs(out["chunks"])[0] != "partial" {
		t.Fatalf("cancel %v", out)
	}
	r := balanced(t, e.events(out["sessionId"].(string)))
	if !slices.Equal(r, []string{session.EndAborted, session.EndCompleted}) {
		t.Fatalf("turns %v", r)
	}
}

func TestNodeClientLoad(t *testing.T) {
	needNode(t)
	model := acptest.New(acptest.Text("Hel", "lo"))
	defer model.Close()
	e := newE2E(t, model)
	first := e.node("stream", nil)
	id := first["sessionId"].(string)
	out := e.node("load", map[string]string{"SESSION_ID": id})
	replay := out["replay"].([]any)
	var kinds []string
	var texts []string
	for _, u := range replay {
		m := u.(map[string]any)
		kinds = append(kinds, m["kind"].(string))
		if s, ok := m["text"].(string); ok {
			texts = append(texts, s)
		}
	}
	if len(kinds) < 2 || kinds[0] != "user_message_chunk" || !slices.Equal(texts[:2], []string{"say hello", "Hello"}) {
		t.Fatalf("replay %v", replay)
	}
	if !slices.Contains(strs(out["listed"]), id) {
		t.Fatalf("listed %v", out["listed"])
	}
	// The editor's session continues in the terminal front-end (headless).
	model.Push(acptest.Text("from the cli"))
	cmd := exec.Command(dshBinary(t), "-p", "--resume", id, "continue")
	cmd.Dir, cmd.Env = e.dir, e.environ(nil)
	b, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "from the cli") {
		t.Fatalf("dsh -p --resume: %v\n%s", err, b)
	}
	if r := balanced(t, e.events(id)); len(r) != 2 {
		t.Fatalf("turns %v", r)
	}
	// And the other way: a session started headless opens in the editor.
	model.Push(acptest.Text("headless ", "answer"))
	cmd = exec.Command(dshBinary(t), "-p", "--output-format", "json", "started in the terminal")
	cmd.Dir, cmd.Env = e.dir, e.environ(nil)
	b, err = cmd.Output()
	var res map[string]any
	if err != nil || json.Unmarshal(b, &res) != nil {
		t.Fatalf("dsh -p: %v %s", err, b)
	}
	out = e.node("load", map[string]string{"SESSION_ID": res["session_id"].(string)})
	texts = nil
	for _, u := range out["replay"].([]any) {
		if s, ok := u.(map[string]any)["text"].(string); ok {
			texts = append(texts, s)
		}
	}
	if !slices.Equal(texts, []string{"started in the terminal", "headless answer"}) {
		t.Fatalf("headless session replayed %v", out["replay"])
	}
}

func TestNodeClientConcurrentSessions(t *testing.T) {
	needNode(t)
	model := acptest.New()
	model.SetDefault(func(req map[string]any) acptest.Reply {
		msgs, _ := json.Marshal(req["messages"])
		if strings.Contains(string(msgs), "question B") {
			return acptest.Text("answer ", "B")
		}
		return acptest.Reply{acptest.TextDelta("answer "), {Sleep: 50 * time.Millisecond}, acptest.TextDelta("A"), acptest.Finish("stop")}
	})
	defer model.Close()
	e := newE2E(t, model)
	out := e.node("concurrent", nil)
	a, b := out["a"].(map[string]any), out["b"].(map[string]any)
	if a["stop"] != "end_turn" || a["text"] != "answer A" || b["stop"] != "end_turn" || b["text"] != "answer B" {
		t.Fatalf("concurrent %v", out)
	}
}

// rawDSH drives `dsh acp` with hand-written frames.
type rawDSH struct {
	t      testing.TB
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan string
	all    []string
	stderr bytes.Buffer
	mu     sync.Mutex
}

func (e *e2e) raw(args ...string) *rawDSH {
	r := &rawDSH{t: e.t, lines: make(chan string, 1024)}
	r.cmd = exec.Command(dshBinary(e.t), append([]string{"acp"}, args...)...)
	r.cmd.Dir, r.cmd.Env = e.dir, e.environ(nil)
	r.cmd.Stderr = &r.stderr
	in, err := r.cmd.StdinPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	r.in = in
	if err := r.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			r.mu.Lock()
			r.all = append(r.all, sc.Text())
			r.mu.Unlock()
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	return r
}

func (r *rawDSH) send(frame string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, frame+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

// until reads frames until one satisfies ok.
func (r *rawDSH) until(ok func(map[string]any) bool) map[string]any {
	r.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case line, more := <-r.lines:
			if !more {
				r.t.Fatalf("dsh closed its output; stderr %s", r.stderr.String())
			}
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && ok(m) {
				return m
			}
		case <-timeout:
			r.t.Fatalf("timed out; stderr %s", r.stderr.String())
		}
	}
}

func (r *rawDSH) response(id int) map[string]any {
	return r.until(func(m map[string]any) bool { return m["id"] == float64(id) && m["method"] == nil })
}

// close ends stdin and waits for a clean exit.
func (r *rawDSH) close() {
	r.t.Helper()
	r.in.Close()
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			r.t.Fatalf("dsh acp exited with %v; stderr %s", err, r.stderr.String())
		}
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		r.t.Fatal("dsh acp did not exit after its input closed")
	}
	for range r.lines {
	}
}

// Everything dsh writes to stdout is a JSON-RPC message, even when a tool
// writes to the dsh process's own stdout; malformed frames, unknown
// methods and unknown sessions get errors and the server keeps serving.
func TestStdoutPurityAndErrors(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("writes through /proc")
	}
	model := acptest.New(
		acptest.Tool("noisy", "bash", map[string]any{
			// The command writes straight into dsh's own fd 1 and 2 (dsh
			// is its parent's parent: the sandbox helper is in between).
			"command":     "D=$(awk '{print $4}' /proc/$PPID/stat); echo NOISE-TO-DSH-STDOUT > /proc/$D/fd/1; echo NOISE-TO-DSH-STDERR > /proc/$D/fd/2; echo tool output",
			"description": "make noise",
		}),
		acptest.Text("done"),
	)
	defer model.Close()
	e := newE2E(t, model)
	// Hooks that print, in the settings dsh reads for this user. The
	// command runs outside the sandbox: inside it, dsh's descriptors are
	// out of reach, which is the sandbox's point, not this test's.
	_ = os.WriteFile(filepath.Join(e.home, "settings.json"), []byte(`{"sandbox":{"mode":"danger-full-access"},"hooks":{"PreToolUse":[{"matcher":"","hooks":[{"type":"command","command":"echo HOOK-STDOUT; echo HOOK-STDERR >&2"}]}]}}`), 0o644)
	r := e.raw("--permission-mode", "bypassPermissions")
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	r.response(1)
	r.send(`this is not json`)
	r.until(func(m map[string]any) bool { return errCode(m) == -32700 })
	r.send(`[1,2,3]`)
	r.until(func(m map[string]any) bool { return errCode(m) == -32600 })
	r.send(`{"jsonrpc":"2.0","id":2,"method":"no/such/method","params":{}}`)
	if m := r.response(2); errCode(m) != -32601 {
		t.Fatalf("unknown method: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"no-such-session","prompt":[{"type":"text","text":"hi"}]}}`)
	if m := r.response(3); errCode(m) != -32602 {
		t.Fatalf("unknown session: %v", m)
	}
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, e.dir))
	sid := r.response(4)["result"].(map[string]any)["sessionId"].(string)
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"make noise"}]}}`, sid))
	if m := r.response(5); m["result"].(map[string]any)["stopReason"] != "end_turn" {
		t.Fatalf("prompt: %v", m)
	}
	// Still serving after all that.
	r.send(`{"jsonrpc":"2.0","id":6,"method":"session/list","params":{}}`)
	if m := r.response(6); m["result"] == nil {
		t.Fatalf("list: %v", m)
	}
	r.close()
	if len(r.all) == 0 {
		t.Fatal("no output")
	}
	for i, line := range r.all {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["jsonrpc"] != "2.0" || (m["method"] == nil && m["id"] == nil && m["error"] == nil) {
			t.Fatalf("stdout line %d is not a JSON-RPC message: %q", i, line)
		}
	}
	// (The noise text does appear on stdout, but only inside the frames that
	// show the command; the write itself went to stderr.)
	var types []string
	for _, ev := range e.events(sid) {
		types = append(types, ev.Type)
	}
	if !slices.Contains(types, "hook/invoked") {
		t.Fatalf("the printing hook did not run: %v", types)
	}
	if !strings.Contains(r.stderr.String(), "NOISE-TO-DSH-STDOUT") {
		t.Fatalf("the write to dsh's stdout did not land on stderr; stderr %q", r.stderr.String())
	}
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// TestClaimStdout checks, in a child process, that after ClaimStdout only
// the returned file reaches stdout: Go prints and inherited descriptors go
// to stderr.
func TestClaimStdout(t *testing.T) {
	if os.Getenv("DSH_CLAIM_CHILD") == "1" {
		claimChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestClaimStdout$")
	cmd.Env = append(os.Environ(), "DSH_CLAIM_CHILD=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	if got := stdout.String(); got != "frame\n" {
		t.Fatalf("stdout %q (stderr %q)", got, stderr.String())
	}
	for _, want := range []string{"fmt noise", "child noise"} {
		if !strings.Contains(stderr.String(), want) {
			t.Fatalf("stderr %q lacks %q", stderr.String(), want)
		}
	}
}

func claimChild() {
	out, err := acp.ClaimStdout()
	if err != nil {
		fmt.Fprintln(os.Stderr, "claim:", err)
		os.Exit(2)
	}
	fmt.Println("fmt noise")
	c := exec.Command("sh", "-c", "echo child noise")
	c.Stdout = os.Stdout
	_ = c.Run()
	_, _ = out.WriteString("frame\n")
	_ = out.Close()
}

func sdkID(s string) sdk.SessionId { return sdk.SessionId(s) }

// prompts runs the client's prompts scenario: prompts in one session (the
// session id loaded first when not empty), permission requests answered in
// order, extra flags for `dsh acp`.
func (e *e2e) prompts(id string, prompts, answers, flags []string) map[string]any {
	e.t.Helper()
	enc := func(v []string) string {
		if v == nil {
			v = []string{}
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	return e.node("prompts", map[string]string{"SESSION_ID": id, "PROMPTS": enc(prompts), "ANSWERS": enc(answers), "DSH_ARGS": enc(flags)})
}

// "Always allow" and "Always reject" are session rules in the log: a new
// dsh acp process that loads the session neither asks again nor runs what
// was rejected.
func TestNodeClientSessionRulesSurviveLoad(t *testing.T) {
	needNode(t)
	model := acptest.New(
		acptest.Tool("c1", "bash", map[string]any{"command": "touch one", "description": "make one"}), acptest.Text("made"),
		writeCall("c2", "x.txt", "x"), acptest.Text("not written"),
	)
	defer model.Close()
	e := newE2E(t, model)
	// Unsandboxed, so the command asks (a sandboxed one would run without).
	unsandboxed := []string{"--sandbox", "danger-full-access"}
	first := e.prompts("", []string{"make one", "write x"}, []string{"allow_always", "reject_always"}, unsandboxed)
	id := first["sessionId"].(string)
	reqs := first["permissionRequests"].([]any)
	if len(reqs) != 2 || reqs[0].(map[string]any)["sessionRules"] == nil {
		t.Fatalf("first process: requests %v", reqs)
	}
	// The answers are in the log, as permission/rule events of the session.
	var rules []string
	for _, ev := range e.events(id) {
		if ev.Type == permission.EventRule {
			r, err := session.Decode[permission.RuleEvent](ev)
			if err != nil {
				t.Fatal(err)
			}
			rules = append(rules, string(r.Behavior)+" "+r.Rule)
		}
	}
	if len(rules) != 2 || !strings.HasPrefix(rules[0], "allow Bash(") || rules[1] != "deny write" {
		t.Fatalf("session rules in the log: %q", rules)
	}
	if err := os.Remove(filepath.Join(e.dir, "one")); err != nil {
		t.Fatal(err)
	}

	model.Push(acptest.Tool("c3", "bash", map[string]any{"command": "touch one", "description": "make one"}), acptest.Text("made again"))
	model.Push(writeCall("c4", "y.txt", "y"), acptest.Text("refused"))
	second := e.prompts(id, []string{"make one again", "write y"}, nil, unsandboxed)
	if reqs := second["permissionRequests"].([]any); len(reqs) != 0 {
		t.Fatalf("a new process asked again after session/load: %v", reqs)
	}
	st := second["statuses"].(map[string]any)
	if !slices.Equal(strs(st["c3"]), []string{"pending", "in_progress", "completed"}) || !slices.Equal(strs(st["c4"]), []string{"pending", "failed"}) {
		t.Fatalf("statuses %v", st)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "one")); err != nil {
		t.Fatalf("the allowed command did not run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "y.txt")); !os.IsNotExist(err) {
		t.Fatalf("y.txt written despite always reject: %v", err)
	}
}

// session/load replays whole messages, as the reference client receives
// them: text and reasoning as one chunk per block, a call as one tool_call
// with its final status and content (no tool_call_update), the user's
// prompts, one usage update; by default only since the last compaction,
// after a note of what it summarized, and everything with
// _meta {"dsh": {"replay": "full"}}.
func TestNodeClientReplayWholeMessages(t *testing.T) {
	needNode(t)
	notes := strings.Repeat("a line of notes long enough to be worth summarizing\n", 40)
	call := writeCall("w1", "notes.txt", notes)
	// The second answer is a quarter of the history, so /compact keeps
	// that turn and summarizes the first.
	filler := strings.Repeat(" filler", 150)
	first := acptest.Reply{call[0], acptest.ReasoningDelta("Let me "), acptest.ReasoningDelta("think."),
		acptest.TextDelta("Writing "), acptest.TextDelta("notes."), call[1], call[2]}
	model := acptest.New(first, acptest.Text("Wr", "ote ", "them."), acptest.Text("Sec", "ond.", filler),
		acptest.Text("Goal: notes written."), acptest.Text("Af", "ter."))
	defer model.Close()
	e := newE2E(t, model)
	run := e.prompts("", []string{"write notes", "second", "/compact", "third"}, []string{"allow_once"}, nil)
	id := run["sessionId"].(string)
	if st := strs(run["stops"]); !slices.Equal(st, []string{"end_turn", "end_turn", "end_turn", "end_turn"}) {
		t.Fatalf("stops %v", st)
	}
	// What each update says, in order.
	summary := func(us []any) []string {
		var out []string
		for _, u := range us {
			m := u.(map[string]any)
			s := m["sessionUpdate"].(string)
			if c, ok := m["content"].(map[string]any); ok {
				s += " " + fmt.Sprint(c["text"])
			}
			if id, ok := m["toolCallId"]; ok {
				s += fmt.Sprintf(" %v %v", id, m["status"])
			}
			out = append(out, s)
		}
		return out
	}
	full := e.node("replay", map[string]string{"SESSION_ID": id, "REPLAY": "full"})["updates"].([]any)
	want := []string{
		"user_message_chunk write notes",
		"agent_thought_chunk Let me think.",
		"agent_message_chunk Writing notes.",
		"tool_call w1 completed",
		"agent_message_chunk Wrote them.",
		"user_message_chunk second",
		"agent_message_chunk Second." + filler,
		"user_message_chunk third",
		"agent_message_chunk After.",
	}
	if got := summary(full); !slices.Equal(trimUsage(got), want) {
		t.Fatalf("full replay\n got %q\nwant %q\nsaid %q", got, want, run["said"])
	}
	// The call's one card carries what the updates said: its diff.
	for _, u := range full {
		m := u.(map[string]any)
		if m["sessionUpdate"] != "tool_call" {
			continue
		}
		c, _ := m["content"].([]any)
		if len(c) != 1 || c[0].(map[string]any)["type"] != "diff" || c[0].(map[string]any)["newText"] != notes || m["kind"] != "edit" {
			t.Fatalf("tool_call card %v", m)
		}
	}

	since := e.node("replay", map[string]string{"SESSION_ID": id})["updates"].([]any)
	got := summary(since)
	if len(got) == 0 || !strings.HasPrefix(got[0], "agent_message_chunk Earlier history of this session was compacted") || !strings.Contains(got[0], "Goal: notes written.") {
		var types []string
		for _, ev := range e.events(id) {
			types = append(types, fmt.Sprintf("%d:%s:%v:%v", ev.Seq, ev.Type, ev.SurfaceOp, ev.SourceEventSeqs))
		}
		t.Fatalf("replay since the compaction starts %q\nsaid %v\nlog %v", got, run["said"], types)
	}
	note := since[0].(map[string]any)["_meta"].(map[string]any)["dsh"].(map[string]any)["compaction"].(map[string]any)
	if note["summarizedMessages"].(float64) < 1 {
		t.Fatalf("compaction note meta %v", note)
	}
	if want := []string{"user_message_chunk second", "agent_message_chunk Second." + filler, "user_message_chunk third", "agent_message_chunk After."}; !slices.Equal(trimUsage(got[1:]), want) {
		t.Fatalf("replay since the compaction\n got %q\nwant %q", got, want)
	}
	// The cost of the turns not replayed is summed apart: the one usage
	// update carries the whole session's, the same as the full replay's.
	costs := func(us []any) []string {
		var out []string
		for _, u := range us {
			if m := u.(map[string]any); m["sessionUpdate"] == "usage_update" {
				out = append(out, fmt.Sprint(m["cost"]))
			}
		}
		return out
	}
	fc, sc := costs(full), costs(since)
	if len(fc) != 1 || fc[0] == "<nil>" || !slices.Equal(sc, fc) {
		t.Fatalf("usage costs: full replay %v, since the compaction %v", fc, sc)
	}
}

// trimUsage drops what a load sends beside the replay (the command list,
// the title) and the usage updates at its end.
func trimUsage(s []string) []string {
	var out []string
	usage := 0
	for _, k := range s {
		switch k {
		case "available_commands_update", "session_info_update":
			continue
		case "usage_update":
			usage++
			continue
		}
		if usage > 0 {
			return append(out, "usage_update before "+k)
		}
		out = append(out, k)
	}
	return out
}
