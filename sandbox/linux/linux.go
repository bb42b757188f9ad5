//go:build linux

// Package linux is the Linux kernel sandbox. Each command runs under a
// helper, dsh itself re-executed with a hidden subcommand ([helper.Arg]),
// started in new user, mount, network, PID and IPC namespaces (where the
// kernel allows them) and applying, in this order: the mounts (fresh /proc,
// minimal /dev, private /tmp, empty /run, masks over hidden paths,
// read-only binds over protected ones), the loopback and the proxy
// bridge, Landlock (the best ABI the kernel offers), no_new_privs, seccomp
// and an empty capability set. It then starts the shell and stays as its
// reaper: init of the PID namespace, or a subreaper, so everything the
// command starts — daemons included — is killed when the command ends,
// when dsh asks, and when dsh dies (parent-death signal and a lifeline
// pipe). In danger-full-access the helper only contains.
//
// What the machine supports is probed once, by running the helper: the
// status reports what was really applied, never what was hoped for.
package linux

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/dshq/dsh/sandbox"
	"github.com/dshq/dsh/sandbox/linux/helper"
	"github.com/dshq/dsh/sandbox/proxy"
)

// Options configure a [Sandbox].
type Options struct {
	// Exe is the program that runs the helper; default the dedicated
	// helper next to this program when [FindHelper] accepts it, else
	// /proc/self/exe.
	Exe string
	// Disable lists layers not to use (the DSH_SANDBOX_DISABLE switch).
	Disable []string
	// Home is the user's home directory (kept visible when under /tmp).
	Home string
	// Grace is how long leftovers get between SIGTERM and SIGKILL when
	// Wrap is given none.
	Grace time.Duration
	// NoWarm starts a helper for every command instead of keeping warm
	// ones (see warm.go): for comparing the two, and for a kernel where
	// they misbehave.
	NoWarm bool
	// Proxy serves the network allow-lists; default a new proxy.
	Proxy  *proxy.Proxy
	Logger *slog.Logger
}

// Sandbox is the Linux implementation of [sandbox.Sandbox].
type Sandbox struct {
	o     Options
	log   *slog.Logger
	proxy *proxy.Proxy

	probeOnce sync.Once
	status    sandbox.Status
	layout    layout              // the namespaces that work here
	filters   [][]unix.SockFilter // the seccomp programs, compiled by the probe

	mu     sync.Mutex
	state  string // private directory: tmp/ and proxy sockets
	closed bool
	seq    atomic.Uint64
	idle   map[string][]*warmHelper // warm helpers by plan (warmKey)

	warmStarts atomic.Uint64
}

// WarmStarts reports how many warm helpers were started: tests check that
// commands of one plan share one.
func (s *Sandbox) WarmStarts() uint64 { return s.warmStarts.Load() }

// layout is what the probe found usable.
type layout struct {
	userNS, mountNS, netNS, pidNS, landlock, seccomp bool
}

