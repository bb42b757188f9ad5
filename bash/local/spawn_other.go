//go:build !linux

package local

import (
	"os/exec"
	"syscall"
)

// sysProcAttr starts the shell in a new session (see spawn). There is no
// parent-death signal here: if dsh dies without running Close, its commands
// keep running.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// threadStarter starts commands on the calling goroutine; only Linux needs a
// dedicated thread (see spawn_linux.go).
type threadStarter struct{}

func (*threadStarter) start(cmd *exec.Cmd) error { return cmd.Start() }
func (*threadStarter) stop()                     {}
