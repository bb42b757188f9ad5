package local

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// sysProcAttr starts the shell in a new session (see spawn) and asks the
// kernel to SIGKILL it if dsh dies without cleaning up (SIGKILLed, crashed):
// the backstop for when Close never runs. It reaches only the shell itself
// (or the program it execs, as `bash -c 'sleep 100'` does) — the shell's own
// children do not inherit it — so it is no substitute for the session kills.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// threadStarter runs every cmd.Start of an executor on one goroutine locked
// to its OS thread. The parent-death signal fires when the *thread* that
// forked the child exits, not the process, and Go terminates a thread when a
// goroutine locked to it returns: forking on an arbitrary goroutine's thread
// would let unrelated code (anything calling runtime.LockOSThread and
// exiting) kill our commands at random. A locked thread runs no other
// goroutine, so this one lives exactly as long as the starter. Starts are
// serialized, which costs nothing: forks already are (syscall.ForkLock).
type threadStarter struct {
	mu   sync.Mutex // held for a whole start: one request at a time
	reqs chan *exec.Cmd
	errs chan error
	done chan struct{}
}

func (s *threadStarter) start(cmd *exec.Cmd) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reqs == nil {
		s.reqs, s.errs, s.done = make(chan *exec.Cmd), make(chan error), make(chan struct{})
		go s.loop(s.reqs, s.errs, s.done)
	}
	s.reqs <- cmd
	return <-s.errs
}

func (s *threadStarter) loop(reqs <-chan *exec.Cmd, errs chan<- error, done chan<- struct{}) {
	defer close(done)
	// Never unlocked: when the loop returns, the thread is discarded. By
	// then (Close) every shell it started has been reaped, so nothing gets
	// the parent-death signal.
	runtime.LockOSThread()
	for cmd := range reqs {
		errs <- cmd.Start()
	}
}

// stop ends the starter's goroutine (and thread). Call it only once every
// process it started has been reaped; a later start begins a new thread.
func (s *threadStarter) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reqs != nil {
		close(s.reqs)
		<-s.done
		s.reqs, s.errs, s.done = nil, nil, nil
	}
}
