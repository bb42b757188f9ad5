//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package acp

import (
	"os"

	"golang.org/x/sys/unix"
)

// ClaimStdout takes the process's standard output for the protocol. It
// returns a private duplicate of file descriptor 1 (closed on exec, so no
// child process inherits it) and points descriptor 1 at standard error.
// Whatever else writes to standard output afterwards (a library, a
// plugin, a hook or command that inherits it, a stray fmt.Print) lands in
// the diagnostics stream, never between protocol frames. It also keeps a
// vanished client from killing the process with SIGPIPE on descriptor 1
// before the server has flushed its sessions.
func ClaimStdout() (*os.File, error) {
	fd, err := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, err
	}
	if err := dup2(2, 1); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "acp-stdout"), nil
}
