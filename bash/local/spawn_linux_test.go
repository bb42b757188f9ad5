package local

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshq/dsh/bash"
)

func init() {
	// Starts a background `sleep 60`, prints its pid and waits to be killed.
	helpers["pdeathsig"] = func() {
		e, err := New(Config{})
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		tk, err := e.Start(context.Background(), bash.ExecRequest{Command: "sleep 60", Workdir: "/"})
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		for {
			if pid := e.pidOf(tk.ID); pid > 0 {
				fmt.Println(pid)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		select {}
	}
}

// pidOf is the shell pid of a task (tests only).
func (e *Executor) pidOf(id bash.TaskID) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t, ok := e.tasks[id]; ok {
		return t.p.sid
	}
	return 0
}

// When dsh dies without running Close (SIGKILL), its commands get the
// parent-death signal instead of running on.
func TestShellDiesWithDsh(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "DSH_LOCAL_TEST_HELPER=pdeathsig")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	pid := firstInt(t, line)
	killLater(t, pid)
	if !statAlive(pid) {
		t.Fatalf("the task %d is not running", pid)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	for deadline := time.Now().Add(10 * time.Second); statAlive(pid) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if statAlive(pid) {
		t.Errorf("the task %d outlived its SIGKILLed parent", pid)
	}
}

// The parent-death signal fires when the forking *thread* exits: a command
// started from a goroutine that locked its thread and then returns (which
// ends the thread) must keep running.
func TestStartFromExitingLockedThread(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	dir := t.TempDir()
	started := make(chan bash.Task, 1)
	var work func()
	work = func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if syscall.Gettid() == syscall.Getpid() {
			// The main thread is never ended, only parked: use another.
			done := make(chan struct{})
			go func() { work(); close(done) }()
			<-done
			runtime.UnlockOSThread()
			return
		}
		tk, err := e.Start(context.Background(), bash.ExecRequest{Command: "echo $$; exec sleep 60", Workdir: dir})
		if err != nil {
			t.Error(err)
			close(started)
			return
		}
		started <- tk
	}
	go work()
	tk, ok := <-started
	if !ok {
		return
	}
	var r bash.TaskRead
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(r.Stdout, "\n"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) || r.Task.Status != "" && r.Task.Status != bash.StatusRunning {
			t.Fatalf("the task died with the thread that started it: %+v", r)
		}
		r = read(t, e, "", tk.ID)
	}
	pid := firstInt(t, r.Stdout)
	killLater(t, pid)
	time.Sleep(300 * time.Millisecond) // the thread has long exited
	if r := read(t, e, "", tk.ID); r.Task.Status != bash.StatusRunning || !statAlive(pid) {
		t.Errorf("the task died with the thread that started it: %+v", r.Task)
	}
}