// New returns the Linux sandbox.
func New(o Options) *Sandbox {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Exe == "" {
		o.Exe = "/proc/self/exe"
		if self, err := os.Executable(); err == nil {
			if h, err := FindHelper(self); err == nil {
				o.Exe = h
			} else if !errors.Is(err, os.ErrNotExist) {
				o.Logger.Warn("sandbox: not using the dedicated helper; dsh runs itself as the helper", "err", err)
			}
		}
	}
	if o.Grace == 0 {
		o.Grace = 3 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Sandbox{o: o, log: o.Logger, proxy: o.Proxy}
	if s.proxy == nil {
		s.proxy = proxy.New(proxy.Options{Logger: o.Logger})
	}
	return s
}

var _ sandbox.Sandbox = (*Sandbox)(nil)

// Status probes once and reports what is enforced.
func (s *Sandbox) Status() sandbox.Status {
	s.probeOnce.Do(s.probe)
	return s.status
}

func (s *Sandbox) disabled(layer string) bool { return slices.Contains(s.o.Disable, layer) }

// probe finds the strongest layout that starts: every namespace first,
// then without the user namespace (root needs none), then without
// namespaces at all; Landlock and seccomp are tried inside whichever
// works. It records each layer as the helper reports it.
func (s *Sandbox) probe() {
	st := sandbox.Status{Platform: "linux", Implementation: "linux", Helper: s.o.Exe}
	if s.o.Exe == "/proc/self/exe" && !helper.Dispatches() {
		st.Reason = "this program does not run the sandbox helper (its main must call linux.Main first)"
		st.Layers = []sandbox.Layer{{Name: sandbox.LayerReaper, Detail: st.Reason}}
		st.Settle()
		s.status = st
		return
	}
	if abi, err := ll.LandlockGetABIVersion(); err == nil {
		st.LandlockABI = abi
	}
	seccompOK := unix.Prctl(unix.PR_GET_SECCOMP, 0, 0, 0, 0) == nil
	seccompWhy := "the kernel has no seccomp filters"
	if seccompOK {
		filters, err := seccompFilters()
		if err != nil {
			seccompOK, seccompWhy = false, "its filters do not compile: "+err.Error()
		}
		s.filters = filters
	}
	want := layout{
		userNS: !s.disabled(sandbox.LayerUserNS), mountNS: !s.disabled(sandbox.LayerMountNS),
		netNS: !s.disabled(sandbox.LayerNetNS), pidNS: !s.disabled(sandbox.LayerPIDNS),
		landlock: st.LandlockABI > 0 && !s.disabled(sandbox.LayerLandlock),
		seccomp:  seccompOK && !s.disabled(sandbox.LayerSeccomp),
	}
	candidates := []layout{want}
	if want.userNS {
		noUser := want
		noUser.userNS = false
		candidates = append(candidates, noUser)
	}
	bare := want
	bare.userNS, bare.mountNS, bare.netNS, bare.pidNS = false, false, false, false
	candidates = append(candidates, bare)
	var applied []string
	var errs []string
	for _, c := range candidates {
		if !c.userNS && (c.mountNS || c.netNS || c.pidNS) && os.Geteuid() != 0 {
			continue // without a user namespace only root can make the others
		}
		layers, err := s.probeLayout(c)
		if err == nil {
			s.layout, applied = c, layers
			break
		}
		errs = append(errs, err.Error())
	}
	why := func(layer string, ok bool, missing string) sandbox.Layer {
		l := sandbox.Layer{Name: layer, Active: ok}
		if ok {
			for _, a := range applied {
				if strings.HasPrefix(a, layer+" (") {
					l.Detail = strings.TrimPrefix(strings.TrimSuffix(a, ")"), layer+" (")
				}
			}
			return l
		}
		switch {
		case s.disabled(layer):
			l.Detail = "disabled by DSH_SANDBOX_DISABLE"
		default:
			l.Detail = missing
		}
		return l
	}
	has := func(layer string) bool {
		return slices.ContainsFunc(applied, func(a string) bool { return a == layer || strings.HasPrefix(a, layer+" (") })
	}
	nsWhy := "the kernel refused to create it"
	if len(errs) > 0 {
		nsWhy += ": " + errs[0]
	}
	llWhy := "the kernel offers no Landlock"
	if st.LandlockABI > 0 {
		llWhy = "could not be applied"
	}
	st.Layers = []sandbox.Layer{
		why(sandbox.LayerUserNS, has(sandbox.LayerUserNS), nsWhy),
		why(sandbox.LayerMountNS, has(sandbox.LayerMountNS), nsWhy),
		why(sandbox.LayerNetNS, has(sandbox.LayerNetNS), nsWhy),
		why(sandbox.LayerPIDNS, has(sandbox.LayerPIDNS), nsWhy),
		why(sandbox.LayerLandlock, has(sandbox.LayerLandlock), llWhy),
		why(sandbox.LayerSeccomp, has(sandbox.LayerSeccomp), seccompWhy),
		why(sandbox.LayerNoNewPriv, has(sandbox.LayerNoNewPriv), "not applied"),
		why(sandbox.LayerCaps, has(sandbox.LayerCaps), "not applied"),
		why(sandbox.LayerReaper, has(sandbox.LayerReaper), "the helper does not start"),
	}
	if applied == nil {
		st.Reason = "the sandbox helper does not start: " + strings.Join(errs, "; ")
	}
	st.Settle()
	s.status = st
}

// probeLayout runs the helper once with layout c and returns the layers it
// applied.
func (s *Sandbox) probeLayout(c layout) ([]string, error) {
	dir, err := os.MkdirTemp("", "dsh-sandbox-probe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command("/bin/true")
	cmd.Dir = dir
	p := &sandbox.Policy{Mode: sandbox.ModeWorkspaceWrite, Writable: []sandbox.Entry{{Path: dir, Why: "probe"}}}
	pl := s.planFor(cmd, p, c)
	pl.Probe = true
	pl.Tmp = ""
	pr, err := s.start(cmd, pl, c, nil)
	if err != nil {
		return nil, err
	}
	defer pr.Release()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if err := pr.Started(); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	_ = cmd.Wait()
	return pr.layers, nil
}

// stateDir is the sandbox's private directory, made on first use.
func (s *Sandbox) stateDir() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", errors.New("sandbox: closed")
	}
	if s.state == "" {
		dir, err := os.MkdirTemp("", "dsh-sandbox-")
		if err != nil {
			return "", err
		}
		if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o700); err != nil {
			return "", err
		}
		_ = os.Chmod(filepath.Join(dir, "tmp"), 0o1777) // only we can reach it: dir is 0700
		f, err := os.OpenFile(filepath.Join(dir, "denied"), os.O_CREATE|os.O_WRONLY, 0)
		if err != nil {
			return "", err
		}
		_ = f.Close()
		s.state = dir
	}
	return s.state, nil
}

