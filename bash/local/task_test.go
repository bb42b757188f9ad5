package local

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshq/dsh/bash"
)

func start(t *testing.T, e *Executor, req bash.ExecRequest) bash.Task {
	t.Helper()
	if req.Workdir == "" {
		req.Workdir = t.TempDir()
	}
	task, err := e.Start(context.Background(), req)
	if err != nil {
		t.Fatalf("Start(%q): %v", req.Command, err)
	}
	return task
}

func read(t *testing.T, e *Executor, owner bash.Owner, id bash.TaskID) bash.TaskRead {
	t.Helper()
	r, err := e.Read(context.Background(), owner, id)
	if err != nil {
		t.Fatalf("Read(%s): %v", id, err)
	}
	return r
}

func TestTaskIncrementalReads(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	task := start(t, e, bash.ExecRequest{Command: "echo first; echo oops >&2; sleep 0.3; echo second"})
	if task.ID != "bash-1" || task.Status != bash.StatusRunning || task.Command == "" {
		t.Fatalf("started %+v", task)
	}
	var r bash.TaskRead
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(r.Stdout, "first") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		r = read(t, e, "", task.ID)
	}
	if r.Stdout != "first\n" || r.Task.Status != bash.StatusRunning {
		t.Fatalf("first read %+v", r)
	}
	waitDone(t, task)
	r = read(t, e, "", task.ID)
	if r.Stdout != "second\n" || r.Task.Status != bash.StatusCompleted || r.Task.ExitCode == nil || *r.Task.ExitCode != 0 || r.Lossy {
		t.Errorf("final read %+v", r)
	}
	if r.Task.Ended.IsZero() || r.Task.Ended.Before(r.Task.Started) {
		t.Errorf("times: started %v ended %v", r.Task.Started, r.Task.Ended)
	}
	// stderr may have been read by the first or the final read, never twice.
	r = read(t, e, "", task.ID)
	if r.Stdout != "" || r.Stderr != "" {
		t.Errorf("read after the end returned more output: %+v", r)
	}
}

