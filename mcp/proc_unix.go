//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// isolate runs the server in its own process group: the terminal's ^C goes
// to dsh, not to every server, and a wrapper's children (npx, sh -c) can be
// ended together.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup ends whatever is left of the server's process group.
func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}
