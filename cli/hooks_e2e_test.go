//go:build linux

package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Real hook scripts of each style (bash + jq, Python, Node) through the
// real binary, configured as Claude Code users configure them.

func hookScript(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "hooks", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed (scripts/test.sh installs it)", name)
	}
}

// claudeHooks writes a project's .claude/settings.json with hooks.
func claudeHooks(t *testing.T, dir string, hooks map[string]any) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"hooks": hooks})
	os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func group(matcher string, hooks ...map[string]any) []any {
	g := map[string]any{"hooks": hooks}
	if matcher != "" {
		g["matcher"] = matcher
	}
	return []any{g}
}

func command(cmd string, extra ...any) map[string]any {
	h := map[string]any{"type": "command", "command": cmd}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i].(string)] = extra[i+1]
	}
	return h
}

func requests(ds *deepseek) int {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	return len(ds.requests)
}

// A Stop hook that reads the transcript (bash + jq, the way Claude Code's
// loop hooks do) keeps the agent going until its last message has the
// marker: exactly three model requests for an answer that arrives third.
func TestHookTranscriptStopLoop(t *testing.T) {
	needTool(t, "jq")
	dir, home := t.TempDir(), t.TempDir()
	claudeHooks(t, dir, map[string]any{"Stop": group("", command("MARKER=ALL-DONE-7 "+hookScript(t, "until_marker.sh")))})
	ds := &deepseek{replies: []string{textReply("working on it"), textReply("still going"), textReply("finished: ALL-DONE-7"), textReply("never")}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := dsh(t, dir, home, srv.URL, "", "-p", "--trust", "--model", "deepseek/deepseek-chat", "--output-format", "json", "do the thing")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	if n := requests(ds); n != 3 {
		t.Fatalf("%d model requests, want exactly 3", n)
	}
	var res map[string]any
	json.Unmarshal([]byte(r.stdout), &res)
	if res["result"] != "finished: ALL-DONE-7" {
		t.Fatalf("result %v", res["result"])
	}
	ds.mu.Lock()
	msgs, _ := json.Marshal(ds.requests[1]["messages"])
	ds.mu.Unlock()
	if !strings.Contains(string(msgs), "Not finished: say ALL-DONE-7") {
		t.Fatalf("the hook's reason did not reach the model: %s", msgs)
	}
	// The transcript the hook read is the session's, in Claude Code's format.
	id, _ := res["session_id"].(string)
	b, err := os.ReadFile(filepath.Join(home, "transcripts", id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte(`"role":"assistant"`)); n != 3 {
		t.Fatalf("%d assistant lines in the transcript, want 3:\n%s", n, b)
	}
}

// A PostToolUse formatter in Python keyed on the absolute
// tool_response.filePath rewrites the file after Write and after Edit
// (the model gave a relative path both times); a Codex hook matching
// Edit|Write fires for both as well.
func TestHookFormatterOnWriteAndEdit(t *testing.T) {
	needTool(t, "python3")
	dir, home := t.TempDir(), t.TempDir()
	logf := filepath.Join(t.TempDir(), "format.log")
	codexLog := filepath.Join(t.TempDir(), "codex.log")
	claudeHooks(t, dir, map[string]any{"PostToolUse": group("Write|Edit", command("FORMAT_LOG="+logf+" "+hookScript(t, "format.py")))})
	os.MkdirAll(filepath.Join(dir, ".codex"), 0o755)
	cb, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PostToolUse": group("Edit|Write", command("RECORD_LOG="+codexLog+" "+hookScript(t, "record.mjs")))}})
	os.WriteFile(filepath.Join(dir, ".codex", "hooks.json"), cb, 0o644)
	ds := &deepseek{replies: []string{
		toolReply("c1", "write", map[string]string{"file_path": "pkg/mod.py", "content": "x = 1   \n\ty = 2\n"}),
		toolReply("c2", "read", map[string]string{"file_path": "pkg/mod.py"}),
		toolReply("c3", "edit", map[string]string{"file_path": "pkg/mod.py", "old_string": "x = 1", "new_string": "x = 10\t"}),
		textReply("done"),
	}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := dsh(t, dir, home, srv.URL, "", "-p", "--trust", "--permission-mode", "acceptEdits", "--model", "deepseek/deepseek-chat", "write the module")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "pkg", "mod.py"))
	if string(got) != "# formatted\nx = 10\n    y = 2\n" {
		t.Fatalf("file after the formatter: %q", got)
	}
	abs := filepath.Join(dir, "pkg", "mod.py")
	log, _ := os.ReadFile(logf)
	if string(log) != "Write "+abs+"\nEdit "+abs+"\n" {
		t.Fatalf("formatter log %q", log)
	}
	clog, _ := os.ReadFile(codexLog)
	if n := strings.Count(string(clog), `"tool_name":"apply_patch"`); n != 2 {
		t.Fatalf("the Codex Edit|Write hook fired %d times, want 2: %s", n, clog)
	}
}

// An async hook (Node) runs in the background: it starts, never finishes,
// and the run still completes; dsh stops it when it exits.
func TestHookAsyncDoesNotDelayTheTurn(t *testing.T) {
	needTool(t, "node")
	dir, home := t.TempDir(), t.TempDir()
	tmp := t.TempDir()
	started, gate := filepath.Join(tmp, "started"), filepath.Join(tmp, "gate")
	claudeHooks(t, dir, map[string]any{"PostToolUse": group("Bash",
		command("ASYNC_STARTED="+started+" ASYNC_GATE="+gate+" "+hookScript(t, "async_probe.mjs"), "async", true))})
	ds := &deepseek{replies: []string{toolReply("c1", "bash", map[string]string{"command": "echo hi", "description": "say hi"}), textReply("turn over")}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := dsh(t, dir, home, srv.URL, "", "-p", "--trust", "--permission-mode", "bypassPermissions", "--model", "deepseek/deepseek-chat", "go")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "turn over" {
		t.Fatalf("%+v", r)
	}
	b, err := os.ReadFile(started)
	if err != nil {
		t.Fatal("the async hook never started")
	}
	if _, err := os.Stat(gate); err == nil {
		t.Fatal("nobody opened the gate")
	}
	f := strings.Fields(string(b))
	if len(f) != 2 || f[1] != "Bash" {
		t.Fatalf("async hook record %q", b)
	}
	pid, _ := strconv.Atoi(f[0])
	for deadline := time.Now().Add(5 * time.Second); alive(pid) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatal("the async hook outlived dsh")
	}
}

// A prompt hook's decision comes from the model: "ok": false stops the
// command, and the reason reaches the model.
func TestHookPromptDecision(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(dir, "victim"), 0o755)
	claudeHooks(t, dir, map[string]any{"PreToolUse": group("Bash",
		map[string]any{"type": "prompt", "prompt": "Allow this command? $ARGUMENTS", "continueOnBlock": true})})
	ds := &deepseek{replies: []string{
		toolReply("c1", "bash", map[string]string{"command": "rm -rf victim", "description": "clean"}),
		textReply(`{"ok": false, "reason": "deleting directories needs a human"}`),
		textReply("I will not delete it."),
	}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := dsh(t, dir, home, srv.URL, "", "-p", "--trust", "--permission-mode", "bypassPermissions", "--model", "deepseek/deepseek-chat", "clean up")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "victim")); err != nil {
		t.Fatal("the prompt hook's ok:false did not stop rm -rf")
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if len(ds.requests) != 3 {
		t.Fatalf("%d requests, want 3 (turn, prompt hook, turn)", len(ds.requests))
	}
	hookReq, _ := json.Marshal(ds.requests[1]["messages"])
	if !strings.Contains(string(hookReq), "Allow this command?") || !strings.Contains(string(hookReq), "rm -rf victim") {
		t.Fatalf("prompt hook request %s", hookReq)
	}
	last, _ := json.Marshal(ds.requests[2]["messages"])
	if !strings.Contains(string(last), "deleting directories needs a human") {
		t.Fatalf("the reason did not reach the model: %s", last)
	}
}

