//go:build linux

package helper

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dshq/dsh/sandbox"
)

// Main runs the helper when the process was started as one (os.Args[1] is
// Arg or the limits stage) and exits; otherwise it returns at once.
// Call it first thing in main (and in TestMain of packages whose tests
// start sandboxed commands from the test binary).
func Main() {
	dispatches.Store(true)
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case Arg:
		os.Exit(helper())
	case limitsArg:
		os.Exit(limitsStage(os.Args[2:]))
	case GoCacheArg:
		os.Exit(gocache())
	}
}

// dispatches records that this program calls Main: only then may the
// sandbox re-execute it as the helper (another program — a test binary
// of a package that never heard of the sandbox — would run its own main).
var dispatches atomic.Bool

// Dispatches reports whether this program called [Main], so that package
// linux may re-execute it (/proc/self/exe) as the helper.
func Dispatches() bool { return dispatches.Load() }

// helper is the process between dsh and the shell: it applies the plan to
// itself (namespaces were made by the clone that started it), starts the
// shell, and stays as its reaper: the init of the command's PID namespace,
// or a subreaper without one, so every process the command starts —
// daemons included — is its descendant and dies with it.
func helper() int {
	// Never unlocked: the restrictions below apply to this thread, which
	// starts the shell and sends every signal; when helper returns the
	// process exits.
	runtime.LockOSThread()
	// Our descriptors must not reach the shell: it could forge the report
	// or hold the lifeline.
	for _, fd := range []int{fdPlan, fdReport, fdProxy, fdControl} {
		unix.CloseOnExec(fd)
	}
	rep := os.NewFile(fdReport, "report")
	w := &reporter{f: rep}
	planFile := os.NewFile(fdPlan, "plan")
	if rep == nil || planFile == nil {
		fmt.Fprintln(os.Stderr, "dsh sandbox helper: started without its descriptors")
		return 125
	}
	br := bufio.NewReader(planFile)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return w.fail(fmt.Errorf("reading the plan: %w", err))
	}
	var pl Plan
	if err := json.Unmarshal(line, &pl); err != nil {
		return w.fail(fmt.Errorf("decoding the plan: %w", err))
	}
	if pl.Format != PlanFormat {
		return w.fail(fmt.Errorf("the helper %s is from another build of dsh (plan format %s, not %s): install dsh-sandbox-helper from the same build next to dsh, or remove it", os.Args[0], PlanFormat, pl.Format))
	}
	// Signals first: as a PID namespace's init, a signal without a handler
	// is dropped, so nothing sent from here on is lost.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGCHLD)

	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return w.fail(fmt.Errorf("becoming a subreaper: %w", err))
	}
	layers := []string{sandbox.LayerReaper}
	if pl.UserNS {
		layers = append(layers, sandbox.LayerUserNS)
	}
	if pl.PIDNS {
		layers = append(layers, sandbox.LayerPIDNS)
	}
	var bridge *bridge
	if pl.Confine {
		if pl.MountNS {
			if err := setupMounts(&pl); err != nil {
				return w.fail(fmt.Errorf("mounts: %w", err))
			}
			layers = append(layers, sandbox.LayerMountNS)
		}
		if pl.NetNS {
			if err := loopbackUp(); err != nil {
				return w.fail(fmt.Errorf("network namespace loopback: %w", err))
			}
			layers = append(layers, sandbox.LayerNetNS)
			if pl.Proxy {
				b, err := newBridge()
				if err != nil {
					return w.fail(fmt.Errorf("proxy bridge: %w", err))
				}
				bridge = b
			}
		}
		if pl.Landlock {
			abi, err := restrictLandlock(&pl)
			if err != nil {
				return w.fail(fmt.Errorf("landlock: %w", err))
			}
			layers = append(layers, fmt.Sprintf("%s (ABI %d)", sandbox.LayerLandlock, abi))
		}
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return w.fail(fmt.Errorf("no_new_privs: %w", err))
		}
		layers = append(layers, sandbox.LayerNoNewPriv)
		if pl.Seccomp {
			if err := loadSeccomp(pl.Filters); err != nil {
				return w.fail(fmt.Errorf("seccomp: %w", err))
			}
			layers = append(layers, sandbox.LayerSeccomp)
		}
		if err := dropCapabilities(); err != nil {
			return w.fail(fmt.Errorf("dropping capabilities: %w", err))
		}
		layers = append(layers, sandbox.LayerCaps)
	}
	if pl.Probe {
		w.send(Report{Started: true, Layers: layers})
		w.send(Report{Done: true})
		return 0
	}
	if bridge != nil {
		go bridge.serve()
	}
	if pl.Warm {
		w.send(Report{Started: true, Layers: layers})
		return serveWarm(&pl, sigs, lifelineOf(br))
	}

	path, args := pl.Path, pl.Args
	if pl.Policy.Limits.Any() {
		lim, _ := json.Marshal(pl.Policy.Limits)
		args = append([]string{"dsh", limitsArg, string(lim), path}, args...)
		path = "/proc/self/exe"
	}
	child, err := syscall.ForkExec(path, args, &syscall.ProcAttr{
		Dir:   pl.Dir,
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		return w.fail(fmt.Errorf("starting %s: %w", pl.Path, err))
	}
	w.send(Report{Started: true, Layers: layers})

	r := &reaper{pidns: pl.PIDNS, child: child, grace: time.Duration(pl.GraceMS) * time.Millisecond, self: os.Getpid()}
	code, sig := r.run(sigs, lifelineOf(br), nil)
	w.send(Report{Done: true, Exit: code, Signal: sig, Leftovers: r.leftovers})
	if sig != "" {
		return 128 + int(unix.SignalNum(sig))
	}
	return code
}

