package tmpfs

import "syscall"

// holderAttr has the kernel kill the mount's holder when the test process
// dies, so a crashed test leaves no mount namespace behind.
func holderAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
