//go:build unix

package term

import (
	"io"
	"os"
	"syscall"

	xterm "golang.org/x/term"
)

// suspend hands the terminal back as it was, stops dsh's process group
// (what the terminal driver does for ctrl-z outside raw mode, so a running
// command stops too) and, once the shell continues it, takes the terminal
// again.
func suspend(f *os.File, old *xterm.State, out io.Writer) {
	_, _ = io.WriteString(out, "\x1b[?2004l")
	_ = xterm.Restore(int(f.Fd()), old)
	_ = syscall.Kill(0, syscall.SIGTSTP)
	// Continued.
	if _, err := xterm.MakeRaw(int(f.Fd())); err == nil {
		_, _ = io.WriteString(out, "\x1b[?2004h")
	}
}