func TestTaskIDsAreSequentialAndFailedStartsConsumeNone(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	if _, err := e.Start(context.Background(), bash.ExecRequest{Command: "true", Workdir: "/nonexistent-dsh"}); err == nil {
		t.Fatal("Start with a missing workdir succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Start(ctx, bash.ExecRequest{Command: "true", Workdir: "/"}); err == nil || !strings.Contains(err.Error(), "aborted before start") {
		t.Fatalf("pre-cancelled Start: %v", err)
	}
	a := start(t, e, bash.ExecRequest{Command: "true"})
	b := start(t, e, bash.ExecRequest{Command: "true"})
	if a.ID != "bash-1" || b.ID != "bash-2" {
		t.Errorf("ids %s, %s; want bash-1, bash-2", a.ID, b.ID)
	}
	waitDone(t, a)
	waitDone(t, b)
}

// The start context bounds only the start: cancelling it later does not kill
// the task.
func TestTaskOutlivesStartContext(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	task, err := e.Start(ctx, bash.ExecRequest{Command: "sleep 0.3; echo survived", Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	waitDone(t, task)
	if r := read(t, e, "", task.ID); r.Stdout != "survived\n" || r.Task.Status != bash.StatusCompleted {
		t.Errorf("after cancelling the start context: %+v", r)
	}
}

func TestTaskKill(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	var mu sync.Mutex
	var notified []bash.Task
	task := start(t, e, bash.ExecRequest{
		Command: "echo $$; sleep 60 & sleep 60",
		Owner:   "a",
		OnDone:  func(tk bash.Task) { mu.Lock(); notified = append(notified, tk); mu.Unlock() },
	})
	var r bash.TaskRead
	for r.Stdout == "" {
		time.Sleep(5 * time.Millisecond)
		r = read(t, e, "a", task.ID)
	}
	pgid := firstInt(t, r.Stdout)
	killed, err := e.Kill(context.Background(), "a", task.ID)
	if err != nil || !killed {
		t.Fatalf("Kill = %v, %v", killed, err)
	}
	select {
	case <-task.Done:
	default:
		t.Error("Kill returned before the task was gone")
	}
	if live := liveInGroup(t, pgid); len(live) > 0 {
		t.Errorf("survivors after Kill: %q", live)
	}
	r = read(t, e, "a", task.ID)
	if r.Task.Status != bash.StatusKilled || r.Task.Signal != "SIGTERM" || r.Task.ExitCode != nil {
		t.Errorf("after kill: %+v", r.Task)
	}
	if killed, err := e.Kill(context.Background(), "a", task.ID); err != nil || killed {
		t.Errorf("second Kill = %v, %v; want false, nil", killed, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notified) != 0 {
		t.Errorf("OnDone called for a task ended by Kill: %+v", notified)
	}
}

func TestTaskCompletionNotice(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	got := make(chan bash.Task, 2)
	task := start(t, e, bash.ExecRequest{Command: "exit 4", OnDone: func(tk bash.Task) { got <- tk }})
	select {
	case tk := <-got:
		if tk.ID != task.ID || tk.Status != bash.StatusCompleted || tk.ExitCode == nil || *tk.ExitCode != 4 {
			t.Errorf("OnDone got %+v", tk)
		}
		select {
		case <-tk.Done:
		default:
			t.Error("OnDone called before Done closed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnDone not called")
	}
	// A panicking callback is contained.
	waitDone(t, start(t, e, bash.ExecRequest{Command: "true", OnDone: func(bash.Task) { panic("boom") }}))
	if r := run(t, e, bash.ExecRequest{Command: "echo still fine"}); r.Stdout.Text != "still fine\n" {
		t.Errorf("executor broken after a panicking callback: %+v", r)
	}
	if len(got) != 0 {
		t.Errorf("OnDone called more than once")
	}
}

// An externally killed task is "completed" with the signal; only kills the
// executor made count as "killed".
func TestTaskExternalSignalIsCompleted(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	task := start(t, e, bash.ExecRequest{Command: "kill -KILL $$"})
	waitDone(t, task)
	r := read(t, e, "", task.ID)
	if r.Task.Status != bash.StatusCompleted || r.Task.Signal != "SIGKILL" || r.Task.ExitCode != nil {
		t.Errorf("externally killed task: %+v", r.Task)
	}
}

func TestTaskOwnership(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	ctx := context.Background()
	owned := start(t, e, bash.ExecRequest{Command: "sleep 60", Owner: "a"})
	open := start(t, e, bash.ExecRequest{Command: "echo open"})
	for _, caller := range []bash.Owner{"b", ""} {
		if _, err := e.Read(ctx, caller, owned.ID); !errors.Is(err, bash.ErrNotOwner) || !strings.Contains(err.Error(), string(owned.ID)) {
			t.Errorf("Read by %q: %v, want ErrNotOwner naming the task", caller, err)
		}
		if _, err := e.Kill(ctx, caller, owned.ID); !errors.Is(err, bash.ErrNotOwner) {
			t.Errorf("Kill by %q: %v, want ErrNotOwner", caller, err)
		}
		if _, err := e.Read(ctx, caller, open.ID); err != nil {
			t.Errorf("unowned task not readable by %q: %v", caller, err)
		}
	}
	if _, err := e.Read(ctx, "a", "bash-999"); !errors.Is(err, bash.ErrUnknownTask) {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := e.Kill(ctx, "a", "bash-999"); !errors.Is(err, bash.ErrUnknownTask) {
		t.Errorf("unknown id: %v", err)
	}
	if l := e.List(ctx, "a"); len(l) != 1 || l[0].ID != owned.ID {
		t.Errorf("List(a) = %+v", l)
	}
	if l := e.List(ctx, "b"); len(l) != 0 {
		t.Errorf("List(b) = %+v", l)
	}
	if killed, err := e.Kill(ctx, "a", owned.ID); err != nil || !killed {
		t.Errorf("owner Kill = %v, %v", killed, err)
	}
	// Ownership outlives the process.
	if _, err := e.Read(ctx, "b", owned.ID); !errors.Is(err, bash.ErrNotOwner) {
		t.Errorf("Read by b after the end: %v", err)
	}
	waitDone(t, open)
}

func TestKillOwner(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	ctx := context.Background()
	notified := make(chan bash.Task, 4)
	onDone := func(tk bash.Task) { notified <- tk }
	a1 := start(t, e, bash.ExecRequest{Command: "echo $$; sleep 60 & sleep 60 & wait", Owner: "a", OnDone: onDone})
	a2 := start(t, e, bash.ExecRequest{Command: `echo $$; trap "" TERM; sleep 60`, Owner: "a", OnDone: onDone})
	b := start(t, e, bash.ExecRequest{Command: "sleep 60", Owner: "b", OnDone: onDone})
	var pgids []int
	for _, tk := range []bash.Task{a1, a2} {
		var r bash.TaskRead
		for r.Stdout == "" {
			time.Sleep(5 * time.Millisecond)
			r = read(t, e, "a", tk.ID)
		}
		pgids = append(pgids, firstInt(t, r.Stdout))
	}
	if err := e.KillOwner(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	for _, pgid := range pgids {
		if live := liveInGroup(t, pgid); len(live) > 0 {
			t.Errorf("survivors of owner a: %q", live)
		}
	}
	if l := e.List(ctx, "a"); len(l) != 0 {
		t.Errorf("owner a's tasks not forgotten: %+v", l)
	}
	if r := read(t, e, "b", b.ID); r.Task.Status != bash.StatusRunning {
		t.Errorf("owner b's task affected: %+v", r.Task)
	}
	if killed, err := e.Kill(ctx, "b", b.ID); !killed || err != nil {
		t.Errorf("Kill b: %v %v", killed, err)
	}
	if len(notified) != 0 {
		t.Errorf("OnDone called for a task killed by KillOwner or Kill: %v", (<-notified).ID)
	}
}

// Close kills foreground and background work alike — including a group that
// ignores SIGTERM — waits for it, and refuses later calls.
func TestCloseKillsEverything(t *testing.T) {
	t.Parallel()
	e, err := New(Config{Grace: testGrace})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx := context.Background()
	called := make(chan struct{}, 1)
	bg, err := e.Start(ctx, bash.ExecRequest{
		Command: `trap "" TERM; echo $$; sleep 60`, Workdir: dir, Owner: "a",
		OnDone: func(bash.Task) { called <- struct{}{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	fg := make(chan bash.RunResult, 1)
	go func() {
		res, _ := e.Run(ctx, bash.ExecRequest{Command: "echo $$; sleep 60", Workdir: dir})
		fg <- res
	}()
	var r bash.TaskRead
	for r.Stdout == "" {
		time.Sleep(5 * time.Millisecond)
		if r, err = e.Read(ctx, "a", bg.ID); err != nil {
			t.Fatal(err)
		}
	}
	pgid := firstInt(t, r.Stdout)
	time.Sleep(50 * time.Millisecond) // let the foreground command start
	start := time.Now()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < testGrace {
		t.Errorf("Close returned after %v, before the TERM-ignoring task could have been SIGKILLed", took)
	}
	if live := liveInGroup(t, pgid); len(live) > 0 {
		t.Errorf("survivors after Close: %q", live)
	}
	select {
	case res := <-fg:
		if !res.Aborted {
			t.Errorf("foreground result %+v, want aborted", res)
		}
		if pg := firstInt(t, res.Stdout.Text); len(liveInGroup(t, pg)) > 0 {
			t.Errorf("foreground survivors: %q", liveInGroup(t, pg))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("foreground Run still running after Close")
	}
	if len(called) != 0 {
		t.Error("OnDone called during Close")
	}
	if _, err := e.Run(ctx, bash.ExecRequest{Command: "true", Workdir: dir}); !errors.Is(err, bash.ErrClosed) {
		t.Errorf("Run after Close: %v", err)
	}
	if _, err := e.Start(ctx, bash.ExecRequest{Command: "true", Workdir: dir}); !errors.Is(err, bash.ErrClosed) {
		t.Errorf("Start after Close: %v", err)
	}
	if _, err := e.Read(ctx, "a", bg.ID); !errors.Is(err, bash.ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A read that falls behind the in-memory tail is lossy: it returns the whole
// retained tail and points at the spill file.
func TestTaskLossyRead(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{MaxOutputBytes: 100})
	task := start(t, e, bash.ExecRequest{Command: "seq 1 1000"})
	waitDone(t, task)
	r := read(t, e, "", task.ID)
	if !r.Lossy || r.StdoutSpill == "" || !strings.HasSuffix(r.Stdout, "1000\n") || len(r.Stdout) != 100 {
		t.Errorf("lossy read: lossy=%v spill=%q len=%d", r.Lossy, r.StdoutSpill, len(r.Stdout))
	}
	if r := read(t, e, "", task.ID); r.Lossy || r.Stdout != "" || r.StdoutSpill == "" {
		t.Errorf("read after lossy read: %+v", r)
	}
}