// A Task matcher (Claude Code's earlier name of the Agent tool) fires for
// dsh's subagent tool; the child fires SubagentStart and SubagentStop, not
// a second SessionStart.
func TestHookTaskMatcherAndSubagentLifecycle(t *testing.T) {
	needTool(t, "node")
	dir, home := t.TempDir(), t.TempDir()
	logf := filepath.Join(t.TempDir(), "record.log")
	rec := command("RECORD_LOG=" + logf + " " + hookScript(t, "record.mjs"))
	claudeHooks(t, dir, map[string]any{
		"PreToolUse":    group("Task", rec),
		"SessionStart":  group("", rec),
		"SubagentStart": group("", rec),
		"SubagentStop":  group("", rec),
	})
	ds := &deepseek{replies: []string{
		toolReply("c1", "task", map[string]string{"description": "look around", "prompt": "CHILD: say hi"}),
		textReply("child says hi"),
		textReply("parent done"),
	}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := dsh(t, dir, home, srv.URL, "", "-p", "--trust", "--allowedTools", "task", "--model", "deepseek/deepseek-chat", "delegate")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	f, err := os.Open(logf)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	count := map[string]int{}
	var pre map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p map[string]any
		json.Unmarshal(sc.Bytes(), &p)
		ev, _ := p["hook_event_name"].(string)
		count[ev]++
		if ev == "PreToolUse" {
			pre = p
		}
	}
	if pre == nil || pre["tool_name"] != "Agent" || pre["tool_input"].(map[string]any)["prompt"] != "CHILD: say hi" {
		t.Fatalf("the Task matcher did not fire for the subagent tool: %v (events %v)", pre, count)
	}
	if count["SessionStart"] != 1 || count["SubagentStart"] != 1 || count["SubagentStop"] != 1 {
		t.Fatalf("lifecycle events %v, want one SessionStart, SubagentStart and SubagentStop", count)
	}
}

