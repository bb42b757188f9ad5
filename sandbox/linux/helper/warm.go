//go:build linux

package helper

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A warm helper is set up once for a plan and then runs dsh's commands one
// at a time. Re-executing a Go helper and building its namespaces, mounts,
// Landlock domain and seccomp filter costs tens of milliseconds per command
// on a machine whose process creation is dear; a warm helper's command
// costs about what an unsandboxed one does: a vfork from a small process.
//
// One command at a time is what keeps commands apart: before the next
// starts, everything the last one left running is stopped and reaped (in
// a PID namespace, kill(-1) from its init reaches them all), exactly as a
// one-shot helper does before it exits. Commands share what they would
// share under one-shot helpers of the same plan anyway: the private /tmp,
// the caches, the proxy's allow-list.
//
// The protocol on fdControl, a SOCK_SEQPACKET socket (one message each):
//
//	dsh → helper  Launch, with stdin, stdout and stderr as SCM_RIGHTS
//	helper → dsh  Report{Started}, with the shell's pidfd as SCM_RIGHTS
//	              (or Report{Error}: nothing runs)
//	dsh → helper  Launch{Terminate} (any number, optional)
//	helper → dsh  Report{Done}: the shell's fate, once nothing is left
//
// EOF on the plan pipe or the control socket retires the helper: what runs
// is killed and it exits.

// Launch is a warm helper's request: a command to start, or (Terminate)
// a request to stop the running one's processes.
type Launch struct {
	Path string   `json:"path,omitempty"`
	Args []string `json:"args,omitempty"`
	Dir  string   `json:"dir,omitempty"`
	Env  []string `json:"env,omitempty"`
	// Terminate asks for every process of the running command to get
	// SIGTERM now and SIGKILL after the grace period.
	Terminate bool `json:"terminate,omitempty"`
}

// MaxMessage bounds one control message (a command's environment is the
// large part).
const MaxMessage = 4 << 20

type launchMsg struct {
	l   Launch
	fds []int
}

// serveWarm runs commands until dsh retires the helper. It returns the
// helper's exit code.
func serveWarm(pl *Plan, sigs <-chan os.Signal, lifeline <-chan struct{}) int {
	launches := make(chan launchMsg)
	term := make(chan struct{}, 1)
	gone := make(chan struct{})
	go readControl(fdControl, launches, gone)
	dead := merge(lifeline, gone)
	grace := time.Duration(pl.GraceMS) * time.Millisecond
	self := os.Getpid()
	retire := func() int {
		r := &reaper{pidns: pl.PIDNS, child: -1, self: self}
		r.signalAll(syscall.SIGKILL)
		return 0
	}
	for {
		select {
		case <-dead:
			return retire()
		case s := <-sigs:
			if s != syscall.SIGCHLD {
				return retire()
			}
		case m := <-launches:
			if m.l.Terminate {
				closeAll(m.fds)
				continue
			}
			child, pidfd, err := startWarm(m)
			closeAll(m.fds)
			if err != nil {
				sendReport(fdControl, Report{Error: err.Error()}, -1)
				continue
			}
			sendReport(fdControl, Report{Started: true}, pidfd)
			_ = unix.Close(pidfd)
			drain(term)
			r := &reaper{pidns: pl.PIDNS, child: child, grace: grace, self: self}
			stop := make(chan struct{})
			relay := make(chan struct{})
			go func() { // launches while one runs are refused; terminations pass
				defer close(relay)
				for {
					select {
					case <-stop:
						return
					case m := <-launches:
						closeAll(m.fds)
						if !m.l.Terminate {
							sendReport(fdControl, Report{Error: "a command is already running in this helper"}, -1)
						} else {
							select {
							case term <- struct{}{}:
							default:
							}
						}
					}
				}
			}()
			code, sig := r.run(sigs, dead, term)
			close(stop)
			<-relay
			sendReport(fdControl, Report{Done: true, Exit: code, Signal: sig, Leftovers: r.leftovers}, -1)
		}
	}
}

// startWarm starts one command: its own session (dsh kills it by session,
// as any command), the parent-death signal from this locked thread, and
// a pidfd so dsh can name the shell in its own PID namespace.
func startWarm(m launchMsg) (pid, pidfd int, err error) {
	if len(m.fds) != 3 {
		return 0, -1, fmt.Errorf("launch: want 3 descriptors (stdin, stdout, stderr), got %d", len(m.fds))
	}
	if m.l.Path == "" {
		return 0, -1, errors.New("launch: no program")
	}
	pidfd = -1
	pid, err = syscall.ForkExec(m.l.Path, m.l.Args, &syscall.ProcAttr{
		Dir:   m.l.Dir,
		Env:   m.l.Env,
		Files: []uintptr{uintptr(m.fds[0]), uintptr(m.fds[1]), uintptr(m.fds[2])},
		Sys:   &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL, PidFD: &pidfd},
	})
	if err != nil {
		return 0, -1, fmt.Errorf("starting %s: %w", m.l.Path, err)
	}
	if pidfd < 0 {
		// The kernel gave no pidfd (before 5.2): dsh could not name
		// the shell, so it must not run unnamed.
		_ = syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
		return 0, -1, errors.New("the kernel gives no pidfd for a new process")
	}
	return pid, pidfd, nil
}

// readControl reads launch messages until the socket closes.
func readControl(fd int, out chan<- launchMsg, gone chan<- struct{}) {
	defer close(gone)
	buf := make([]byte, MaxMessage)
	oob := make([]byte, unix.CmsgSpace(3*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		var fds []int
		if oobn > 0 {
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err == nil {
				for _, m := range msgs {
					if r, err := unix.ParseUnixRights(&m); err == nil {
						fds = append(fds, r...)
					}
				}
			}
		}
		var l Launch
		if err := json.Unmarshal(buf[:n], &l); err != nil {
			closeAll(fds)
			sendReport(fd, Report{Error: "launch: " + err.Error()}, -1)
			continue
		}
		out <- launchMsg{l: l, fds: fds}
	}
}

// sendReport writes one report, with fd (when not -1) as SCM_RIGHTS.
func sendReport(ctl int, r Report, fd int) {
	b, _ := json.Marshal(r)
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	for {
		err := unix.Sendmsg(ctl, b, oob, nil, 0)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

func closeAll(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

func drain(c <-chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// merge returns a channel closed when either a or b is.
func merge(a, b <-chan struct{}) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		select {
		case <-a:
		case <-b:
		}
		close(out)
	}()
	return out
}
