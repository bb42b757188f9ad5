package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The helper process: harden, then let a child try to read our
// environment from /proc the way a bash tool command would.
func TestMain(m *testing.M) {
	if os.Getenv("DSH_HARDEN_HELPER") == "1" {
		if os.Getenv("DSH_HARDEN_SKIP") == "" {
			if err := harden(); err != nil {
				os.Stderr.WriteString("harden: " + err.Error() + "\n")
				os.Exit(3)
			}
		}
		cmd := exec.Command("sh", "-c", `cat /proc/$PPID/environ; echo; echo "exe: $(readlink /proc/$PPID/exe)"`)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // the child itself holds no secret
		out, _ := cmd.CombinedOutput()
		os.Stdout.Write(out)
		// dsh itself still finds its executable, lists its descriptors and
		// reads its status. (Not its own environ, which becomes root's
		// 0400 file; nothing in dsh reads it.)
		if _, err := os.Executable(); err != nil {
			os.Stdout.WriteString("self: executable: " + err.Error() + "\n")
		}
		if _, err := os.ReadDir("/proc/self/fd"); err != nil {
			os.Stdout.WriteString("self: " + err.Error() + "\n")
		}
		for _, f := range []string{"/proc/self/stat", "/proc/self/status", "/proc/self/maps"} {
			if _, err := os.ReadFile(f); err != nil {
				os.Stdout.WriteString("self: " + err.Error() + "\n")
			}
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helper runs this test binary as the helper process. Root reads any
// process's /proc files whether it is dumpable or not, so as root the helper
// runs as nobody: what matters is a child of the same, unprivileged user.
func helper(t *testing.T, skip bool) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cred *syscall.Credential
	if os.Getuid() == 0 {
		dir, err := os.MkdirTemp("", "dsh-harden-") // t.TempDir's parent is private
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		exe = filepath.Join(dir, "helper")
		if err := os.WriteFile(exe, b, 0o755); err != nil {
			t.Fatal(err)
		}
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Env = append(os.Environ(), "DSH_HARDEN_HELPER=1", "DSH_TEST_SECRET_CANARY=canary-4f2a")
	if skip {
		cmd.Env = append(cmd.Env, "DSH_HARDEN_SKIP=1")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	return string(out)
}

func TestHardenHidesEnvironFromChildren(t *testing.T) {
	// Without harden the child reads the secret: the check below is real.
	if out := helper(t, true); !strings.Contains(out, "canary-4f2a") {
		t.Skipf("this system does not expose a parent's environ to its children: %q", out)
	}
	out := helper(t, false)
	if strings.Contains(out, "canary-4f2a") {
		t.Errorf("a child read the hardened parent's environment:\n%s", out)
	}
	if strings.Contains(out, "self:") {
		t.Errorf("the hardened process cannot read its own /proc files:\n%s", out)
	}
}
