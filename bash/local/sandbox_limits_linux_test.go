//go:build linux

package local

import (
	"strings"
	"testing"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/sandbox"
	"github.com/dshq/dsh/sandbox/linux"
)

// sandbox.limits bind every process of a sandboxed command: a file larger
// than fileSize cannot be written, memory beyond addressSpace cannot be
// had, and a loop past cpuSeconds is killed — while the same
// commands without limits succeed. (processes, RLIMIT_NPROC, does not
// bind root, which this machine runs tests as: documented, not tested.)
func TestSandboxLimits(t *testing.T) {
	env := newEscapeEnv(t)
	sb := linux.New(linux.Options{Grace: testGrace, Home: env.home, Exe: buildHelper(t)})
	t.Cleanup(func() { _ = sb.Close() })
	requireEnforcing(t, sb)
	e := newExec(t, Config{Sandbox: sb})
	limited := env.policy(t, sandbox.ModeWorkspaceWrite)
	limited.Limits = sandbox.Limits{FileSize: 1 << 20, AddressSpace: 512 << 20, CPUSeconds: 1}
	free := env.policy(t, sandbox.ModeWorkspaceWrite)
	for _, c := range []struct{ name, cmd, limitedSays, freeSays string }{
		{"fileSize", `head -c 2097152 /dev/zero > big 2>/dev/null; echo "rc=$?"; wc -c < big`, "rc=153", "2097152"},
		{"addressSpace", `python3 -c 'b = bytearray(1024*1024*1024); print("allocated")' 2>&1 | tail -1`, "MemoryError", "allocated"},
		// Soft and hard limit are equal: the kernel's SIGKILL at the hard
		// limit comes with its SIGXCPU, so the loop dies killed (137).
		{"cpuSeconds", `python3 -c 'while True: pass' & sleep 0.1; wait $!; echo "rc=$?"`, "rc=137", "unreached"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := run(t, e, bash.ExecRequest{Command: c.cmd, Workdir: env.ws, Sandbox: limited, Env: map[string]string{"HOME": env.home}})
			if !strings.Contains(res.Stdout.Text, c.limitedSays) {
				t.Errorf("limited: want %q in:\n%s\n%s", c.limitedSays, res.Stdout.Text, res.Stderr.Text)
			}
			if c.name == "cpuSeconds" {
				return // unlimited, it would never end
			}
			res = run(t, e, bash.ExecRequest{Command: c.cmd, Workdir: env.ws, Sandbox: free, Env: map[string]string{"HOME": env.home}})
			if !strings.Contains(res.Stdout.Text, c.freeSays) {
				t.Errorf("without limits: want %q in:\n%s\n%s", c.freeSays, res.Stdout.Text, res.Stderr.Text)
			}
		})
	}
}
