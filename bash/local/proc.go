package local

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/sandbox"
)

// Why a process is being killed; timeouts and aborts are reported in the
// result.
type killReason int

const (
	reasonKill    killReason = iota // Kill, KillOwner, Close
	reasonTimeout                   // foreground timeout
	reasonAbort                     // caller's context
)

// drainAfterExit bounds how long output is awaited after the shell exited
// with no process left in its session: the pipes can then only be held open
// by something that escaped the session (setsid), which we cannot wait for.
const drainAfterExit = 250 * time.Millisecond

// reapSlack is how long after SIGKILL the session is awaited before giving up
// (a process stuck in uninterruptible sleep cannot die sooner).
const reapSlack = 500 * time.Millisecond

// spawnSpec is a validated request.
type spawnSpec struct {
	shell    string
	command  string
	workdir  string
	env      []string
	stdin    []byte // nil: /dev/null
	grace    time.Duration
	maxBytes int
	spill    func(stream string) func() (*os.File, error)
	starter  *threadStarter
	sandbox  sandbox.Sandbox // nil: run as it is
	policy   *sandbox.Policy
	onOutput func([]byte) // nil: nobody watches
}

// proc is one running command: the shell as leader of its own session (and
// of that session's first process group), the two output readers, an
// optional stdin writer and the waiter that turns all of it into one
// completion.
type proc struct {
	cmd      *exec.Cmd
	sid      int // the session's id: the shell's pid
	grace    time.Duration
	started  time.Time
	stdout   *collector
	stderr   *collector
	outR     *os.File
	errR     *os.File
	stdinW   *os.File
	stdin    []byte
	onOutput func([]byte)
	readDone chan struct{} // one value per reader that hit EOF (or was cut off)
	writer   chan struct{} // closed when the stdin writer is done; nil without stdin

	mu          sync.Mutex
	reaped      bool // the leader has been reaped
	killStarted time.Time
	escalate    *time.Timer
	sessionGone bool
	timedOut    bool
	aborted     bool

	// Set by wait before it calls exited; read only after that.
	exitCode *int
	signal   string
	ended    time.Time

	// sb is the sandbox's handle on the command (nil without one); its
	// report is final after wait.
	sb sandbox.Process
	// warm is sb when a warm helper started the shell: cmd was never
	// started, and the helper reports the shell's fate.
	warm     sandbox.Launched
	sbMu     sync.Mutex
	sbReport *sandbox.Report

	// exited runs in the waiter once the outcome is final, before done is
	// closed; the func it returns runs after done is closed.
	exited func(*proc) (after func())
	done   chan struct{}
}

var readBufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// spawn starts a command's process. It returns an error only when nothing
// could be started; otherwise the caller must call begin, after which every
// outcome is reported through done.
func spawn(s spawnSpec) (_ *proc, err error) {
	fi, err := os.Stat(s.workdir)
	if err != nil {
		return nil, fmt.Errorf("bash: workdir: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("bash: workdir %s: not a directory", s.workdir)
	}
	var closers []*os.File
	defer func() {
		if err != nil {
			for _, f := range closers {
				_ = f.Close()
			}
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err != nil {
			return nil, nil, fmt.Errorf("bash: creating pipe: %w", err)
		}
		closers = append(closers, r, w)
		return r, w, nil
	}
	outR, outW, err := pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(s.shell, "-c", s.command)
	cmd.Dir = s.workdir
	cmd.Env = s.env
	cmd.Stdout, cmd.Stderr = outW, errW // *os.File: handed to the child as is, no copy goroutine
	// A new session, not just a new process group: the command has no
	// controlling terminal, so a program that opens /dev/tty to prompt (ssh,
	// sudo, git credentials) fails at once instead of stopping on SIGTTIN or
	// scribbling over dsh's own terminal. The session is also what kills
	// target (see group.go).
	cmd.SysProcAttr = sysProcAttr()
	var stdinW *os.File
	if s.stdin != nil {
		var inR *os.File
		if inR, stdinW, err = pipe(); err != nil {
			return nil, err
		}
		cmd.Stdin = inR
	} // else exec opens /dev/null: reads see EOF at once, nothing can block on input
	grace := s.grace
	var sb sandbox.Process
	var warm sandbox.Launched
	if l, ok := s.sandbox.(sandbox.Launcher); ok {
		// A warm helper starts the shell itself; cmd is only its
		// description.
		if warm, ok, err = l.Launch(cmd, s.policy, s.grace); err != nil {
			return nil, fmt.Errorf("bash: %w", err)
		}
		if ok {
			sb = warm
		}
	}
	if s.sandbox != nil && warm == nil {
		if sb, err = s.sandbox.Wrap(cmd, s.policy, s.grace); err != nil {
			return nil, fmt.Errorf("bash: %w", err)
		}
	}
	if sb != nil {
		// The helper escalates to SIGKILL itself, reaching what left the
		// session; ours is the backstop.
		grace += reapSlack
	}
	var sid int
	if warm != nil {
		sid = warm.Pid() // running already: the helper started it
	} else {
		if err := s.starter.start(cmd); err != nil {
			if sb != nil {
				sb.Release()
			}
			return nil, fmt.Errorf("bash: starting %s: %w", s.shell, err)
		}
		if sb != nil {
			if err := sb.Started(); err != nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				sb.Release()
				_ = outW.Close()
				_ = errW.Close()
				return nil, fmt.Errorf("bash: %w", err)
			}
		}
		sid = cmd.Process.Pid
	}
	// The child has its copies; ours must go so EOF arrives when it exits.
	_ = outW.Close()
	_ = errW.Close()
	if f, ok := cmd.Stdin.(*os.File); ok {
		_ = f.Close()
	}
	p := &proc{
		cmd:      cmd,
		warm:     warm,
		sid:      sid,
		grace:    grace,
		sb:       sb,
		started:  time.Now(),
		stdout:   newCollector(s.maxBytes, s.spill("stdout")),
		stderr:   newCollector(s.maxBytes, s.spill("stderr")),
		outR:     outR,
		errR:     errR,
		stdinW:   stdinW,
		stdin:    s.stdin,
		onOutput: s.onOutput,
		readDone: make(chan struct{}, 2),
		done:     make(chan struct{}),
	}
	return p, nil
}

// begin starts the goroutines that read, feed and reap the command. It is
// separate from spawn so the executor can register the process before its
// completion can possibly be reported.
func (p *proc) begin(exited func(*proc) (after func())) {
	p.exited = exited
	go p.read(p.outR, p.stdout)
	go p.read(p.errR, p.stderr)
	if p.stdinW != nil {
		p.writer = make(chan struct{})
		go p.writeStdin(p.stdin)
	}
	go p.wait()
}

func (p *proc) read(r *os.File, c *collector) {
	defer func() { p.readDone <- struct{}{} }()
	bp := readBufPool.Get().(*[]byte)
	defer readBufPool.Put(bp)
	buf := *bp
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = c.Write(buf[:n])
			if p.onOutput != nil {
				p.onOutput(buf[:n])
			}
		}
		if err != nil {
			_ = r.Close()
			return
		}
	}
}

// writeStdin feeds the command's input. Errors are dropped on purpose: a
// command that exits without reading its input (EPIPE) has still run fine.
func (p *proc) writeStdin(b []byte) {
	defer close(p.writer)
	_, _ = p.stdinW.Write(b)
	_ = p.stdinW.Close()
}

// kill starts the session kill for reason: SIGTERM now, SIGKILL after the
// grace period. It reports false, doing nothing, when the shell has already
// exited (the waiter then deals with whatever it left behind).
func (p *proc) kill(reason killReason) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return false
	}
	switch reason {
	case reasonTimeout:
		p.timedOut = true
	case reasonAbort:
		p.aborted = true
	}
	p.startKillLocked()
	return true
}

func (p *proc) startKillLocked() {
	if !p.killStarted.IsZero() {
		return
	}
	p.killStarted = time.Now()
	signalSession(p.sid, syscall.SIGTERM)
	if p.warm != nil {
		p.warm.Terminate() // what left the session is the helper's to reach
	}
	p.escalate = time.AfterFunc(p.grace, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if !p.sessionGone {
			signalSession(p.sid, syscall.SIGKILL)
		}
	})
}

