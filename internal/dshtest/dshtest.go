// Package dshtest runs the dsh binary in tests as a real process: it
// builds it once per test binary, gives each test a private DSH_HOME and
// working directory, and a fake Anthropic API (package fakeanthropic) as
// the only model. Node scripts that drive dsh through npm SDKs run with the
// same environment.
package dshtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dshq/dsh/internal/fakeanthropic"
)

// Bin is the dsh binary Main built.
var Bin string

// Main builds dsh (with -race when race is set) from the repository root
// (root is relative to the test's directory, e.g. ".."), runs the tests
// and removes the binary; after runs once the tests have (stopping what
// they shared, such as a browser).
func Main(m *testing.M, root string, race bool, after ...func()) {
	dir, err := os.MkdirTemp("", "dsh-bin-")
	if err != nil {
		panic(err)
	}
	Bin = filepath.Join(dir, "dsh")
	args := []string{"build"}
	if race {
		args = append(args, "-race")
	}
	args = append(args, "-o", Bin, "./cmd/dsh")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building dsh: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	for _, f := range after {
		f()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// Env is a private dsh environment.
type Env struct {
	T         testing.TB
	Home, Dir string
	Model     *fakeanthropic.Server
	// Root is the repository root, relative to the test's directory.
	Root string
}

// New starts a fake model answering with reply and makes the directories.
func New(t testing.TB, root string, reply func(fakeanthropic.Request) fakeanthropic.Reply) *Env {
	t.Helper()
	s, err := fakeanthropic.Start(reply)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	home := t.TempDir()
	_ = os.Chmod(home, 0o700)
	return &Env{T: t, Home: home, Dir: t.TempDir(), Model: s, Root: root}
}

// Environ is the process environment for dsh (and scripts that start it).
func (e *Env) Environ(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "DSH_HOME", "DSH_MODEL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "DEEPSEEK_API_KEY", "OPENAI_API_KEY",
			"CLAUDE_CODE_SDK_READS_SESSION_STATE", "DSH_MCP_TOKEN":
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "DSH_HOME="+e.Home, "DSH_MODEL=anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY=test-key",
		"ANTHROPIC_BASE_URL="+e.Model.URL)
	return append(out, extra...)
}

// Result is a finished dsh process.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Run runs dsh with stdin and args in the environment's directory.
func (e *Env) Run(stdin string, args ...string) Result {
	e.T.Helper()
	cmd := exec.Command(Bin, args...)
	cmd.Dir = e.Dir
	cmd.Env = e.Environ()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.T.Fatal(err)
	}
	return Result{out.String(), errb.String(), code}
}

// Lines decodes JSON lines.
func Lines(t testing.TB, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %v: %s", err, l)
		}
		out = append(out, m)
	}
	return out
}

// Node runs a node script with arguments and returns the JSON object it
// prints; env is added to the environment. It skips the test when node or
// the npm package pkg (a path under node_modules) is missing; a report
// with an "error" fails it.
func (e *Env) Node(script, pkg string, args []string, env ...string) map[string]any {
	e.T.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		e.T.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(e.Root, "node_modules", pkg, "package.json")); err != nil {
		e.T.Skipf("node_modules/%s is missing (run npm ci at the repository root)", pkg)
	}
	cmd := exec.Command("node", append([]string{script}, args...)...)
	cmd.Env = append(e.Environ(env...), "DSH_BIN="+Bin, "WORKDIR="+e.Dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		e.T.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		e.T.Fatalf("node %s %v timed out\nstdout %s\nstderr %s", script, args, out.String(), errb.String())
	}
	var rep map[string]any
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		e.T.Fatalf("node %s %v printed %q (%v); stderr %s", script, args, out.String(), err, errb.String())
	}
	if msg, ok := rep["error"]; ok {
		e.T.Fatalf("node %s %v failed: %v\ndsh stderr: %v\nnode stderr: %s", script, args, msg, rep["stderr"], errb.String())
	}
	return rep
}
