package local

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/sandbox"
)

// TestSandboxWarmHelper: the commands of one plan share a warm helper, and
// sharing it changes nothing a command can see or leave behind.
func TestSandboxWarmHelper(t *testing.T) {
	sb := newSandbox(t)
	requireEnforcing(t, sb)
	e := newExec(t, Config{Sandbox: sb})
	ws := t.TempDir()
	p, err := sandbox.Compile(sandbox.Inputs{Mode: sandbox.ModeWorkspaceWrite, Cwd: ws})
	must(t, err)
	req := func(cmd string) bash.ExecRequest {
		return bash.ExecRequest{Command: cmd, Workdir: ws, Sandbox: p}
	}

	t.Run("one helper for a plan's commands", func(t *testing.T) {
		before := sb.WarmStarts()
		for i := range 4 {
			res := run(t, e, req(fmt.Sprintf("echo out-%d; echo err-%d >&2; touch /etc/dsh-escape 2>/dev/null; exit %d", i, i, i+3)))
			if res.ExitCode == nil || *res.ExitCode != i+3 || strings.TrimSpace(res.Stdout.Text) != fmt.Sprintf("out-%d", i) || strings.TrimSpace(res.Stderr.Text) != fmt.Sprintf("err-%d", i) {
				t.Fatalf("command %d: exit %s, stdout %q, stderr %q", i, exitCode(res), res.Stdout.Text, res.Stderr.Text)
			}
			if res.Sandbox == nil || !strings.Contains(strings.Join(res.Sandbox.Enforced, ","), "seccomp") {
				t.Fatalf("command %d: not reported as sandboxed: %+v", i, res.Sandbox)
			}
		}
		if _, err := os.Stat("/etc/dsh-escape"); err == nil {
			t.Fatal("a warm helper's command wrote outside the workspace")
		}
		if got := sb.WarmStarts() - before; got != 1 {
			t.Fatalf("4 commands of one plan started %d warm helpers, want 1", got)
		}
	})

	t.Run("nothing a command left runs into the next", func(t *testing.T) {
		res := run(t, e, req(`setsid -f sleep 300; nohup sleep 301 >/dev/null 2>&1 & echo left`))
		if !strings.Contains(res.Stdout.Text, "left") || res.Sandbox == nil || res.Sandbox.Leftovers == 0 {
			t.Fatalf("first command: %q, report %+v", res.Stdout.Text, res.Sandbox)
		}
		res = run(t, e, req(`for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f"; echo; done`))
		if strings.Contains(res.Stdout.Text, "sleep 30") {
			t.Fatalf("the next command in the helper sees what the last left:\n%s", res.Stdout.Text)
		}
	})

	t.Run("commands at once get helpers of their own", func(t *testing.T) {
		before := sb.WarmStarts()
		var wg sync.WaitGroup
		outs := make([]string, 3)
		for i := range outs {
			wg.Go(func() {
				res, err := e.Run(context.Background(), req(fmt.Sprintf("sleep 0.3; echo at-once-%d", i)))
				if err == nil {
					outs[i] = strings.TrimSpace(res.Stdout.Text)
				}
			})
		}
		wg.Wait()
		for i, o := range outs {
			if o != fmt.Sprintf("at-once-%d", i) {
				t.Fatalf("command %d said %q", i, o)
			}
		}
		if got := sb.WarmStarts() - before; got < 1 || got > 3 {
			t.Fatalf("3 commands at once started %d warm helpers", got)
		}
	})

	// The outcome only: every process of a timed-out command is gone, one
	// that left the session and ignores SIGTERM included. The helper also
	// stops leftovers once the shell exits, so this holds with or without
	// Launched.Terminate; what Terminate saves (a second grace period when
	// the shell itself ignores SIGTERM) is a matter of time, not asserted.
	t.Run("a timeout reaches what left the session", func(t *testing.T) {
		marker := fmt.Sprintf("dshwarm%d", time.Now().UnixNano())
		res := run(t, e, bash.ExecRequest{
			Command: fmt.Sprintf(`setsid -f bash -c 'trap "" TERM; exec -a %s-away sleep 600'; exec -a %s-fg sleep 600`, marker, marker),
			Workdir: ws, Sandbox: p, Timeout: 500 * time.Millisecond,
		})
		if !res.TimedOut {
			t.Fatalf("not timed out: %+v", res)
		}
		for _, pid := range pidsWithMarker(marker) {
			if alive(pid) {
				t.Errorf("process %d outlived its timed-out command", pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})

	t.Run("a helper killed under its command", func(t *testing.T) {
		marker := fmt.Sprintf("dshwarmkill%d", time.Now().UnixNano())
		task, err := e.Start(context.Background(), req("exec -a "+marker+" sleep 600"))
		must(t, err)
		var pids []int
		for deadline := time.Now().Add(10 * time.Second); len(pids) == 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
			pids = pidsWithMarker(marker)
		}
		if len(pids) != 1 {
			t.Fatalf("the command's process: %v", pids)
		}
		helperPID := parentOf(t, pids[0])
		must(t, syscall.Kill(helperPID, syscall.SIGKILL))
		select {
		case <-task.Done:
		case <-time.After(30 * time.Second):
			t.Fatal("the command did not end when its helper died")
		}
		if alive(pids[0]) {
			t.Errorf("the command outlived its helper")
		}
		// More commands than idle helpers can be kept: a dead helper
		// given back would fail one of them.
		for i := range warmKept + 1 {
			res := run(t, e, req("echo after"))
			if strings.TrimSpace(res.Stdout.Text) != "after" {
				t.Fatalf("command %d after the helper died: %q %q", i, res.Stdout.Text, res.Stderr.Text)
			}
		}
	})
}

// warmKept is how many idle warm helpers a plan keeps (warmPerPlan in
// package linux).
const warmKept = 2

// parentOf reads pid's parent from /proc.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	must(t, err)
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ppid, err := strconv.Atoi(f[1])
	must(t, err)
	return ppid
}
