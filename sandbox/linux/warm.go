//go:build linux

package linux

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dshq/dsh/sandbox"
	"github.com/dshq/dsh/sandbox/linux/helper"
)

// Warm helpers: each is set up once for a plan and runs commands one at a
// time (see helper/warm.go for why and for the protocol). The sandbox keeps
// the idle ones by plan; a command takes one of its plan, or starts one,
// and gives it back when it is over. A plan differs with everything that
// shapes the sandbox — mode, rules, directory, grace — so a command never
// runs in a helper set up for another.
const (
	// warmPerPlan and warmIdle bound the idle helpers kept: two per plan
	// (a foreground command and one beside it), a handful in all.
	warmPerPlan = 2
	warmIdle    = 6
)

var _ sandbox.Launcher = (*Sandbox)(nil)

// Launch starts cmd in a warm helper of its plan.
func (s *Sandbox) Launch(cmd *exec.Cmd, p *sandbox.Policy, grace time.Duration) (sandbox.Launched, bool, error) {
	if p == nil {
		p = &sandbox.Policy{Mode: sandbox.ModeFullAccess}
	}
	if s.o.NoWarm || p.Limits.Any() {
		return nil, false, nil // rlimits are set per command by a one-shot helper's limits stage
	}
	pl, err := s.prepare(cmd, p, grace)
	if err != nil {
		return nil, false, err
	}
	pl.Warm = true
	key := warmKey(pl)
	for {
		w, fresh := s.takeWarm(key), false
		if w == nil {
			if w, err = s.startWarm(key, cmd, pl, p); err != nil {
				return nil, false, err
			}
			fresh = true
		}
		run, err := w.launch(cmd, p)
		if err == nil {
			return run, true, nil
		}
		w.retire()
		if fresh || !errors.Is(err, errGone) {
			return nil, false, err
		}
		// An idle helper died while it waited (killed, out of memory):
		// the command goes to another.
	}
}

// errGone marks a warm helper that no longer answers.
var errGone = errors.New("the warm helper is gone")

// warmKey identifies a plan without its command.
func warmKey(pl *helper.Plan) string {
	k := *pl
	k.Path, k.Args, k.ProxyTCP = "", nil, 0
	b, _ := json.Marshal(k)
	return string(b)
}

func (s *Sandbox) takeWarm(key string) *warmHelper {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := s.idle[key]
	if len(ws) == 0 {
		return nil
	}
	w := ws[len(ws)-1]
	s.idle[key] = ws[:len(ws)-1]
	if len(s.idle[key]) == 0 {
		delete(s.idle, key)
	}
	return w
}

// putWarm keeps w for the next command of its plan, or retires it.
func (s *Sandbox) putWarm(w *warmHelper) {
	s.mu.Lock()
	keep := !s.closed && len(s.idle[w.key]) < warmPerPlan
	if keep {
		n := 0
		for _, ws := range s.idle {
			n += len(ws)
		}
		keep = n < warmIdle
	}
	if keep {
		if s.idle == nil {
			s.idle = map[string][]*warmHelper{}
		}
		s.idle[w.key] = append(s.idle[w.key], w)
	}
	s.mu.Unlock()
	if !keep {
		w.retire()
	}
}

// retireIdle retires every idle warm helper (Close).
func (s *Sandbox) retireIdle() {
	s.mu.Lock()
	idle := s.idle
	s.idle = nil
	s.mu.Unlock()
	for _, ws := range idle {
		for _, w := range ws {
			w.retire()
		}
	}
}

// warmHelper is one warm helper process.
type warmHelper struct {
	s      *Sandbox
	key    string
	cmd    *exec.Cmd
	setup  *process // the plan pipe (the lifeline) and the setup report
	ctl    *net.UnixConn
	scope  *proxyScope // nil in danger-full-access
	plan   *helper.Plan
	mode   sandbox.Mode
	layers []string
	once   sync.Once
}