// A hook that sleeps forever is killed at its timeout with the process it
// forked, and a hung SessionEnd hook (its default budget is 1.5 s) does not
// keep dsh from exiting.
func TestHookTimeoutsHold(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	pids := filepath.Join(t.TempDir(), "pids")
	claudeHooks(t, dir, map[string]any{
		"PreToolUse": group("Bash", command("cat >/dev/null; sleep 1000 & echo $! >> "+pids+"; echo $$ >> "+pids+"; sleep 1000", "timeout", 1)),
		"SessionEnd": group("", command("cat >/dev/null; sleep 1000")),
	})
	ds := &deepseek{replies: []string{toolReply("c1", "bash", map[string]string{"command": "echo ran", "description": "run"}), textReply("ok")}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	start := time.Now()
	r := dsh(t, dir, home, srv.URL, "", "-p", "--trust", "--permission-mode", "bypassPermissions", "--model", "deepseek/deepseek-chat", "go")
	took := time.Since(start)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "ok" {
		t.Fatalf("%+v", r)
	}
	// Liveness, not speed: without the timeouts this run takes 2000 s.
	if took > 30*time.Second {
		t.Fatalf("the run took %s: a hook's timeout did not hold", took)
	}
	if !strings.Contains(r.stderr, "timed out after 1 s") {
		t.Errorf("stderr does not say which hook timed out: %q", r.stderr)
	}
	ds.mu.Lock()
	msgs, _ := json.Marshal(ds.requests[1]["messages"])
	ds.mu.Unlock()
	if !strings.Contains(string(msgs), "timed out after 1 s") {
		t.Errorf("the model was not told: %s", msgs)
	}
	data, _ := os.ReadFile(pids)
	for _, s := range strings.Fields(string(data)) {
		pid, _ := strconv.Atoi(s)
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("process %d of the timed-out hook outlived its timeout", pid)
		}
	}
}

