//go:build linux

package linux

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dshq/dsh/sandbox"
)

// buildHelper builds cmd/dsh-sandbox-helper into dir under name, with
// extra go build flags.
func buildHelper(t *testing.T, dir, name string, flags ...string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	args := append([]string{"build", "-o", out}, flags...)
	cmd := exec.Command("go", append(args, "../../cmd/dsh-sandbox-helper")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// The dedicated helper does the test binary's job: a sandboxed command
// started through it is confined (a write outside the workspace is
// refused by the kernel, one inside works) and the status, measured with
// it, enforces and names it.
func TestDedicatedHelperConfines(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("linux only")
	}
	helper := buildHelper(t, t.TempDir(), HelperBinary)
	// The home stays visible (it is under /tmp here, which the sandbox
	// replaces by a private one): a write there is the host's.
	home := t.TempDir()
	sb := New(Options{Exe: helper, Home: home})
	defer sb.Close()
	if base := New(Options{}).Status(); !base.Enforcing {
		t.Skipf("the sandbox does not enforce here: %s", base.Reason)
	}
	st := sb.Status()
	if !st.Enforcing {
		t.Fatalf("the test binary enforces here, the dedicated helper does not: %s", st.Reason)
	}
	if st.Helper != helper {
		t.Errorf("status names helper %q, want %q", st.Helper, helper)
	}
	ws := filepath.Join(home, "ws")
	outside := filepath.Join(home, "outside.txt")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	p, err := sandbox.Compile(sandbox.Inputs{Mode: sandbox.ModeWorkspaceWrite, Cwd: ws, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", `echo in > inside.txt && echo out > "$1"; echo "rc=$?"`, "sh", outside)
	cmd.Dir = ws
	cmd.Env = os.Environ()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	pr, err := sb.Wrap(cmd, p, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Release()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := pr.Started(); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal(err)
	}
	_ = cmd.Wait()
	code, _, ok := pr.Exited()
	if !ok || code != 0 {
		t.Fatalf("exit %d (known %v): %s", code, ok, out.String())
	}
	if b, err := os.ReadFile(filepath.Join(ws, "inside.txt")); err != nil || string(b) != "in\n" {
		t.Errorf("the write inside the workspace: %q, %v (%s)", b, err, out.String())
	}
	if _, err := os.Stat(outside); err == nil || !strings.Contains(out.String(), "Permission denied") {
		t.Errorf("the write outside the workspace was not refused: %s", out.String())
	}
	if !slicesContain(pr.Report().Enforced, sandbox.LayerLandlock) {
		t.Errorf("layers applied: %v", pr.Report().Enforced)
	}
}

// slicesContain reports whether some layer of xs is x ("landlock (ABI 7)"
// is landlock).
func slicesContain(xs []string, x string) bool {
	for _, y := range xs {
		if strings.HasPrefix(y, x) {
			return true
		}
	}
	return false
}

// FindHelper takes only a helper it can trust: none next to the program
// is "not found", one next to it is found, one others may write is
// refused with the reason.
func TestFindHelperRefuses(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "dsh")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := FindHelper(exe); !os.IsNotExist(err) {
		t.Fatalf("no helper next to dsh: %v, want not-exist", err)
	}
	h := buildHelper(t, dir, HelperBinary)
	if got, err := FindHelper(exe); err != nil || got != h {
		t.Fatalf("a helper of this build next to dsh: %q, %v", got, err)
	}
	if err := os.Chmod(h, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := FindHelper(exe); err == nil || !strings.Contains(err.Error(), "written by others") {
		t.Fatalf("a world-writable helper: %v", err)
	}
}

// A helper whose plan format differs (another build: here a salted one)
// refuses every plan, and the status says so instead of claiming
// enforcement; commands then cannot start in a confined mode.
func TestStaleHelperIsRefusedLoudly(t *testing.T) {
	if base := New(Options{}).Status(); !base.Enforcing {
		t.Skipf("the sandbox does not enforce here: %s", base.Reason)
	}
	h := buildHelper(t, t.TempDir(), HelperBinary, "-ldflags=-X github.com/dshq/dsh/sandbox/linux/helper.formatSalt=stale")
	sb := New(Options{Exe: h})
	defer sb.Close()
	st := sb.Status()
	if st.Enforcing || !strings.Contains(st.Reason, "from another build of dsh") {
		t.Fatalf("status with a stale helper: enforcing %v, %q", st.Enforcing, st.Reason)
	}
	ws := t.TempDir()
	p, err := sandbox.Compile(sandbox.Inputs{Mode: sandbox.ModeWorkspaceWrite, Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/true")
	cmd.Dir = ws
	if _, err := sb.Wrap(cmd, p, time.Second); err == nil {
		t.Fatal("a confined command was wrapped by a helper that cannot read its plan")
	}
}
