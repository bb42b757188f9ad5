package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dshq/dsh/bash"
)

func TestRunOutcomes(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	for _, tc := range []struct {
		cmd            string
		stdout, stderr string
		exit           string
	}{
		{"echo hello", "hello\n", "", "0"},
		{"true", "", "", "0"},
		{"echo out; echo err >&2", "out\n", "err\n", "0"},
		{"echo failing; exit 3", "failing\n", "", "3"},
		{"pwd -P >/dev/null; printf 'no newline'", "no newline", "", "0"},
	} {
		res := run(t, e, bash.ExecRequest{Command: tc.cmd})
		if res.Stdout.Text != tc.stdout || res.Stderr.Text != tc.stderr || exitCode(res) != tc.exit {
			t.Errorf("%q: stdout %q stderr %q exit %s; want %q %q %s",
				tc.cmd, res.Stdout.Text, res.Stderr.Text, exitCode(res), tc.stdout, tc.stderr, tc.exit)
		}
		if res.TimedOut || res.Aborted || res.Signal != "" || res.Stdout.Truncated {
			t.Errorf("%q: unexpected outcome %+v", tc.cmd, res)
		}
	}
}

func TestRunWorkdir(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	dir := t.TempDir()
	res := run(t, e, bash.ExecRequest{Command: "pwd -P", Workdir: dir})
	want, _ := filepath.EvalSymlinks(dir)
	if strings.TrimSpace(res.Stdout.Text) != want {
		t.Errorf("pwd = %q, want %q", res.Stdout.Text, want)
	}
}