// lifelineOf returns a channel closed when dsh lets go of the plan pipe:
// dsh holds its end until the command is over (a warm helper: until it
// retires it), so EOF means dsh is gone (even by SIGKILL, even before the
// parent-death signal could be handled) or done with us.
func lifelineOf(br *bufio.Reader) <-chan struct{} {
	lifeline := make(chan struct{})
	go func() {
		_, _ = br.WriteTo(discard{})
		close(lifeline)
	}()
	return lifeline
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// reporter writes report lines.
type reporter struct {
	mu sync.Mutex
	f  *os.File
}

func (w *reporter) send(r Report) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, _ := json.Marshal(r)
	_, _ = w.f.Write(append(b, '\n'))
}

func (w *reporter) fail(err error) int {
	w.send(Report{Error: err.Error()})
	return 125
}

// reaper waits for the shell and everything it left behind.
type reaper struct {
	pidns bool
	child int
	self  int
	grace time.Duration
	// leftovers counts the processes still running when the shell exited
	// (daemons, background jobs), which the reaper then stopped.
	leftovers int
}

// run reaps until no descendant is left and returns the shell's fate.
// When the shell exits, or dsh asks (SIGTERM, or a message on term), every
// descendant gets SIGTERM and, after the grace period, SIGKILL; when dsh is
// gone they get SIGKILL at once. Its reaping goroutine has ended when run
// returns, so a warm helper's next command is reaped by the next run alone.
func (r *reaper) run(sigs <-chan os.Signal, lifeline, term <-chan struct{}) (code int, sig string) {
	reaped := make(chan reapEvent, 16)
	quit, ended := make(chan struct{}), make(chan struct{})
	go reapAll(reaped, quit, ended)
	defer func() {
		close(quit)
		<-ended
	}()
	var killTimer <-chan time.Time
	terminating := false
	terminate := func() {
		if terminating {
			return
		}
		terminating = true
		r.signalAll(syscall.SIGTERM)
		killTimer = time.After(r.grace)
	}
	for {
		select {
		case s := <-sigs:
			switch s {
			case syscall.SIGUSR1:
				r.signalAll(syscall.SIGKILL)
			case syscall.SIGCHLD:
			default:
				terminate()
			}
		case <-term:
			terminate()
		case <-lifeline:
			lifeline = nil
			r.signalAll(syscall.SIGKILL)
		case <-killTimer:
			r.signalAll(syscall.SIGKILL)
			killTimer = time.After(50 * time.Millisecond) // whatever forked since
		case ev := <-reaped:
			if ev.pid == r.child {
				code, sig = ev.code, ev.sig
				r.child = -1
				if !haveChildren() {
					return code, sig // nothing left behind: the common case, no scan
				}
				if !terminating {
					r.leftovers = len(descendants(r.self))
				}
				terminate() // leftovers: a finished command leaves nothing behind
			}
			if ev.none {
				if r.child != -1 { // cannot happen: our child is not yet reaped
					continue
				}
				return code, sig
			}
		}
	}
}

