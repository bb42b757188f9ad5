package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// signals turns the signals that ask dsh to stop into its two-step
// shutdown. The first (SIGINT, SIGTERM or SIGHUP) cancels the run's
// context, so dsh shuts down in order: the turn is cancelled, the session
// flushed, SessionEnd hooks get a short grace, commands and background
// tasks are killed. A second signal means "now": running hooks are
// stopped at once and, if dsh is still alive hardExit later, it exits on
// the spot with 128+signal, as a process killed by that signal would.
//
// SIGHUP is the terminal closing (its window, an ssh connection); left at
// its default it would end dsh on the spot and leave its tasks running —
// they live in sessions of their own and would not get the hangup. SIGQUIT
// keeps its Go default (a goroutine dump, for debugging a hang); the
// executor's parent-death signal still reaches the shells then.
type signals struct {
	ctx      context.Context
	cancel   context.CancelCauseFunc
	stopping chan struct{}
	aborting chan struct{}
	ch       chan os.Signal

	mu     sync.Mutex
	first  os.Signal
	second os.Signal
}

// hardExit is how long dsh may still take after a second signal.
const hardExit = 300 * time.Millisecond

func watchSignals(parent context.Context) *signals {
	ctx, cancel := context.WithCancelCause(parent)
	s := &signals{ctx: ctx, cancel: cancel, stopping: make(chan struct{}), aborting: make(chan struct{}), ch: make(chan os.Signal, 4)}
	signal.Notify(s.ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go s.loop()
	return s
}

func (s *signals) loop() {
	n := 0
	for sig := range s.ch {
		n++
		switch n {
		case 1:
			s.mu.Lock()
			s.first = sig
			s.mu.Unlock()
			close(s.stopping)
			s.cancel(fmt.Errorf("interrupted by %s", signalName(sig)))
		case 2:
			s.mu.Lock()
			s.second = sig
			s.mu.Unlock()
			close(s.aborting)
			code := forcedExit(sig)
			time.AfterFunc(hardExit, func() { os.Exit(code) })
		}
	}
}

// forcedExit is the exit status after a second signal: 128 + its number,
// as for a process the signal killed.
func forcedExit(sig os.Signal) int {
	if ss, ok := sig.(syscall.Signal); ok {
		return 128 + int(ss)
	}
	return 128
}

// forced is the second stop signal, or nil.
func (s *signals) forced() os.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.second
}

// received is the first stop signal, or nil.
func (s *signals) received() os.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first
}

func (s *signals) stop() {
	signal.Stop(s.ch)
	s.cancel(nil)
}

func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return sig.String()
}

type signalsKey struct{}

func withSignals(ctx context.Context, s *signals) context.Context {
	return context.WithValue(ctx, signalsKey{}, s)
}

// stopChannels returns the run's Stopping and Aborting channels (nil
// outside Main, in tests that call the commands directly).
func stopChannels(ctx context.Context) (stopping, aborting <-chan struct{}) {
	if s, ok := ctx.Value(signalsKey{}).(*signals); ok {
		return s.stopping, s.aborting
	}
	return nil, nil
}