// Close removes the private directory. Commands must have ended.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	s.closed = true // before the idle helpers go: none is kept after
	s.mu.Unlock()
	s.retireIdle()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != "" {
		err := os.RemoveAll(s.state)
		s.state = ""
		return err
	}
	return nil
}

func (s *Sandbox) planFor(cmd *exec.Cmd, p *sandbox.Policy, c layout) *helper.Plan {
	confine := p.Mode.Confines()
	pl := &helper.Plan{
		Format: helper.PlanFormat,
		Path:   cmd.Path, Args: cmd.Args, Dir: cmd.Dir, Policy: *p,
		Confine: confine,
		GraceMS: int(s.o.Grace / time.Millisecond),
	}
	if confine {
		pl.UserNS, pl.MountNS, pl.NetNS, pl.PIDNS = c.userNS, c.mountNS, c.netNS, c.pidNS
		pl.Landlock, pl.Seccomp = c.landlock, c.seccomp
		if c.seccomp {
			pl.Filters = s.filters
		}
		pl.Home = s.o.Home
	}
	return pl
}

// Wrap rewrites cmd to run under the helper.
func (s *Sandbox) Wrap(cmd *exec.Cmd, p *sandbox.Policy, grace time.Duration) (sandbox.Process, error) {
	if p == nil {
		p = &sandbox.Policy{Mode: sandbox.ModeFullAccess}
	}
	pl, err := s.prepare(cmd, p, grace)
	if err != nil {
		return nil, err
	}
	var scope *proxyScope
	if p.Mode.Confines() {
		if scope, err = s.listen(p, s.layout); err != nil {
			return nil, fmt.Errorf("%w: proxy: %v", sandbox.ErrSetup, err)
		}
		scope.begin(p.Network.Ask)
		if !pl.Proxy {
			pl.ProxyTCP = scope.port
		}
		cmd.Env = commandEnv(cmd.Env, pl, scope.port)
	}
	pr, err := s.start(cmd, pl, s.layout, scope)
	if err != nil {
		if scope != nil {
			scope.close()
		}
		return nil, err
	}
	return pr, nil
}

