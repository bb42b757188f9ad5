package term

import (
	"io"
	"time"
)

// suspend is ctrl-z: what is committed is printed, the live region erased
// and the terminal handed back as dsh found it, then the process group is
// stopped. The UI takes the terminal again in [ui.continued].
func (u *ui) suspend() {
	if u.suspended {
		return
	}
	if u.jc == nil {
		u.setHint("ctrl-z: not a terminal, nothing to suspend", 2*time.Second)
		return
	}
	if !u.jc.available() {
		// The kernel would discard the stop, or nothing could continue it.
		u.setHint("ctrl-z: the shell that started dsh has no job control", 3*time.Second)
		return
	}
	if u.view != nil {
		_, _ = io.WriteString(u.out, "\x1b[?1049l")
	} else {
		_, _ = io.WriteString(u.out, u.scr.Frame(u.tr.Take(), nil, -1, 0, u.width(), u.height()))
	}
	_, _ = io.WriteString(u.out, u.scr.Clear())
	u.suspended = true
	if err := u.jc.suspend(u.out); err != nil {
		u.suspended = false
		_, _ = u.jc.resume(u.out)
		u.retake()
		u.setHint(err.Error(), 3*time.Second)
	}
}

// continued answers SIGCONT. After dsh's own ctrl-z it takes the terminal
// once dsh is in the foreground (a job continued in the background waits
// for fg, whose SIGCONT comes here again) and draws everything afresh.
// After a stop it did not ask for (SIGSTOP from elsewhere) the shell may
// have changed the mode and written over the live region: the mode is set
// again and the region erased and drawn.
func (u *ui) continued() {
	if u.jc == nil {
		return
	}
	if !u.suspended {
		if ok, _ := u.jc.resume(u.out); ok {
			_, _ = io.WriteString(u.out, u.scr.Clear())
		}
		return
	}
	ok, err := u.jc.resume(u.out)
	if err != nil {
		u.setHint(err.Error(), 3*time.Second)
	}
	if !ok {
		return
	}
	u.suspended = false
	u.retake()
}

// retake draws the screen from nothing: the transcript view's alternate
// screen, or the live region below the cursor.
func (u *ui) retake() {
	u.scr.Reset()
	if u.view != nil {
		_, _ = io.WriteString(u.out, "\x1b[?1049h\x1b[H\x1b[2J")
	}
	u.draw()
}