// startWarm starts and sets up a warm helper for pl; cmd gives its
// directory and the environment it starts with (each command brings its
// own).
func (s *Sandbox) startWarm(key string, cmd *exec.Cmd, pl *helper.Plan, p *sandbox.Policy) (*warmHelper, error) {
	w := &warmHelper{s: s, key: key, plan: pl, mode: p.Mode}
	if p.Mode.Confines() {
		scope, err := s.listen(p, s.layout)
		if err != nil {
			return nil, fmt.Errorf("%w: proxy: %v", sandbox.ErrSetup, err)
		}
		w.scope = scope
		if !pl.Proxy {
			pl.ProxyTCP = scope.port
		}
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		w.closeScope()
		return nil, fmt.Errorf("%w: control socket: %v", sandbox.ErrSetup, err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "control"), os.NewFile(uintptr(fds[1]), "control")
	defer theirs.Close()
	c, err := net.FileConn(ours)
	_ = ours.Close()
	if err != nil {
		w.closeScope()
		return nil, fmt.Errorf("%w: control socket: %v", sandbox.ErrSetup, err)
	}
	w.ctl = c.(*net.UnixConn)
	hc := exec.Command(s.o.Exe)
	hc.Dir = cmd.Dir
	hc.Env = cmd.Env
	if w.scope != nil {
		hc.Env = commandEnv(cmd.Env, pl, w.scope.port)
	}
	hc.ExtraFiles = []*os.File{theirs}
	hc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	pr, err := s.start(hc, pl, s.layout, w.scope)
	if err != nil {
		_ = w.ctl.Close()
		w.closeScope()
		return nil, err
	}
	w.cmd, w.setup = hc, pr
	if err := hc.Start(); err != nil {
		pr.Release()
		_ = w.ctl.Close()
		return nil, fmt.Errorf("%w: starting the helper: %v", sandbox.ErrSetup, err)
	}
	if err := pr.Started(); err != nil {
		_ = hc.Process.Kill()
		w.retire()
		return nil, err
	}
	w.layers = pr.layers
	s.warmStarts.Add(1)
	return w, nil
}

func (w *warmHelper) closeScope() {
	if w.scope != nil {
		w.scope.close()
	}
}

// retire ends the helper: closing the control socket and the plan pipe is
// its signal to kill whatever runs and exit. It waits for the exit (a
// helper that has not gone within retireWait is killed), so nothing of a
// retired helper outlives the call.
func (w *warmHelper) retire() {
	w.once.Do(func() {
		_ = w.ctl.Close()
		if w.setup != nil {
			w.setup.Release() // the plan pipe, the report pipe, the proxy
		} else {
			w.closeScope()
		}
		if w.cmd == nil || w.cmd.Process == nil {
			return
		}
		exited := make(chan struct{})
		go func() {
			_ = w.cmd.Wait()
			close(exited)
		}()
		select {
		case <-exited:
		case <-time.After(retireWait):
			_ = w.cmd.Process.Kill()
			<-exited
		}
	})
}

// retireWait is how long a retiring helper gets to kill what it runs and
// exit on its own.
const retireWait = 5 * time.Second

// launch sends cmd to the helper and returns once it runs.
func (w *warmHelper) launch(cmd *exec.Cmd, p *sandbox.Policy) (*warmRun, error) {
	env := cmd.Env
	if w.scope != nil {
		w.scope.begin(p.Network.Ask)
		env = commandEnv(cmd.Env, w.plan, w.scope.port)
	}
	files, release, err := stdFiles(cmd)
	if err != nil {
		return nil, err
	}
	defer release()
	b, err := json.Marshal(helper.Launch{Path: cmd.Path, Args: cmd.Args, Dir: cmd.Dir, Env: env})
	if err != nil {
		return nil, err
	}
	if len(b) > helper.MaxMessage {
		return nil, fmt.Errorf("%w: the command and its environment are %d bytes, over %d", sandbox.ErrSetup, len(b), helper.MaxMessage)
	}
	if _, _, err := w.ctl.WriteMsgUnix(b, unix.UnixRights(files...), nil); err != nil {
		return nil, fmt.Errorf("%w: %w: %v", sandbox.ErrSetup, errGone, err)
	}
	r, fds, err := w.read()
	if err != nil {
		return nil, err
	}
	if r.Error != "" {
		closeFDs(fds)
		return nil, fmt.Errorf("%w: %s", sandbox.ErrSetup, r.Error)
	}
	if !r.Started || len(fds) != 1 {
		closeFDs(fds)
		return nil, fmt.Errorf("%w: the warm helper answered %+v", sandbox.ErrSetup, r)
	}
	pidfd := os.NewFile(uintptr(fds[0]), "pidfd")
	pid, err := pidOf(pidfd)
	if err != nil {
		_ = pidfd.Close()
		return nil, fmt.Errorf("%w: %v", sandbox.ErrSetup, err)
	}
	run := &warmRun{w: w, pid: pid, pidfd: pidfd, done: make(chan struct{})}
	go run.await()
	return run, nil
}

// read reads one report and the descriptors that came with it.
func (w *warmHelper) read() (helper.Report, []int, error) {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := w.ctl.ReadMsgUnix(buf, oob)
	if err != nil || n == 0 {
		return helper.Report{}, nil, fmt.Errorf("%w: %w", sandbox.ErrSetup, errGone)
	}
	var fds []int
	if oobn > 0 {
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				if r, err := unix.ParseUnixRights(&m); err == nil {
					fds = append(fds, r...)
				}
			}
		}
	}
	var r helper.Report
	if err := json.Unmarshal(buf[:n], &r); err != nil {
		closeFDs(fds)
		return helper.Report{}, nil, fmt.Errorf("%w: bad report %q", sandbox.ErrSetup, buf[:n])
	}
	return r, fds, nil
}

