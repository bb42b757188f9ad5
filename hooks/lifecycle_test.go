package hooks_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dshq/dsh/hooks"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
)

// An async hook runs in the background: the turn finishes while it still
// waits (it cannot finish before the test opens its gate, after the turn),
// and its additionalContext reaches the agent once it is done.
func TestAsyncHookDoesNotHoldTheTurn(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	cmd := `cat >/dev/null; while [ ! -f ` + gate + ` ]; do sleep 0.02; done; echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"async-check-passed"}}'`
	cfg := `{"hooks":{"PostToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":` + strconv.Quote(cmd) + `,"async":true}]}]}}`
	r := newRig(t, hooks.Claude, cfg, nil, bashCall("c1", "echo hi"), scripted.Text("turn done"), scripted.Text("second"))
	done := make(chan hooks.Ran, 1)
	r.bridge.RanPoint.Listen(func(_ context.Context, ran hooks.Ran) error {
		if ran.Async {
			done <- ran
		}
		return nil
	})
	r.run(t, "go") // returns only if the async hook did not hold the turn
	if _, err := os.Stat(gate); err == nil {
		t.Fatal("gate opened early")
	}
	os.WriteFile(gate, nil, 0o644)
	select {
	case ran := <-done:
		if ran.Output.AdditionalContext != "async-check-passed" {
			t.Fatalf("async output %+v", ran.Output)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the async hook never finished")
	}
	// Its context reaches the model with the next request.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if e, ok := r.agent.Session().Last("context/message"); ok && strings.Contains(string(e.Data), "async-check-passed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the async hook's context was not injected")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A prompt hook's decision comes from a model call: "ok": false on
// PreToolUse with continueOnBlock denies the call and the reason reaches
// the model; an answer that is not the JSON asked for fails open, with a
// warning.
func TestPromptHookDecision(t *testing.T) {
	cfg := `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"prompt","prompt":"Is this safe? $ARGUMENTS","continueOnBlock":true}]}]}}`
	var warned []string
	var mu sync.Mutex
	rigTweak = func(o *hooks.Options) {
		o.Warn = func(m string) { mu.Lock(); warned = append(warned, m); mu.Unlock() }
	}
	defer func() { rigTweak = nil }()
	r := newRig(t, hooks.Claude, cfg, nil,
		bashCall("c1", "rm -rf /tmp/x"),
		scripted.Text(`Looking at it: {"ok": false, "reason": "deleting is not allowed here"}`),
		bashCall("c2", "echo fine"),
		scripted.Text("no idea"),
		scripted.Text("finished"))
	r.run(t, "go")
	rs := r.results(t)
	if len(rs) != 2 || !rs[0].IsError || !strings.Contains(llm.TextOf(rs[0].Content), "deleting is not allowed here") {
		t.Fatalf("first call: %+v", rs)
	}
	if rs[1].IsError || !strings.Contains(llm.TextOf(rs[1].Content), "fine") {
		t.Fatalf("an undecided prompt hook must let the call run: %+v", rs[1])
	}
	req := r.model.Requests()[1]
	if !strings.Contains(req.Messages[0].Content[0].Text, `"tool_name":"Bash"`) || !strings.Contains(req.Messages[0].Content[0].Text, "Is this safe?") {
		t.Fatalf("the prompt hook's request: %+v", req.Messages)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warned) != 1 || !strings.Contains(warned[0], "fail open") {
		t.Fatalf("warnings %q", warned)
	}
}

// A hook that never ends is killed at its timeout with the processes it
// started, the turn goes on, and the model is told which hook timed out.
func TestHookTimeoutKillsItsProcesses(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	cmd := `cat >/dev/null; sleep 1000 & echo $! >> ` + pids + `; echo $$ >> ` + pids + `; sleep 1000`
	cfg := `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":` + strconv.Quote(cmd) + `,"timeout":1}]}]}}`
	r := newRig(t, hooks.Claude, cfg, nil, bashCall("c1", "echo ran"), scripted.Text("ok"))
	r.run(t, "go")
	rs := r.results(t)
	if rs[0].IsError || !strings.Contains(llm.TextOf(rs[0].Content), "ran") {
		t.Fatalf("the call must still run: %+v", rs[0])
	}
	b, _ := json.Marshal(r.model.Requests()[1].Messages)
	if !strings.Contains(string(b), "timed out after 1 s") {
		t.Fatalf("the model was not told about the timeout: %s", b)
	}
	data, _ := os.ReadFile(pids)
	for _, f := range strings.Fields(string(data)) {
		pid, _ := strconv.Atoi(f)
		if err := syscall.Kill(pid, 0); err == nil {
			if st, _ := os.ReadFile("/proc/" + f + "/stat"); !strings.Contains(string(st), ") Z ") {
				t.Errorf("process %d of the timed-out hook still runs", pid)
			}
		}
	}
}

// SessionEnd hooks are bounded at exit: after dsh is asked to stop they
// get ExitGrace, whatever their own timeout; a second signal stops them at
// once.
func TestSessionEndBoundedAtExit(t *testing.T) {
	for _, second := range []bool{false, true} {
		cfg := `{"hooks":{"SessionEnd":[{"hooks":[{"type":"command","command":"cat >/dev/null; sleep 1000","timeout":600}]}]}}`
		stopping, aborting := make(chan struct{}), make(chan struct{})
		rigTweak = func(o *hooks.Options) {
			o.Stopping, o.Aborting, o.ExitGrace = stopping, aborting, 30*time.Second
			if !second {
				o.ExitGrace = 300 * time.Millisecond
			}
		}
		r := newRig(t, hooks.Claude, cfg, nil, scripted.Text("ok"))
		rigTweak = nil
		r.run(t, "go")
		disposed := make(chan struct{})
		go func() {
			r.h.Close(context.Background())
			close(disposed)
		}()
		close(stopping)
		if second {
			time.Sleep(100 * time.Millisecond)
			close(aborting)
		}
		select {
		case <-disposed:
		case <-time.After(20 * time.Second):
			t.Fatalf("second=%v: the SessionEnd hook held dsh up", second)
		}
	}
}

var _ = kernel.Named

// A hook that starts a background process and exits does not hold the
// turn (or dsh) up; the process it left is killed.
func TestHookForkingABackgroundChild(t *testing.T) {
	pid := filepath.Join(t.TempDir(), "pid")
	cmd := `cat >/dev/null; sleep 1000 & echo $! > ` + pid + `; exit 0`
	cfg := `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":` + strconv.Quote(cmd) + `}]}]}}`
	r := newRig(t, hooks.Claude, cfg, nil, bashCall("c1", "echo ran"), scripted.Text("ok"))
	r.run(t, "go") // would wait the hook's 60 s timeout if the child held it
	b, err := os.ReadFile(pid)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, err := os.ReadFile("/proc/" + strconv.Itoa(n) + "/stat")
		if err != nil || strings.Contains(string(st), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			syscall.Kill(n, syscall.SIGKILL)
			t.Fatal("the hook's background child outlived it")
		}
	}
}
