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
		// dsh itself still reads its environment: Go works with a copy.
		if os.Getenv("DSH_TEST_SECRET_CANARY") == "" {
			os.Stdout.WriteString("self: the environment is gone\n")
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helper runs this test binary as the helper process, as nobody when the
// test runs as root and asRoot is false: a child of the same, unprivileged
// user is what non-dumpable defends against, while the scrubbed
// environment block must hold against root too.
func helper(t *testing.T, skip bool) string { return helperAs(t, skip, false) }

func helperAs(t *testing.T, skip, asRoot bool) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cred *syscall.Credential
	if os.Getuid() == 0 && !asRoot {
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

// As root, non-dumpable does not stop a reader: the environment block
// itself must be empty.
func TestHardenScrubsEnvironForRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: an unprivileged reader is stopped by non-dumpable alone")
	}
	if out := helperAs(t, true, true); !strings.Contains(out, "canary-4f2a") {
		t.Fatalf("without harden, root did not read the canary: the check below would prove nothing: %q", out)
	}
	out := helperAs(t, false, true)
	if strings.Contains(out, "canary-4f2a") {
		t.Errorf("root read the hardened process's environment:\n%s", out)
	}
	if strings.Contains(out, "self:") {
		t.Errorf("the hardened process lost something of its own:\n%s", out)
	}
}

// BenchmarkScrubEnviron measures what the scrub adds to start-up (it
// zeroes this benchmark process's own block, which nothing here reads).
func BenchmarkScrubEnviron(b *testing.B) {
	for b.Loop() {
		if err := scrubEnviron(); err != nil {
			b.Fatal(err)
		}
	}
}