func TestRunInfrastructureErrors(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := e.Run(ctx, bash.ExecRequest{Command: "true", Workdir: "/nonexistent-dsh"})
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "bash: ") {
		t.Errorf("missing workdir: err = %v, want a bash: error wrapping fs.ErrNotExist", err)
	}
	for _, req := range []bash.ExecRequest{
		{Command: "true", Workdir: file},                                          // not a directory
		{Command: "true", Workdir: "relative/dir"},                                // not absolute
		{Command: "true"},                                                         // no workdir
		{Command: "  ", Workdir: "/"},                                             // empty command
		{Command: "true", Workdir: "/", Timeout: -time.Second},                    // bad timeout
		{Command: "true", Workdir: "/", Env: map[string]string{"A=B": "x"}},       // bad env name
		{Command: "true", Workdir: "/", Env: map[string]string{"A": "nul\x00in"}}, // bad env value
	} {
		if _, err := e.Run(ctx, req); err == nil || !strings.HasPrefix(err.Error(), "bash: ") {
			t.Errorf("Run(%+v): err = %v, want a bash: error", req, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.Run(cctx, bash.ExecRequest{Command: "true", Workdir: "/"}); err == nil ||
		!strings.Contains(err.Error(), "aborted before start") || !errors.Is(err, context.Canceled) {
		t.Errorf("pre-cancelled: err = %v", err)
	}
}

func TestRunTimeoutKillsWithSIGTERM(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	start := time.Now()
	res := run(t, e, bash.ExecRequest{Command: "sleep 60", Timeout: 100 * time.Millisecond})
	if !res.TimedOut || res.Signal != "SIGTERM" || res.ExitCode != nil || res.Timeout != 100*time.Millisecond {
		t.Errorf("result %+v, want timed out by SIGTERM after 100ms", res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

// A command that traps SIGTERM and exits 0 is timed out AND exits 0: the
// outcome fields are independent.
func TestRunTimeoutTrappedTerm(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	res := run(t, e, bash.ExecRequest{Command: `trap "exit 0" TERM; sleep 60`, Timeout: 100 * time.Millisecond})
	if !res.TimedOut || exitCode(res) != "0" || res.Signal != "" {
		t.Errorf("result %+v, want timedOut with exit 0", res)
	}
}

// A group that ignores SIGTERM is SIGKILLed after the grace period, and
// nothing of it survives.
func TestRunTimeoutIgnoredTermEscalates(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	start := time.Now()
	res := run(t, e, bash.ExecRequest{
		Command: `trap "" TERM; echo $$; sleep 60 & sleep 60 & wait`,
		Timeout: 100 * time.Millisecond,
	})
	took := time.Since(start)
	if !res.TimedOut || res.Signal != "SIGKILL" {
		t.Errorf("result %+v, want timed out and SIGKILLed", res)
	}
	if took < 100*time.Millisecond+testGrace {
		t.Errorf("returned after %v, before the grace period ran out", took)
	}
	if live := liveInGroup(t, firstInt(t, res.Stdout.Text)); len(live) > 0 {
		t.Errorf("survivors after SIGKILL: %q", live)
	}
}

// Background children of a foreground command are killed with its group when
// the shell exits — whether or not they keep the output pipes open.
func TestRunLeftoverProcessesAreKilled(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	for _, cmd := range []string{
		`echo $$; sleep 100 & echo $!`,
		`echo $$; sleep 100 >/dev/null 2>&1 & echo $!`,
		`echo $$; (trap "" TERM; sleep 100) & echo $!`, // ignores TERM: needs the SIGKILL
		`echo $$; bash -c 'sleep 100 & wait' & echo $!`,
	} {
		start := time.Now()
		res := run(t, e, bash.ExecRequest{Command: cmd})
		if d := time.Since(start); d > testGrace+2*time.Second {
			t.Errorf("%q: took %v", cmd, d)
		}
		if exitCode(res) != "0" {
			t.Errorf("%q: exit %s", cmd, exitCode(res))
		}
		lines := strings.Fields(res.Stdout.Text)
		if len(lines) != 2 {
			t.Fatalf("%q: output %q", cmd, res.Stdout.Text)
		}
		pgid, child := firstInt(t, lines[0]), firstInt(t, lines[1])
		if pidAlive(t, child) {
			t.Errorf("%q: background child %d survived", cmd, child)
		}
		if live := liveInGroup(t, pgid); len(live) > 0 {
			t.Errorf("%q: survivors in group %d: %q", cmd, pgid, live)
		}
	}
}

func TestRunContextCancelKillsGroup(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	res, err := e.Run(ctx, bash.ExecRequest{Command: "echo $$; sleep 60 & sleep 60", Workdir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Aborted || res.TimedOut {
		t.Errorf("result %+v, want aborted", res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	if live := liveInGroup(t, firstInt(t, res.Stdout.Text)); len(live) > 0 {
		t.Errorf("survivors: %q", live)
	}
}

func TestRunTimeoutDefaultsAndCap(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{Timeout: time.Second, MaxTimeout: 2 * time.Second})
	if got := run(t, e, bash.ExecRequest{Command: "true"}).Timeout; got != time.Second {
		t.Errorf("default timeout %v, want 1s", got)
	}
	if got := run(t, e, bash.ExecRequest{Command: "true", Timeout: 99999 * time.Second}).Timeout; got != 2*time.Second {
		t.Errorf("capped timeout %v, want 2s", got)
	}
	if got := run(t, e, bash.ExecRequest{Command: "true", Timeout: 1500 * time.Millisecond}).Timeout; got != 1500*time.Millisecond {
		t.Errorf("requested timeout %v, want 1.5s", got)
	}
}

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Timeout: -1},
		{MaxTimeout: -1},
		{MaxOutputBytes: -1},
		{Grace: -1},
		{Timeout: 3 * time.Second, MaxTimeout: 2 * time.Second},
		{Shell: "/nonexistent/shell"},
	} {
		if e, err := New(cfg); err == nil {
			e.Close()
			t.Errorf("New(%+v) succeeded", cfg)
		} else if !strings.HasPrefix(err.Error(), "bash/local: ") {
			t.Errorf("New(%+v): %v, want a bash/local: error", cfg, err)
		}
	}
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.cfg.Timeout != DefaultTimeout || e.cfg.MaxTimeout != DefaultMaxTimeout ||
		e.cfg.MaxOutputBytes != DefaultMaxOutputBytes || e.cfg.Grace != DefaultGrace {
		t.Errorf("defaults not applied: %+v", e.cfg)
	}
}

func TestRunEnv(t *testing.T) {
	// t.Setenv: not parallel.
	t.Setenv("DSH_TEST_SECRET_TOKEN", "leak1")
	t.Setenv("DSH_TEST_API_KEY", "leak2")
	t.Setenv("dsh_test_password", "leak3")
	t.Setenv("DSH_TEST_CREDENTIALS_FILE", "leak4")
	t.Setenv("DSH_TEST_PLAIN", "visible")
	t.Setenv("TERM", "xterm-256color")
	e := newExec(t, Config{})
	const show = `for v in DSH_TEST_SECRET_TOKEN DSH_TEST_API_KEY dsh_test_password DSH_TEST_CREDENTIALS_FILE DSH_TEST_PLAIN NO_COLOR TERM PAGER GIT_PAGER; do printf '%s=%s\n' $v "${!v-absent}"; done`
	res := run(t, e, bash.ExecRequest{Command: show})
	want := "DSH_TEST_SECRET_TOKEN=absent\nDSH_TEST_API_KEY=absent\ndsh_test_password=absent\nDSH_TEST_CREDENTIALS_FILE=absent\n" +
		"DSH_TEST_PLAIN=visible\nNO_COLOR=1\nTERM=dumb\nPAGER=cat\nGIT_PAGER=cat\n"
	if res.Stdout.Text != want {
		t.Errorf("scrubbed env:\n%s\nwant:\n%s", res.Stdout.Text, want)
	}
	res = run(t, e, bash.ExecRequest{Command: show, Env: map[string]string{
		"DSH_TEST_SECRET_TOKEN": "explicit-wins", "TERM": "xterm-256color",
	}})
	if !strings.Contains(res.Stdout.Text, "DSH_TEST_SECRET_TOKEN=explicit-wins\n") ||
		!strings.Contains(res.Stdout.Text, "TERM=xterm-256color\n") ||
		!strings.Contains(res.Stdout.Text, "DSH_TEST_API_KEY=absent\n") {
		t.Errorf("explicit env not applied:\n%s", res.Stdout.Text)
	}
}

func TestRunStdin(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	if res := run(t, e, bash.ExecRequest{Command: "cat", Stdin: []byte("hello from stdin\n")}); res.Stdout.Text != "hello from stdin\n" {
		t.Errorf("cat with stdin: %q", res.Stdout.Text)
	}
	if res := run(t, e, bash.ExecRequest{Command: "cat", Stdin: []byte{}}); res.Stdout.Text != "" || exitCode(res) != "0" {
		t.Errorf("cat with empty stdin: %+v", res)
	}
	if res := run(t, e, bash.ExecRequest{Command: "cat"}); res.Stdout.Text != "" || exitCode(res) != "0" {
		t.Errorf("cat without stdin: %+v", res)
	}
	if res := run(t, e, bash.ExecRequest{Command: "test -c /dev/stdin && echo char"}); res.Stdout.Text != "char\n" {
		t.Errorf("stdin without input is not /dev/null: %q", res.Stdout.Text)
	}
	big := bytes.Repeat([]byte("x"), 1<<20)
	if res := run(t, e, bash.ExecRequest{Command: "exit 7", Stdin: big}); exitCode(res) != "7" {
		t.Errorf("unread 1 MiB stdin: exit %s", exitCode(res))
	}
	// A leftover child holds stdin open without reading: the writer must not
	// keep the command from completing once the child is killed.
	start := time.Now()
	if res := run(t, e, bash.ExecRequest{Command: "sleep 100 & exit 0", Stdin: big}); exitCode(res) != "0" {
		t.Errorf("stdin held by leftover child: exit %s", exitCode(res))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stdin held by leftover child: took %v", d)
	}
}

// The headline memory guarantee: 100 MB of output costs a bounded tail in
// memory, and the spill file holds every byte.
func TestRunHugeOutputBoundedMemorySpillsEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("100 MB of output")
	}
	e := newExec(t, Config{})
	const total = 100_000_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := run(t, e, bash.ExecRequest{Command: "yes 0123456789abcdefghi | head -c 100000000"})
	runtime.ReadMemStats(&after)

	alloc := after.TotalAlloc - before.TotalAlloc
	if alloc > 16<<20 {
		t.Errorf("allocated %d bytes while collecting %d bytes of output; want bounded", alloc, total)
	}
	t.Logf("collected %d bytes with %d KiB allocated in total", total, alloc>>10)
	out := res.Stdout
	if !out.Truncated || len(out.Text) != DefaultMaxOutputBytes {
		t.Fatalf("truncated=%v len=%d, want a %d-byte tail", out.Truncated, len(out.Text), DefaultMaxOutputBytes)
	}
	if res.Stderr.Truncated || res.Stderr.SpillPath != "" {
		t.Errorf("stderr spilled: %+v", res.Stderr)
	}
	if ok, _ := regexp.MatchString(`/dsh-bash-\d+-\d+-[0-9a-f]{12}-stdout\.log$`, out.SpillPath); !ok {
		t.Errorf("spill path %q has an unexpected name", out.SpillPath)
	}
	fi, err := os.Stat(out.SpillPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != total || fi.Mode().Perm() != 0o600 {
		t.Errorf("spill file size %d mode %v, want %d 0600", fi.Size(), fi.Mode().Perm(), total)
	}
	di, err := os.Stat(filepath.Dir(out.SpillPath))
	if err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("spill dir mode %v (%v), want 0700", di.Mode().Perm(), err)
	}
	f, err := os.Open(out.SpillPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 40)
	if _, err := f.ReadAt(head, 0); err != nil || string(head) != strings.Repeat("0123456789abcdefghi\n", 2) {
		t.Errorf("spill file head %q (%v)", head, err)
	}
	tail := make([]byte, len(out.Text))
	if _, err := f.ReadAt(tail, total-int64(len(tail))); err != nil || string(tail) != out.Text {
		t.Errorf("in-memory tail differs from the spill file's tail (%v)", err)
	}
}

func TestRunOutputExactlyAtCapIsNotTruncated(t *testing.T) {
	t.Parallel()
	spill := filepath.Join(t.TempDir(), "spill")
	e := newExec(t, Config{MaxOutputBytes: 500, SpillDir: spill})
	res := run(t, e, bash.ExecRequest{Command: "head -c 500 /dev/zero | tr '\\0' a"})
	if res.Stdout.Truncated || res.Stdout.SpillPath != "" || len(res.Stdout.Text) != 500 {
		t.Errorf("at cap: truncated=%v spill=%q len=%d", res.Stdout.Truncated, res.Stdout.SpillPath, len(res.Stdout.Text))
	}
	if _, err := os.Stat(spill); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("spill directory created without a spill: %v", err)
	}
	res = run(t, e, bash.ExecRequest{Command: "for i in $(seq 1 100); do printf 'line-%04d\\n' $i; done"})
	if !res.Stdout.Truncated || !strings.HasSuffix(res.Stdout.Text, "line-0100\n") || len(res.Stdout.Text) != 500 {
		t.Errorf("over cap: truncated=%v tail=%q", res.Stdout.Truncated, res.Stdout.Text)
	}
	full, err := os.ReadFile(res.Stdout.SpillPath)
	if err != nil || !bytes.HasPrefix(full, []byte("line-0001\n")) || len(full) != 1000 {
		t.Errorf("spill file: %d bytes (%v)", len(full), err)
	}
}

// Close removes the private spill directory it created.
func TestCloseRemovesPrivateSpillDir(t *testing.T) {
	t.Parallel()
	e, err := New(Config{MaxOutputBytes: 10, Grace: testGrace})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background(), bash.ExecRequest{Command: "seq 1 100", Workdir: t.TempDir()})
	if err != nil || res.Stdout.SpillPath == "" {
		t.Fatalf("no spill: %+v %v", res, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(res.Stdout.SpillPath)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("spill dir still there after Close: %v", err)
	}
}

// A process that escapes the group with its own session is out of reach of
// group kills; if it holds the output pipes open, completion still comes
// shortly after the shell exits instead of waiting for it.
func TestRunEscapedProcessDoesNotHoldCompletion(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	start := time.Now()
	res := run(t, e, bash.ExecRequest{Command: "setsid sleep 30 & echo $!"})
	took := time.Since(start)
	pid := firstInt(t, res.Stdout.Text)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if took > drainAfterExit+2*time.Second || exitCode(res) != "0" {
		t.Errorf("took %v, exit %s", took, exitCode(res))
	}
}

// TestRunOnOutputStreams checks that a watcher sees output while the
// command still runs (the command waits for a file the test writes only
// after the first line arrived), and everything it printed by the end.
func TestRunOnOutputStreams(t *testing.T) {
	t.Parallel()
	e := newExec(t, Config{})
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	var mu sync.Mutex
	var seen strings.Builder
	first := make(chan struct{})
	var once sync.Once
	res := run(t, e, bash.ExecRequest{
		Command: fmt.Sprintf("echo started; while [ ! -e %q ]; do sleep 0.01; done; echo oops >&2; echo done", gate),
		Workdir: dir,
		Timeout: 20 * time.Second, // a watcher that sees nothing early fails, not hangs
		OnOutput: func(p []byte) {
			mu.Lock()
			seen.Write(p)
			mu.Unlock()
			if strings.Contains(string(p), "started") {
				once.Do(func() {
					close(first)
					_ = os.WriteFile(gate, nil, 0o600)
				})
			}
		},
	})
	select {
	case <-first:
	default:
		t.Fatal("the watcher never saw the first line")
	}
	mu.Lock()
	got := seen.String()
	mu.Unlock()
	for _, want := range []string{"started\n", "oops\n", "done\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("watched output %q lacks %q", got, want)
		}
	}
	if res.Stdout.Text != "started\ndone\n" || res.Stderr.Text != "oops\n" {
		t.Errorf("the result changed: %+v", res)
	}
}