// wait is the single place a command ends: reap the shell, kill what it left
// in its session, collect the remaining output, wait for the session to be
// gone, and only then report completion.
func (p *proc) wait() {
	if p.warm != nil {
		p.warm.Wait()
	} else {
		_ = p.cmd.Wait() // the status is read from ProcessState below
	}
	exitedAt := time.Now()
	leftovers := sessionAlive(p.sid)

	p.mu.Lock()
	p.reaped = true
	if leftovers {
		// Processes the command put in the background would otherwise
		// outlive it (and hold its output open): a finished command leaves
		// nothing behind. Servers belong in background tasks.
		p.startKillLocked()
	}
	killStarted := p.killStarted
	p.mu.Unlock()

	drainBy := exitedAt.Add(drainAfterExit)
	if !killStarted.IsZero() {
		drainBy = later(killStarted, exitedAt).Add(p.grace + reapSlack)
	}
	p.awaitReaders(drainBy)

	if !killStarted.IsZero() {
		waitSessionGone(p.sid, killStarted.Add(p.grace), killStarted.Add(p.grace+reapSlack))
	}
	p.mu.Lock()
	p.sessionGone = true
	if p.escalate != nil {
		p.escalate.Stop() // the session is gone; its id may be reused
	}
	p.mu.Unlock()

	if p.stdinW != nil {
		_ = p.stdinW.Close() // unblocks a writer the command never read from
		<-p.writer
	}
	p.stdout.finish()
	p.stderr.finish()
	p.exitCode, p.signal = exitStatus(p.cmd.ProcessState)
	if p.sb != nil {
		if code, sig, ok := p.sb.Exited(); ok {
			// The helper's own status stands for the shell's; its report
			// is the shell's real fate.
			p.exitCode, p.signal = nil, sig
			if sig == "" {
				p.exitCode = &code
			}
		}
		r := p.sb.Report()
		p.sbMu.Lock()
		p.sbReport = &r
		p.sbMu.Unlock()
		p.sb.Release()
	}
	p.ended = time.Now()
	var after func()
	if p.exited != nil {
		after = p.exited(p)
	}
	close(p.done)
	if after != nil {
		after()
	}
}

// awaitReaders waits for both output readers to reach EOF, cutting them off
// at deadline: by then only something outside our reach can be holding the
// pipes open.
func (p *proc) awaitReaders(deadline time.Time) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for pending := 2; pending > 0; {
		select {
		case <-p.readDone:
			pending--
		case <-t.C:
			_ = p.outR.SetReadDeadline(time.Now())
			_ = p.errR.SetReadDeadline(time.Now())
		}
	}
}

// waitSessionGone polls until the session has no live member or the
// deadline passes. There is no way to wait for processes that are not our
// children. After killAt (the SIGKILL escalation) it SIGKILLs whatever it
// still finds, so a member that started a new process group after the
// escalation's scan does not outlive the wait.
func waitSessionGone(sid int, killAt, deadline time.Time) {
	d := time.Millisecond
	for time.Now().Before(deadline) {
		pgids, ok := sessionGroups(sid)
		if !ok {
			if !sessionAlive(sid) {
				return
			}
		} else if len(pgids) == 0 {
			return
		} else if !time.Now().Before(killAt) {
			signalGroups(pgids, 0, syscall.SIGKILL)
		}
		time.Sleep(d)
		d = min(2*d, 20*time.Millisecond)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// exitStatus reads the shell's fate: an exit code, or the name of the
// signal that ended it.
func exitStatus(ps *os.ProcessState) (*int, string) {
	if ps == nil {
		return nil, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		name := unix.SignalName(ws.Signal())
		if name == "" {
			name = fmt.Sprintf("SIG%d", int(ws.Signal()))
		}
		return nil, name
	}
	code := ps.ExitCode()
	return &code, ""
}

// outcome reads the kill flags; only meaningful after done.
func (p *proc) outcome() (timedOut, aborted bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.timedOut, p.aborted
}

// result is the foreground outcome; call it after done.
func (p *proc) result() bash.RunResult {
	timedOut, aborted := p.outcome()
	r := bash.RunResult{
		ExitCode: p.exitCode,
		Signal:   p.signal,
		TimedOut: timedOut,
		Aborted:  aborted,
		Duration: p.ended.Sub(p.started),
	}
	r.Sandbox = p.sandboxReport()
	r.Stdout, r.Stderr = p.stdout.collected(), p.stderr.collected()
	return r
}

// sandboxReport is what the sandbox saw of the command so far (final after
// done); nil without a sandbox.
func (p *proc) sandboxReport() *sandbox.Report {
	if p.sb == nil {
		return nil
	}
	p.sbMu.Lock()
	done := p.sbReport
	p.sbMu.Unlock()
	if done != nil {
		r := *done
		return &r
	}
	r := p.sb.Report()
	return &r
}
