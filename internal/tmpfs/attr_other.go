//go:build !linux

package tmpfs

import "syscall"

// holderAttr: there is no parent-death signal off Linux (nor unshare, so
// New fails there with its message).
func holderAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
