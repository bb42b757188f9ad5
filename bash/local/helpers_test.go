package local

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/sandbox/linux"
)

func TestMain(m *testing.M) {
	linux.Main() // sandboxed commands re-execute this binary as the helper
	if helper := os.Getenv("DSH_LOCAL_TEST_HELPER"); helper != "" {
		runHelper(helper) // never returns
	}
	goleak.VerifyTestMain(m)
}

// helpers are processes the tests start from this test binary: they exit
// instead of running the tests.
var helpers = map[string]func(){}

func runHelper(name string) {
	f := helpers[name]
	if f == nil {
		fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
		os.Exit(2)
	}
	f()
	os.Exit(0)
}

// testGrace keeps kill escalation short, as the reference's tests do.
const testGrace = 200 * time.Millisecond

func newExec(t testing.TB, cfg Config) *Executor {
	t.Helper()
	if cfg.Grace == 0 {
		cfg.Grace = testGrace
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

func run(t *testing.T, e *Executor, req bash.ExecRequest) bash.RunResult {
	t.Helper()
	if req.Workdir == "" {
		req.Workdir = t.TempDir()
	}
	res, err := e.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run(%q): %v", req.Command, err)
	}
	return res
}

func exitCode(r bash.RunResult) string {
	if r.ExitCode == nil {
		return "nil"
	}
	return strconv.Itoa(*r.ExitCode)
}

// liveInGroup lists the live (non-zombie) processes of process group pgid,
// according to ps — an oracle independent of the executor's own /proc scan.
func liveInGroup(t *testing.T, pgid int) []string {
	t.Helper()
	out, err := exec.Command("ps", "-eo", "pid=,pgid=,stat=,args=").Output()
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	var live []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[1] != strconv.Itoa(pgid) || strings.HasPrefix(f[2], "Z") {
			continue
		}
		live = append(live, line)
	}
	return live
}

// pidAlive reports whether pid exists and is not a zombie.
func pidAlive(t *testing.T, pid int) bool {
	t.Helper()
	out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	if err != nil { // ps exits 1 when the pid does not exist
		return false
	}
	s := strings.TrimSpace(string(out))
	return s != "" && !strings.HasPrefix(s, "Z")
}

// firstInt parses the first line of s as an int.
func firstInt(t *testing.T, s string) int {
	t.Helper()
	line, _, _ := strings.Cut(s, "\n")
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("expected a number on the first line of %q: %v", s, err)
	}
	return n
}

func waitDone(t *testing.T, task bash.Task) {
	t.Helper()
	select {
	case <-task.Done:
	case <-time.After(10 * time.Second):
		t.Fatalf("task %s did not finish", task.ID)
	}
}