// prepare makes the plan of cmd under p: everything but the proxy's
// endpoint, which is the command's own (Wrap) or its warm helper's.
func (s *Sandbox) prepare(cmd *exec.Cmd, p *sandbox.Policy, grace time.Duration) (*helper.Plan, error) {
	st := s.Status()
	c := s.layout
	if p.Mode.Confines() && !st.Active(sandbox.LayerReaper) {
		return nil, fmt.Errorf("%w: %s", sandbox.ErrSetup, st.Reason)
	}
	pl := s.planFor(cmd, p, c)
	if grace > 0 {
		pl.GraceMS = int(grace / time.Millisecond)
	}
	if !p.Mode.Confines() {
		return pl, nil
	}
	state, err := s.stateDir()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", sandbox.ErrSetup, err)
	}
	if pl.MountNS {
		pl.Tmp = filepath.Join(state, "tmp")
		pl.Denied = filepath.Join(state, "denied")
		pl.Policy.Hidden = append(pl.Policy.Hidden, sandbox.Entry{Path: state, Why: "the sandbox's own state"})
		for _, e := range slices.Concat(p.Writable, p.Protected, p.Pinned) {
			pl.Keep = append(pl.Keep, e.Path)
		}
		pl.Keep = append(pl.Keep, cmd.Dir)
		if s.o.Home != "" {
			pl.Keep = append(pl.Keep, s.o.Home)
		}
		pl.TmpDir = "/tmp"
		writable := func(k string) bool {
			return p.Mode == sandbox.ModeWorkspaceWrite && slices.ContainsFunc(p.Writable, func(e sandbox.Entry) bool {
				return k == e.Path || strings.HasPrefix(k, e.Path+"/")
			})
		}
		if slices.ContainsFunc(pl.Keep, func(k string) bool { return strings.HasPrefix(k, "/tmp/") && !writable(k) }) {
			pl.TmpDir = "/tmp/.dsh-tmp"
		}
		pl.Cache = p.Cache
		if pl.Cache == "" || p.Mode != sandbox.ModeWorkspaceWrite {
			pl.Cache = filepath.Join(state, "cache") // read-only: gone with dsh
		}
		if err := prepareCaches(pl.Cache); err != nil {
			return nil, fmt.Errorf("%w: caches: %v", sandbox.ErrSetup, err)
		}
	}
	pl.Proxy = c.netNS
	return pl, nil
}

// commandEnv is a confined command's environment: the proxy variables
// (port is the proxy's loopback port when there is no network namespace),
// TMPDIR and the cache variables set, host sockets dropped.
func commandEnv(env []string, pl *helper.Plan, port int) []string {
	set := proxyEnv(pl.Proxy, port, pl.TmpDir)
	if pl.Cache != "" {
		maps.Copy(set, cacheEnv(env))
	}
	return withEnv(env, set)
}

// proxyEnv points the usual proxy variables at the proxy.
func proxyEnv(netNS bool, port int, tmpDir string) map[string]string {
	addr := "127.0.0.1:" + strconv.Itoa(helper.ProxyPort)
	if !netNS {
		addr = "127.0.0.1:" + strconv.Itoa(port)
	}
	set := map[string]string{
		"HTTP_PROXY": "http://" + addr, "HTTPS_PROXY": "http://" + addr, "ALL_PROXY": "socks5h://" + addr,
		"http_proxy": "http://" + addr, "https_proxy": "http://" + addr, "all_proxy": "socks5h://" + addr,
		"NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1",
		"npm_config_proxy": "http://" + addr, "npm_config_https_proxy": "http://" + addr,
		"DSH_SANDBOX": "1",
	}
	if tmpDir != "" {
		set["TMPDIR"] = tmpDir
	}
	return set
}