// stdFiles returns cmd's stdin, stdout and stderr descriptors (a nil
// stream is /dev/null) and a func closing what it opened.
func stdFiles(cmd *exec.Cmd) ([]int, func(), error) {
	var opened []*os.File
	release := func() {
		for _, f := range opened {
			_ = f.Close()
		}
	}
	var fds []int
	for i, s := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		if s == nil || s == (*os.File)(nil) {
			f, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			if err != nil {
				release()
				return nil, nil, err
			}
			opened = append(opened, f)
			fds = append(fds, int(f.Fd()))
			continue
		}
		f, ok := s.(*os.File)
		if !ok {
			release()
			return nil, nil, fmt.Errorf("sandbox: a warm helper needs files for the standard streams (stream %d is %T)", i, s)
		}
		fds = append(fds, int(f.Fd()))
	}
	return fds, release, nil
}

// pidOf reads the process id a pidfd names, in our PID namespace.
func pidOf(pidfd *os.File) (int, error) {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(int(pidfd.Fd())))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Pid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("sandbox: the kernel does not say which process a pidfd names")
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

// warmRun is one command in a warm helper.
type warmRun struct {
	w     *warmHelper
	pid   int
	pidfd *os.File // held so the shell's id is not reused while we use it
	done  chan struct{}
	fate  atomic.Pointer[helper.Report]
}

var _ sandbox.Launched = (*warmRun)(nil)

func (r *warmRun) await() {
	defer close(r.done)
	rep, fds, err := r.w.read()
	closeFDs(fds)
	if err == nil && rep.Done {
		r.fate.Store(&rep)
	}
}

func (r *warmRun) Pid() int       { return r.pid }
func (r *warmRun) Started() error { return nil }
func (r *warmRun) Wait()          { <-r.done }

func (r *warmRun) Terminate() {
	b, _ := json.Marshal(helper.Launch{Terminate: true})
	_, _, _ = r.w.ctl.WriteMsgUnix(b, nil, nil)
}

func (r *warmRun) Exited() (int, string, bool) {
	<-r.done
	f := r.fate.Load()
	if f == nil {
		return 0, "", false
	}
	return f.Exit, f.Signal, true
}

func (r *warmRun) Report() sandbox.Report {
	rep := sandbox.Report{Mode: r.w.mode, Enforced: slices.Clone(r.w.layers)}
	if f := r.fate.Load(); f != nil {
		rep.Leftovers = f.Leftovers
	}
	if sc := r.w.scope; sc != nil {
		sc.mu.Lock()
		rep.Blocked = slices.Clone(sc.blocked)
		sc.mu.Unlock()
	}
	return rep
}

// Release gives the helper back for the next command, or retires it when
// this command did not end as it should (the helper died or never said).
func (r *warmRun) Release() {
	_ = r.pidfd.Close()
	select {
	case <-r.done:
		if r.fate.Load() != nil {
			r.w.s.putWarm(r.w)
			return
		}
	default:
	}
	r.w.retire()
}
