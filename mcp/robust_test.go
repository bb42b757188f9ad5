package mcp_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/mcp"
)

// pyServer configures testdata/pyserver.py, a raw stdio MCP server, or
// skips when python3 is missing.
func pyServer(t testing.TB, name string, args ...string) mcp.ServerConfig {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	script, err := filepath.Abs(filepath.Join("testdata", "pyserver.py"))
	if err != nil {
		t.Fatal(err)
	}
	return mcp.ServerConfig{Name: name, Command: py, Args: append([]string{"-u", script}, args...)}
}

// A result the SDK cannot decode (an unknown content type, image data that
// is not base64) is the call's error; the server, whose connection is
// fine, keeps running: same process, no restart.
func TestMalformedResultKeepsServer(t *testing.T) {
	r := newRig(t, mcp.Options{})
	startReady(t, r, pyServer(t, "py"))
	st, _ := r.m.Server("py")
	pid := st.PID
	if pid <= 0 {
		t.Fatalf("no pid: %+v", st)
	}
	for _, name := range []string{"mcp__py__video", "mcp__py__badimage"} {
		out := execute(t, r.h.Tools, name, map[string]any{})
		if !out.Result.IsError || !strings.Contains(textOf(out.Result), "the server's result could not be read") ||
			strings.Contains(textOf(out.Result), "restarting") {
			t.Errorf("%s = %+v", name, out.Result)
		}
	}
	// Give a (wrong) restart the time to happen.
	time.Sleep(500 * time.Millisecond)
	st, _ = r.m.Server("py")
	if st.State != mcp.StateConnected || st.PID != pid || st.Restarts != 0 {
		t.Errorf("after malformed results: state %s, pid %d (was %d), restarts %d", st.State, st.PID, pid, st.Restarts)
	}
	out := execute(t, r.h.Tools, "mcp__py__pid", map[string]any{})
	if textOf(out.Result) != fmt.Sprint(pid) {
		t.Errorf("pid tool = %+v, want %d", out.Result, pid)
	}
}

// A huge text result is cut to the budget, with a note saying how much was
// left out; the session never holds the whole of it.
func TestLargeResultIsCapped(t *testing.T) {
	const total = 12 << 20
	r := newRig(t, mcp.Options{}, scripted.Call("c1", "mcp__py__big", map[string]any{}, ""), scripted.Text("done"))
	startReady(t, r, pyServer(t, "py"))
	// Through an agent: the session records the capped result.
	a := r.agent(agent.Options{})
	r.run(a, "big")
	res := results(t, a.Session())["c1"]
	if res.IsError || len(res.Content) != 2 {
		t.Fatalf("result: error %v, %d blocks", res.IsError, len(res.Content))
	}
	kept, note := res.Content[0].Text, res.Content[1].Text
	if kept != strings.Repeat("A", mcp.DefaultMaxResultChars) {
		t.Errorf("kept %d characters, want %d", utf8.RuneCountInString(kept), mcp.DefaultMaxResultChars)
	}
	for _, want := range []string{"cut", commas(fmt.Sprint(total - mcp.DefaultMaxResultChars)), commas(fmt.Sprint(total)), "not kept"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
	if reqs := r.model.Requests(); len(reqs) != 2 {
		t.Errorf("%d model requests", len(reqs))
	} else if b, _ := json.Marshal(reqs[1].Messages); len(b) > 2*mcp.DefaultMaxResultChars {
		t.Errorf("the model was sent %d bytes of messages", len(b))
	}
}

// Options.MaxResultChars sets the bound.
func TestResultBoundIsConfigurable(t *testing.T) {
	r := newRig(t, mcp.Options{MaxResultChars: 1000})
	startReady(t, r, pyServer(t, "py"))
	out := execute(t, r.h.Tools, "mcp__py__echo", map[string]string{"text": strings.Repeat("é", 5000)})
	if out.Result.IsError || len(out.Result.Content) != 2 || out.Result.Content[0].Text != strings.Repeat("é", 1000) ||
		!strings.Contains(out.Result.Content[1].Text, "4,000 of its 5,000 characters") {
		t.Errorf("result = %+v", out.Result)
	}
}

// commas formats a decimal string with thousands separators.
func commas(s string) string {
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// A stdio server that prints a banner (and other non-JSON lines) on stdout
// stays usable: those lines are dropped before the SDK reads the stream.
func TestStdoutBannerIsIgnored(t *testing.T) {
	r := newRig(t, mcp.Options{})
	startReady(t, r, pyServer(t, "noisy", "--banner"))
	for _, text := range []string{"one", "two"} {
		out := execute(t, r.h.Tools, "mcp__noisy__echo", map[string]string{"text": text})
		if out.Result.IsError || textOf(out.Result) != text {
			t.Errorf("echo %q = %+v", text, out.Result)
		}
	}
	if st, _ := r.m.Server("noisy"); st.State != mcp.StateConnected || st.Restarts != 0 {
		t.Errorf("status %+v", st)
	}
}

// A server that dies during a call is still reported as lost and
// restarted.
func TestServerDyingDuringCallIsRestarted(t *testing.T) {
	r := newRig(t, mcp.Options{RestartBackoff: 100 * time.Millisecond})
	startReady(t, r, pyServer(t, "py", "--exit-on-call"))
	st, _ := r.m.Server("py")
	out := execute(t, r.h.Tools, "mcp__py__echo", map[string]string{"text": "x"})
	if !out.Result.IsError || !strings.Contains(textOf(out.Result), "restarting it") {
		t.Errorf("call to a dying server = %+v", out.Result)
	}
	waitFor(t, 20*time.Second, "a new process", func() bool {
		s, _ := r.m.Server("py")
		return s.State == mcp.StateConnected && s.PID != st.PID && s.Restarts == 1
	})
}

// A call made while a crashed server waits for its restart is bounded by
// the call's timeout, and says the server is restarting and why.
func TestCallDuringRestartIsBounded(t *testing.T) {
	r := newRig(t, mcp.Options{RestartBackoff: 20 * time.Second})
	cfg := pyServer(t, "py")
	cfg.TimeoutMs = 300
	startReady(t, r, cfg)
	st, _ := r.m.Server("py")
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "restarting", func() bool { return state(r.m, "py") == mcp.StateRestarting })
	out := execute(t, r.h.Tools, "mcp__py__pid", map[string]any{})
	if !out.Result.IsError || !strings.Contains(textOf(out.Result), `MCP server "py" is restarting and was not back within the call timeout (300ms)`) {
		t.Errorf("call during a long restart = %+v", out.Result)
	}
}