// withEnv sets the variables of set in env and drops those that name host
// sockets the command cannot reach anyway.
func withEnv(env []string, set map[string]string) []string {
	drop := []string{"SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "GPG_AGENT_INFO"}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := set[name]; ok || slices.Contains(drop, name) {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// proxyScope is a proxy listener — one command's, or a warm helper's,
// serving its commands one at a time — and what it refused for the
// current command.
type proxyScope struct {
	l       net.Listener
	path    string
	port    int
	mu      sync.Mutex
	blocked []string
	ask     func(host string, port int) bool
}

// begin starts a command's record: nothing refused yet, and ask (the
// policy's Network.Ask, possibly nil) asked about hosts off the list.
func (ps *proxyScope) begin(ask func(host string, port int) bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.blocked, ps.ask = nil, ask
}

func (ps *proxyScope) approve(_ context.Context, host string, port int) bool {
	ps.mu.Lock()
	ask := ps.ask
	ps.mu.Unlock()
	return ask != nil && ask(host, port)
}

func (ps *proxyScope) close() {
	_ = ps.l.Close()
	if ps.path != "" {
		_ = os.Remove(ps.path)
	}
}

func (ps *proxyScope) record(msg string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !slices.Contains(ps.blocked, msg) && len(ps.blocked) < 50 {
		ps.blocked = append(ps.blocked, msg)
	}
}

// listen opens the command's proxy endpoint: a Unix socket in the private
// directory (bridged inside the network namespace), or a loopback TCP port
// when there is none.
func (s *Sandbox) listen(p *sandbox.Policy, c layout) (*proxyScope, error) {
	state, err := s.stateDir()
	if err != nil {
		return nil, err
	}
	ps := &proxyScope{}
	if c.netNS {
		ps.path = filepath.Join(state, fmt.Sprintf("proxy-%d.sock", s.seq.Add(1)))
		ps.l, err = net.Listen("unix", ps.path)
	} else {
		ps.l, err = net.Listen("tcp4", "127.0.0.1:0")
		if err == nil {
			ps.port = ps.l.Addr().(*net.TCPAddr).Port
		}
	}
	if err != nil {
		return nil, err
	}
	scope := &proxy.Scope{Allow: slices.Clone(p.Network.Allow), OnBlock: ps.record, Approve: ps.approve}
	go func() { _ = s.proxy.Serve(ps.l, scope) }()
	return ps, nil
}

// process is one command under the helper.
type process struct {
	mode    sandbox.Mode
	planW   *os.File
	repR    *os.File
	proxyFD *os.File
	scope   *proxyScope
	rd      *bufio.Reader

	plan      []byte
	childEnds []*os.File // the helper's ends, closed once it started

	layers []string
	done   atomic.Pointer[helper.Report] // the last report, once read
	once   sync.Once
}

// start rewrites cmd to the helper, passing the plan and report pipes.
func (s *Sandbox) start(cmd *exec.Cmd, pl *helper.Plan, c layout, scope *proxyScope) (*process, error) {
	planR, planW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", sandbox.ErrSetup, err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		_ = planR.Close()
		_ = planW.Close()
		return nil, fmt.Errorf("%w: %v", sandbox.ErrSetup, err)
	}
	pr := &process{mode: pl.Policy.Mode, planW: planW, repR: repR, scope: scope, rd: bufio.NewReader(repR)}
	extra := []*os.File{planR, repW}
	if scope != nil && scope.path != "" && pl.Proxy {
		fd, err := unix.Open(scope.path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			pr.Release()
			_ = planR.Close()
			_ = repW.Close()
			return nil, fmt.Errorf("%w: proxy socket: %v", sandbox.ErrSetup, err)
		}
		pr.proxyFD = os.NewFile(uintptr(fd), "proxy")
		extra = append(extra, pr.proxyFD)
	}
	b, err := json.Marshal(pl)
	if err != nil {
		return nil, err
	}
	cmd.Path = s.o.Exe
	cmd.Args = []string{"dsh", helper.Arg}
	if pl.Warm && len(extra) < 3 {
		extra = append(extra, nil) // no proxy: the control socket stays fd 6
	}
	cmd.ExtraFiles = append(extra, cmd.ExtraFiles...)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	spa := cmd.SysProcAttr
	// A catchable parent-death signal: the helper then kills every
	// descendant before it goes (a subreaper's orphans would otherwise
	// outlive it).
	spa.Pdeathsig = syscall.SIGUSR1
	if pl.Warm {
		// Not for a warm helper: the signal follows the thread that forked,
		// and a warm helper is started from whichever goroutine needed it
		// and outlives that thread. Its lifeline (EOF on the plan pipe) is
		// what ends it with dsh.
		spa.Pdeathsig = 0
	}
	if pl.Confine {
		if pl.UserNS {
			spa.Cloneflags |= syscall.CLONE_NEWUSER
			uid, gid := os.Geteuid(), os.Getegid()
			spa.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
			spa.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
			spa.GidMappingsEnableSetgroups = false
			if uid != 0 {
				// Keep the namespace's capabilities across the exec of
				// the helper (it needs them to mount); it drops them all.
				spa.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP}
			}
		}
		if pl.MountNS {
			spa.Cloneflags |= syscall.CLONE_NEWNS
		}
		if pl.NetNS {
			spa.Cloneflags |= syscall.CLONE_NEWNET
		}
		if pl.PIDNS {
			spa.Cloneflags |= syscall.CLONE_NEWPID
		}
		if pl.MountNS || pl.PIDNS {
			spa.Cloneflags |= syscall.CLONE_NEWIPC
		}
	}
	pr.plan = append(b, '\n')
	pr.childEnds = []*os.File{planR, repW}
	return pr, nil
}

