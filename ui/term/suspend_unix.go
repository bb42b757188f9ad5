//go:build unix

package term

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
	xterm "golang.org/x/term"
)

// jobControl suspends the terminal UI the way ctrl-z suspends a program in
// a cooked terminal (raw mode turns the terminal's own ctrl-z off).
//
// Stopping is asynchronous on purpose. kill(2) returns before the group
// stop takes effect: the signal is queued for whichever thread the kernel
// picks, and the thread that sent it runs on until that one stops the
// process. Taking the terminal back right after the kill (as an earlier
// version did) therefore sometimes happened before the stop — the terminal
// went raw and the prompt was drawn while the shell still owned the
// screen, and after fg nothing took the terminal or redrew: the prompt
// never came back. So the UI only hands the terminal over and sends the
// signal; it takes the terminal again when SIGCONT arrives, and only while
// dsh is the terminal's foreground process group (a job continued with bg
// waits for fg, which sends SIGCONT again).
type jobControl struct {
	f   *os.File
	old *xterm.State // the mode to hand back (the one dsh started in)
	sig chan os.Signal
	end chan struct{}
}

// newJobControl watches for SIGCONT, calling onCont for each, until stop.
func newJobControl(f *os.File, old *xterm.State, onCont func()) *jobControl {
	j := &jobControl{f: f, old: old, sig: make(chan os.Signal, 1), end: make(chan struct{})}
	signal.Notify(j.sig, syscall.SIGCONT)
	go func() {
		for {
			select {
			case <-j.sig:
				onCont()
			case <-j.end:
				return
			}
		}
	}()
	return j
}

func (j *jobControl) stop() {
	signal.Stop(j.sig)
	close(j.end)
}

// available says whether a stopped dsh could be continued: a process group
// that is also its session's (dsh started by a shell without job control,
// sh -c, or as the session leader itself) is orphaned, and the kernel
// discards a stop signal sent to it.
func (j *jobControl) available() bool {
	sid, err := unix.Getsid(0)
	return err != nil || syscall.Getpgrp() != sid
}

// foreground says whether dsh's process group owns the terminal.
func (j *jobControl) foreground() bool {
	pg, err := unix.IoctlGetInt(int(j.f.Fd()), unix.TIOCGPGRP)
	return err != nil || pg == syscall.Getpgrp()
}

// suspend hands the terminal back in the mode dsh found it and stops the
// process group (so a command dsh runs in it stops too, as with ctrl-z in
// a cooked terminal). It returns at once; see [jobControl].
func (j *jobControl) suspend(out io.Writer) error {
	_, _ = io.WriteString(out, "\x1b[?2004l")
	if err := xterm.Restore(int(j.f.Fd()), j.old); err != nil {
		return fmt.Errorf("term: restore the terminal: %w", err)
	}
	if err := syscall.Kill(0, syscall.SIGTSTP); err != nil {
		return fmt.Errorf("term: stop: %w", err)
	}
	return nil
}

// resume takes the terminal again after SIGCONT: raw mode and bracketed
// paste. It reports false while dsh is in the background (it must not
// change the terminal's mode under the shell).
func (j *jobControl) resume(out io.Writer) (bool, error) {
	if !j.foreground() {
		return false, nil
	}
	if _, err := xterm.MakeRaw(int(j.f.Fd())); err != nil {
		return false, fmt.Errorf("term: raw mode: %w", err)
	}
	_, _ = io.WriteString(out, "\x1b[?2004h")
	return true, nil
}

// backgroundRead says whether err is a read refused because dsh is not the
// terminal's foreground group (EIO where SIGTTIN is ignored or the group is
// orphaned), which is worth waiting out rather than taken as the end of
// input.
func (j *jobControl) backgroundRead(err error) bool {
	return errors.Is(err, syscall.EIO) && !j.foreground()
}
