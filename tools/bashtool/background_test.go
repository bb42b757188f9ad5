package bashtool

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/bash/local"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/tool"
)

func startBG(t *testing.T, k *kit, h *fakeHost, command string) string {
	t.Helper()
	text, _ := mustCall(t, k.bash, hostOf(h), obj{"command": command, "description": "d", "run_in_background": true})
	m := startedRe.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("start: %q", text)
	}
	return m[1]
}

// pollPGID reads a task whose first output line is its shell's pid ($$),
// which is also its process group id.
func pollPGID(t *testing.T, k *kit, h *fakeHost, id string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		text, _ := mustCall(t, k.output, h, obj{"task_id": id})
		if pgid, err := strconv.Atoi(strings.SplitN(text, "\n", 2)[0]); err == nil {
			return pgid
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("task %s printed no pid", id)
	return 0
}

func TestBackgroundOutputAndCompletion(t *testing.T) {
	t.Parallel()
	k := newKit(t, local.Config{})
	h := newHost("agent-bg", t.TempDir())
	id := startBG(t, k, h, "echo first; sleep 0.5; echo second")
	if id != "bash-1" {
		t.Errorf("first task id %s", id)
	}
	text := pollOutput(t, k, h, id, "first")
	if !strings.HasSuffix(text, "\n[status: running]") {
		t.Errorf("while running: %q", text)
	}
	waitTask(t, k.exec, "agent-bg", id)
	text, _ = mustCall(t, k.output, h, obj{"task_id": id})
	if text != "second\n[status: completed, exit code: 0]" {
		t.Errorf("after completion: %q", text)
	}
	if text, _ = mustCall(t, k.output, h, obj{"task_id": id}); text != "(no new output)\n[status: completed, exit code: 0]" {
		t.Errorf("read after the end: %q", text)
	}
	select {
	case <-h.injectedC:
	case <-time.After(5 * time.Second):
		t.Fatal("no completion notice")
	}
	got := h.injections()
	if len(got) != 1 || got[0].src != llm.PluginSource("bash") ||
		got[0].text != "background bash task "+id+" finished [status: completed, exit code: 0]. Read its output with bash_output." {
		t.Errorf("notices %+v", got)
	}
}

func TestBackgroundKill(t *testing.T) {
	t.Parallel()
	k := newKit(t, local.Config{})
	h := newHost("a", t.TempDir())
	id := startBG(t, k, h, "echo $$; sleep 60 & sleep 60")
	pgid := pollPGID(t, k, h, id)
	if text, _ := mustCall(t, k.kill, h, obj{"task_id": id}); text != "killed background task "+id {
		t.Errorf("kill: %q", text)
	}
	if live := liveInGroup(t, pgid); len(live) > 0 {
		t.Errorf("survivors after bash_kill: %q", live)
	}
	if text, _ := mustCall(t, k.kill, h, obj{"task_id": id}); text != "task "+id+" had already finished" {
		t.Errorf("second kill: %q", text)
	}
	if text, _ := mustCall(t, k.output, h, obj{"task_id": id}); !strings.HasSuffix(text, "[status: killed by SIGTERM]") {
		t.Errorf("output after kill: %q", text)
	}
	time.Sleep(50 * time.Millisecond) // a notice would be under way by now
	if got := h.injections(); len(got) != 0 {
		t.Errorf("completion notice for a task the agent killed itself: %+v", got)
	}
}

func TestTaskIDErrors(t *testing.T) {
	t.Parallel()
	k := newKit(t, local.Config{})
	h := newHost("a", t.TempDir())
	for _, tl := range []struct {
		name string
		run  func(args obj) (string, bool)
	}{
		{NameOutput, func(a obj) (string, bool) { s, _, e := call(t, context.Background(), k.output, h, a); return s, e }},
		{NameKill, func(a obj) (string, bool) { s, _, e := call(t, context.Background(), k.kill, h, a); return s, e }},
	} {
		if text, isErr := tl.run(obj{"task_id": "bash-999"}); !isErr || text != `Error: unknown bash task "bash-999"` {
			t.Errorf("%s unknown: %q", tl.name, text)
		}
		if text, isErr := tl.run(obj{"task_id": ""}); !isErr || !strings.HasPrefix(text, "Error: invalid task_id") {
			t.Errorf("%s empty: %q", tl.name, text)
		}
	}
}

func TestBackgroundOwnership(t *testing.T) {
	t.Parallel()
	k := newKit(t, local.Config{})
	dir := t.TempDir()
	a, b := newHost("agent-a", dir), newHost("agent-b", dir)
	id := startBG(t, k, a, "sleep 60")
	want := "Error: no background task " + id + " for this agent: it was started by another agent"
	for name, h := range map[string]*fakeHost{"other agent": b, "no agent": nil} {
		for _, tl := range []tool.Tool{k.output, k.kill} {
			if text, _, isErr := call(t, context.Background(), tl, hostOf(h), obj{"task_id": id}); !isErr || text != want {
				t.Errorf("%s %s: %q", name, tl.Info().Name, text)
			}
		}
	}
	// Another Host value of the same agent is the same owner.
	if text, _ := mustCall(t, k.output, newHost("agent-a", dir), obj{"task_id": id}); !strings.Contains(text, "[status: running]") {
		t.Errorf("same agent, other host value: %q", text)
	}
	if text, _ := mustCall(t, k.kill, a, obj{"task_id": id}); text != "killed background task "+id {
		t.Errorf("owner kill: %q", text)
	}
	// Ownership outlives the task.
	if text, _, isErr := call(t, context.Background(), k.output, b, obj{"task_id": id}); !isErr || text != want {
		t.Errorf("after the end, other agent: %q", text)
	}
	// A task started outside any agent is open to all.
	open := startBG(t, k, nil, "echo open")
	waitTask(t, k.exec, "", open)
	if text, _ := mustCall(t, k.output, b, obj{"task_id": open}); !strings.HasPrefix(text, "open\n") {
		t.Errorf("unowned task read by b: %q", text)
	}
}

// Disposing the agent kills its background tasks — the whole group, even a
// TERM-ignoring one — and sends no completion notice.
func TestAgentDisposalKillsItsTasks(t *testing.T) {
	t.Parallel()
	k := newKit(t, local.Config{})
	dir := t.TempDir()
	h, other := newHost("doomed", dir), newHost("survivor", dir)
	id1 := startBG(t, k, h, "echo $$; sleep 60 & sleep 60 & wait")
	id2 := startBG(t, k, h, `trap "" TERM; echo $$; sleep 60`)
	keep := startBG(t, k, other, "sleep 60")
	var pgids []int
	for _, id := range []string{id1, id2} {
		pgids = append(pgids, pollPGID(t, k, h, id))
	}
	st := k.bash.(*bashTool).s
	st.mu.Lock()
	bound := len(st.scopes)
	st.mu.Unlock()
	if bound != 2 { // one per agent, not per task
		t.Errorf("%d scopes bound, want 2", bound)
	}
	if err := h.scope.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pgid := range pgids {
		if live := liveInGroup(t, pgid); len(live) > 0 {
			t.Errorf("survivors of the disposed agent: %q", live)
		}
	}
	if n := len(h.injections()); n != 0 {
		t.Errorf("%d notices sent to a disposed agent", n)
	}
	if tasks := k.exec.List(context.Background(), "doomed"); len(tasks) != 0 {
		t.Errorf("disposed agent's tasks still tracked: %+v", tasks)
	}
	if tasks := k.exec.List(context.Background(), "survivor"); len(tasks) != 1 || tasks[0].Status != bash.StatusRunning {
		t.Errorf("other agent's task: %+v", tasks)
	}
	// A disposed agent cannot start new tasks.
	if text, _, isErr := call(t, context.Background(), k.bash, h, obj{"command": "sleep 60", "description": "d", "run_in_background": true}); !isErr || !strings.Contains(text, "disposed") {
		t.Errorf("start after disposal: %q", text)
	}
	if tasks := k.exec.List(context.Background(), "doomed"); len(tasks) != 0 {
		t.Errorf("task started for a disposed agent: %+v", tasks)
	}
	mustCall(t, k.kill, other, obj{"task_id": keep})
	_ = other.scope.Close()
}

func TestBashOutputLossyFormat(t *testing.T) {
	ts := Tools(&recorder{}, Options{})
	text, _ := mustCall(t, ts[1], newHost("a", "/"), obj{"task_id": "bash-1"})
	if want := "tail\n[some output was dropped from memory; full output: (unavailable)]\n[status: running]"; text != want {
		t.Errorf("%q, want %q", text, want)
	}
}

func TestStatusLine(t *testing.T) {
	code := func(n int) *int { return &n }
	for _, tc := range []struct {
		t    bash.Task
		want string
	}{
		{bash.Task{Status: bash.StatusRunning}, "[status: running]"},
		{bash.Task{Status: bash.StatusKilled, Signal: "SIGKILL"}, "[status: killed by SIGKILL]"},
		{bash.Task{Status: bash.StatusKilled}, "[status: killed]"},
		{bash.Task{Status: bash.StatusCompleted, ExitCode: code(3)}, "[status: completed, exit code: 3]"},
		{bash.Task{Status: bash.StatusCompleted, Signal: "SIGSEGV"}, "[status: completed, killed by signal: SIGSEGV]"},
	} {
		if got := statusLine(tc.t); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.t, got, tc.want)
		}
	}
}
