package local

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshq/dsh/bash"
)

// statAlive reports whether pid exists and is not a zombie, from
// /proc/PID/stat.
func statAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	f := bytes.Fields(b[i+1:])
	return len(f) > 0 && f[0][0] != 'Z' && f[0][0] != 'X'
}

// waitPidFile waits for a command to write its pid to path.
func waitPidFile(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			return firstInt(t, string(b))
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

// killLater makes sure a process the test started is gone whatever
// happens: it and its process group are SIGKILLed at cleanup.
func killLater(t *testing.T, pid int) {
	t.Cleanup(func() {
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 && pgid != syscall.Getpgrp() {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	})
}

// GNU timeout (without --foreground) moves itself and its child into a new
// process group: a timeout must still kill them, since they stayed in the
// command's session.
func TestRunTimeoutKillsProcessInOtherGroup(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	res := run(t, e, bash.ExecRequest{
		Command: `timeout 60 sh -c 'echo $$ > ` + pidFile + `; exec sleep 60'; echo done`,
		Workdir: dir, Timeout: 500 * time.Millisecond,
	})
	pid := waitPidFile(t, pidFile)
	killLater(t, pid)
	if !res.TimedOut {
		t.Errorf("result %+v, want timed out", res)
	}
	if statAlive(pid) {
		t.Errorf("sleep %d (in its own process group) survived the timeout", pid)
	}
}

// A foreground command's leftovers are killed when the shell exits even if
// job control (set -m) put them in process groups of their own.
func TestRunLeftoverInOtherGroupIsKilled(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	res := run(t, e, bash.ExecRequest{Command: `set -m; sleep 60 >/dev/null 2>&1 & echo $!`})
	pid := firstInt(t, res.Stdout.Text)
	killLater(t, pid)
	if statAlive(pid) {
		t.Errorf("background job %d in its own group survived the command", pid)
	}
}

// KillOwner and Close reach a background task's processes in other groups.
// (The shell must not exec timeout: a session leader cannot change its
// process group, hence the trailing echo.)
func TestKillOwnerAndCloseKillProcessInOtherGroup(t *testing.T) {
	t.Parallel()
	e, err := New(Config{Grace: testGrace})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx := context.Background()
	var pids []int
	for i, owner := range []bash.Owner{"a", "b"} {
		pidFile := filepath.Join(dir, "pid"+strconv.Itoa(i))
		if _, err := e.Start(ctx, bash.ExecRequest{
			Command: `timeout 60 sh -c 'echo $$ > ` + pidFile + `; exec sleep 60'; echo done`,
			Workdir: dir, Owner: owner,
		}); err != nil {
			t.Fatal(err)
		}
		pid := waitPidFile(t, pidFile)
		killLater(t, pid)
		pids = append(pids, pid)
	}
	if err := e.KillOwner(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if statAlive(pids[0]) {
		t.Errorf("KillOwner: sleep %d in another group survived", pids[0])
	}
	if !statAlive(pids[1]) {
		t.Errorf("KillOwner(a) killed owner b's task")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if statAlive(pids[1]) {
		t.Errorf("Close: sleep %d in another group survived", pids[1])
	}
}