// Exit is bounded (issue 31): with a SessionEnd hook that sleeps forever
// (and asks for 600 s), dsh -p exits within 6 s of SIGTERM, with the
// cancelled status, and at once on a second SIGTERM.
func TestSessionEndHookAndSignals(t *testing.T) {
	for _, second := range []bool{false, true} {
		t.Run(map[bool]string{false: "one signal", true: "two signals"}[second], func(t *testing.T) {
			dir, home := t.TempDir(), t.TempDir()
			marker := filepath.Join(t.TempDir(), "session-end-started")
			claudeHooks(t, dir, map[string]any{"SessionEnd": group("", command("cat >/dev/null; touch "+marker+"; sleep 1000", "timeout", 600))})
			ds := &deepseek{replies: []string{textReply("answer")}}
			srv := httptest.NewServer(ds)
			defer srv.Close()
			cmd := exec.Command(dshBin, "-p", "--trust", "--model", "deepseek/deepseek-chat", "hi")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "DSH_HOME="+home, "DEEPSEEK_API_KEY=test-key", "DEEPSEEK_BASE_URL="+srv.URL, "DSH_MODEL=")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() { cmd.Process.Kill() })
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(marker); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the SessionEnd hook never started; stderr %q", errb.String())
				}
			}
			sent := time.Now()
			cmd.Process.Signal(syscall.SIGTERM)
			limit := 6 * time.Second
			if second {
				time.Sleep(200 * time.Millisecond)
				cmd.Process.Signal(syscall.SIGTERM)
				sent, limit = time.Now(), 2*time.Second
			}
			var err error
			select {
			case err = <-exited:
			case <-time.After(30 * time.Second):
				t.Fatal("dsh did not exit after SIGTERM")
			}
			if took := time.Since(sent); took > limit {
				t.Errorf("dsh exited %s after the signal, want within %s", took, limit)
			}
			if !strings.Contains(out.String(), "answer") {
				t.Errorf("stdout %q", out.String())
			}
			ee, _ := err.(*exec.ExitError)
			want := 3
			if second {
				want = 128 + int(syscall.SIGTERM)
			}
			if ee == nil || ee.ExitCode() != want {
				t.Errorf("exit %v, want %d; stderr %q", err, want, errb.String())
			}
		})
	}
}

// dsh hooks test runs the configured hooks against a synthetic payload and
// shows their decision; dsh hooks replay runs them against the tool calls
// a session recorded.
func TestHooksTestAndReplay(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	guard, _ := filepath.Abs("../hooks/testdata/guard.sh")
	logf := filepath.Join(t.TempDir(), "post.log")
	claudeHooks(t, dir, map[string]any{
		"PreToolUse":  group("Bash", command(guard)),
		"PostToolUse": group("Bash", command("cat >> "+logf+"; echo >> "+logf)),
	})
	r := dsh(t, dir, home, "http://127.0.0.1:1", "", "hooks", "test", "PreToolUse", "--trust", "--tool", "Bash", "--input", `{"command":"rm -rf /"}`)
	if r.code != 0 || !strings.Contains(r.stdout, "block: rm -rf is not allowed") || !strings.Contains(r.stdout, `"tool_input":{"command":"rm -rf /"}`) {
		t.Fatalf("hooks test: %+v", r)
	}
	r = dsh(t, dir, home, "http://127.0.0.1:1", "", "hooks", "test", "PreToolUse", "--tool", "Bash", "--input", `{"command":"ls"}`, "--json")
	var trials []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &trials); err != nil || len(trials) != 1 || trials[0]["decision"] != "pass" {
		t.Fatalf("hooks test --json: %v %s", err, r.stdout)
	}
	ds := &deepseek{replies: []string{toolReply("call_7", "bash", map[string]string{"command": "echo replayed", "description": "echo"}), textReply("ok")}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	run := dsh(t, dir, home, srv.URL, "", "-p", "--permission-mode", "bypassPermissions", "--model", "deepseek/deepseek-chat", "--output-format", "json", "go")
	var res map[string]any
	json.Unmarshal([]byte(run.stdout), &res)
	id, _ := res["session_id"].(string)
	os.Remove(logf)
	r = dsh(t, dir, home, srv.URL, "", "hooks", "replay", id, "--json")
	if r.code != 0 {
		t.Fatalf("replay: %+v", r)
	}
	trials = nil
	json.Unmarshal([]byte(r.stdout), &trials)
	var events []string
	for _, tr := range trials {
		p := tr["payload"].(map[string]any)
		events = append(events, tr["event"].(string)+":"+p["tool_use_id"].(string))
		if p["session_id"] != id {
			t.Errorf("replayed payload of another session: %v", p)
		}
	}
	if strings.Join(events, " ") != "PreToolUse:call_7 PostToolUse:call_7" {
		t.Fatalf("replayed %v", events)
	}
	b, _ := os.ReadFile(logf)
	if !strings.Contains(string(b), `"stdout":"replayed\n"`) {
		t.Fatalf("the PostToolUse hook did not get the recorded result: %s", b)
	}
}