type reapEvent struct {
	pid  int
	code int
	sig  string
	none bool // no children are left
}

// reapAll waits for every child (orphans re-parented to us included) and
// reports each, then reports none once there are no children at all; it
// ends (closing ended) once quit is closed.
func reapAll(out chan<- reapEvent, quit <-chan struct{}, ended chan<- struct{}) {
	defer close(ended)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	send := func(ev reapEvent) bool {
		select {
		case out <- ev:
			return true
		case <-quit:
			return false
		}
	}
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if errors.Is(err, syscall.ECHILD) {
			if !send(reapEvent{none: true}) {
				return
			}
			// Children may still appear: none while we wait for a
			// signal is the end only once the shell was reaped.
			select {
			case <-quit:
				return
			case <-time.After(5 * time.Millisecond):
			}
			continue
		}
		if err != nil {
			send(reapEvent{none: true})
			return
		}
		ev := reapEvent{pid: pid}
		switch {
		case ws.Signaled():
			ev.sig = unix.SignalName(ws.Signal())
		default:
			ev.code = ws.ExitStatus()
		}
		if !send(ev) {
			return
		}
	}
}

// signalAll signals every descendant: in a PID namespace kill(-1) from its
// init reaches them all; without one they are found in /proc by parent.
func (r *reaper) signalAll(sig syscall.Signal) {
	if r.pidns {
		_ = syscall.Kill(-1, sig)
		return
	}
	for _, pid := range descendants(r.self) {
		_ = syscall.Kill(pid, sig)
	}
}

// descendants lists the processes below pid, from /proc.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		pp, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		children[pp] = append(children[pp], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// limitsStage applies rlimits to itself and execs the shell: args are the
// limits as JSON, then the program and its argv.
func limitsStage(args []string) int {
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "dsh sandbox: limits stage: missing arguments")
		return 125
	}
	var l sandbox.Limits
	if err := json.Unmarshal([]byte(args[0]), &l); err != nil {
		fmt.Fprintln(os.Stderr, "dsh sandbox: limits stage:", err)
		return 125
	}
	set := func(res int, v uint64) error {
		if v == 0 {
			return nil
		}
		return unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v})
	}
	// The address-space limit comes last, right before the exec: memory
	// this Go program maps after it counts against it (the environment is
	// read first for the same reason).
	env := os.Environ()
	for _, x := range []struct {
		res  int
		v    uint64
		name string
	}{
		{unix.RLIMIT_NPROC, uint64(l.Processes), "processes"},
		{unix.RLIMIT_FSIZE, uint64(l.FileSize), "fileSize"},
		{unix.RLIMIT_CPU, uint64(l.CPUSeconds), "cpuSeconds"},
		{unix.RLIMIT_AS, uint64(l.AddressSpace), "addressSpace"},
	} {
		if err := set(x.res, x.v); err != nil {
			fmt.Fprintf(os.Stderr, "dsh sandbox: sandbox.limits.%s: %v\n", x.name, err)
			return 125
		}
	}
	err := syscall.Exec(args[1], args[2:], env)
	fmt.Fprintf(os.Stderr, "dsh sandbox: exec %s: %v\n", args[1], err)
	return 127
}

// haveChildren reports whether any child (orphans included) remains: a
// subreaper without children has no descendants at all, so the common
// case — nothing left behind — needs no scan of /proc.
func haveChildren() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return !errors.Is(err, unix.ECHILD)
}