// Started sends the plan and waits for the helper's first report.
func (p *process) Started() error {
	for _, f := range p.childEnds {
		_ = f.Close() // the child has its copies
	}
	p.childEnds = nil
	if _, err := p.planW.Write(p.plan); err != nil {
		return fmt.Errorf("%w: sending the plan: %v", sandbox.ErrSetup, err)
	}
	line, err := p.rd.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("%w: the helper exited before reporting", sandbox.ErrSetup)
	}
	var r helper.Report
	if err := json.Unmarshal(line, &r); err != nil {
		return fmt.Errorf("%w: bad report %q", sandbox.ErrSetup, line)
	}
	if r.Error != "" {
		return fmt.Errorf("%w: %s", sandbox.ErrSetup, r.Error)
	}
	p.layers = r.Layers
	return nil
}

// Exited reads the helper's last report: the shell's own fate.
func (p *process) Exited() (int, string, bool) {
	p.once.Do(func() {
		line, err := p.rd.ReadBytes('\n')
		if err != nil {
			return
		}
		var r helper.Report
		if json.Unmarshal(line, &r) == nil && r.Done {
			p.done.Store(&r)
		}
	})
	d := p.done.Load()
	if d == nil {
		return 0, "", false
	}
	return d.Exit, d.Signal, true
}

// Report returns the layers applied and what the proxy refused.
func (p *process) Report() sandbox.Report {
	r := sandbox.Report{Mode: p.mode, Enforced: slices.Clone(p.layers)}
	if d := p.done.Load(); d != nil {
		r.Leftovers = d.Leftovers
	}
	if p.scope != nil {
		p.scope.mu.Lock()
		r.Blocked = slices.Clone(p.scope.blocked)
		p.scope.mu.Unlock()
	}
	return r
}

// Release closes the pipes (cutting the lifeline) and the proxy listener.
func (p *process) Release() {
	for _, f := range p.childEnds {
		_ = f.Close()
	}
	p.childEnds = nil
	_ = p.planW.Close()
	_ = p.repR.Close()
	if p.proxyFD != nil {
		_ = p.proxyFD.Close()
	}
	if p.scope != nil {
		p.scope.close()
	}
}
