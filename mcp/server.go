package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/sandbox"
	"github.com/dshq/dsh/tool"
)

// State is a server's lifecycle state.
type State string

// Server states.
const (
	// StateIdle: not started; tools come from the cache (lazy start).
	StateIdle State = "idle"
	// StateConnecting: starting and listing tools.
	StateConnecting State = "connecting"
	// StateConnected: running; calls go through.
	StateConnected State = "connected"
	// StateRestarting: it crashed or failed to start and waits for its
	// next attempt; its tools answer with an error meanwhile.
	StateRestarting State = "restarting"
	// StateFailed: given up after the bounded attempts; tools removed.
	StateFailed State = "failed"
	// StateUntrusted: a project server in a project not trusted.
	StateUntrusted State = "untrusted"
	// StateDisabled: "disabled": true in its config.
	StateDisabled State = "disabled"
	// StateStopped: the manager or the session that added it closed.
	StateStopped State = "stopped"
)

// ServerStatus describes one server for `dsh mcp list` and front-ends.
type ServerStatus struct {
	Name      string `json:"name"`
	Source    string `json:"source"`
	Path      string `json:"path,omitempty"`
	Transport string `json:"transport"`
	// Target is the command line or the URL.
	Target string `json:"target"`
	State  State  `json:"state"`
	Error  string `json:"error,omitempty"`
	// FromCache: the tools were read from the cache and the server has
	// not run yet.
	FromCache bool         `json:"fromCache,omitempty"`
	Tools     []ToolStatus `json:"tools"`
	// Restarts counts restarts after crashes or failed starts.
	Restarts int `json:"restarts,omitempty"`
	// PID of a running stdio server.
	PID          int    `json:"pid,omitempty"`
	Instructions string `json:"instructions,omitempty"`
	// Session: added for a session (AddSessionServers) only.
	Session bool `json:"session,omitempty"`
	// Sandbox is the sandbox mode a running stdio server is confined in
	// (sandbox.mcp); empty when it runs unconfined.
	Sandbox sandbox.Mode `json:"sandbox,omitempty"`
}

// ToolStatus is one tool of a server.
type ToolStatus struct {
	// Name is the registry name (mcp__server__tool).
	Name string `json:"name"`
	// ServerName is the server's own name for it.
	ServerName  string `json:"serverName"`
	Description string `json:"description,omitempty"`
	ReadOnly    bool   `json:"readOnly,omitempty"`
	// Deferred: reachable through mcp_tool_search / mcp_call only.
	Deferred bool `json:"deferred,omitempty"`
}

// server is one configured MCP server and its supervisor.
type server struct {
	m   *Manager
	cfg ServerConfig

	ctx    context.Context
	cancel context.CancelFunc

	refresh chan struct{}           // tools/list_changed arrived
	lost    chan *sdk.ClientSession // a call saw the connection fail

	mu        sync.Mutex
	state     State
	err       error
	changed   chan struct{} // closed and replaced on every state change
	started   bool          // supervisor running
	done      chan struct{} // closed when the running supervisor exits
	firstDone bool          // first connection attempt finished
	conn      *conn
	defs      []*sdk.Tool
	infos     []tool.Info // of defs
	instr     string
	// resErr is why the last resources/list failed (nil: it did not).
	resErr    error
	fromCache bool
	restarts  int
	failures  int
	owners    map[*kernel.Scope]int
	global    bool

	regMu sync.Mutex // serializes registry updates
	regs  map[string]*registeredTool
}

type registeredTool struct {
	t       *mcpTool
	dispose func()
}

// conn is one live connection.
type conn struct {
	// ctx lives as long as the connection (a stream tied to it ends with
	// it); cancel ends it.
	ctx    context.Context
	cancel context.CancelFunc
	sess   *sdk.ClientSession
	pid    int
	stderr *tail
	// sandbox is the mode a stdio server runs in under the kernel
	// sandbox (sandbox.mcp); empty when it is not sandboxed.
	sandbox sandbox.Mode
	since   time.Time
	// grace is how long a failed call waits for the session to end
	// before it counts as failed on a live connection: 0 when the
	// transport reports the end of its read side (stdio) before the
	// calls in flight fail.
	grace time.Duration

	endOnce sync.Once
	ended   chan struct{} // closed when the session ended or its reading did
}

func newConn() *conn { return &conn{ended: make(chan struct{}), grace: 500 * time.Millisecond} }

// end records that the session ended (or can read nothing more).
func (c *conn) end() { c.endOnce.Do(func() { close(c.ended) }) }

// lost reports whether a call's error came from the connection ending
// rather than from a bad answer on a live connection.
func (c *conn) lost(err error) bool {
	if errors.Is(err, sdk.ErrConnectionClosed) {
		return true
	}
	select {
	case <-c.ended:
		return true
	default:
	}
	if c.grace <= 0 {
		return false
	}
	t := time.NewTimer(c.grace)
	defer t.Stop()
	select {
	case <-c.ended:
		return true
	case <-t.C:
		return false
	}
}

func newServer(m *Manager, c ServerConfig) *server {
	ctx, cancel := context.WithCancel(context.Background())
	return &server{
		m: m, cfg: c, ctx: ctx, cancel: cancel,
		refresh: make(chan struct{}, 1),
		lost:    make(chan *sdk.ClientSession, 1),
		state:   StateIdle,
		changed: make(chan struct{}),
		owners:  map[*kernel.Scope]int{},
		regs:    map[string]*registeredTool{},
	}
}

func (s *server) log() []any { return []any{"server", s.cfg.Name} }

// init decides the server's first state: untrusted or disabled servers
// never start; cached tools are registered; servers that are eager or
// have no cache connect in the background.
func (s *server) init() {
	switch {
	case s.cfg.Disabled:
		s.set(StateDisabled, nil)
		return
	case s.cfg.Dir != "" && (s.m.o.Trusted == nil || !s.m.o.Trusted(s.cfg.Dir)):
		s.set(StateUntrusted, fmt.Errorf("project %s is not trusted; its MCP servers start once you trust it", s.cfg.Dir))
		return
	}
	var cache *cacheEntry
	var err error
	if s.cfg.Transport() != TransportSDK {
		cache, err = loadCache(s.m.o.Home, s.cfg)
	}
	if err != nil {
		s.m.o.Logger.Warn("mcp: ignoring the tool cache", append(s.log(), "err", err)...)
	}
	if cache != nil {
		s.mu.Lock()
		if s.state == StateStopped {
			s.mu.Unlock()
			return
		}
		s.instr, s.fromCache = cache.Instructions, true
		s.mu.Unlock()
		s.syncTools(cache.tools())
	}
	if (cache == nil || !s.cfg.Lazy()) && !s.m.o.NoConnect {
		s.mu.Lock()
		s.startLocked()
		s.mu.Unlock()
	}
	s.m.emit(s)
}

// startLocked launches the supervisor unless it runs or the server may
// not start.
func (s *server) startLocked() {
	if s.started {
		return
	}
	switch s.state {
	case StateStopped, StateUntrusted, StateDisabled:
		return
	}
	s.started = true
	s.failures = 0
	s.done = make(chan struct{})
	s.setLocked(StateConnecting, nil)
	go s.supervise(s.done)
}

func (s *server) setLocked(st State, err error) {
	s.state, s.err = st, err
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *server) set(st State, err error) {
	s.mu.Lock()
	if s.state == StateStopped && st != StateStopped {
		s.mu.Unlock()
		return
	}
	s.setLocked(st, err)
	s.mu.Unlock()
	s.m.emit(s)
}

// supervise connects, serves until the connection ends, and restarts with
// backoff up to MaxRestarts consecutive failures.
func (s *server) supervise(done chan struct{}) {
	defer close(done)
	backoff := s.m.o.RestartBackoff
	for {
		c, err := s.connect()
		if err == nil {
			err = s.serve(c)
			if s.ctx.Err() != nil {
				return
			}
			if time.Since(c.since) >= stableAfter {
				s.mu.Lock()
				s.failures = 0
				s.mu.Unlock()
				backoff = s.m.o.RestartBackoff
			}
		} else if s.ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		s.failures++
		s.firstDone = true
		failures := s.failures
		s.mu.Unlock()
		max := s.m.o.MaxRestarts
		if max < 0 {
			max = 0
		}
		if failures > max {
			s.m.o.Logger.Warn("mcp: giving up on the server", append(s.log(), "err", err, "attempts", failures)...)
			s.unregisterAll()
			s.m.toolsChanged()
			s.mu.Lock()
			s.started = false
			stopped := s.state == StateStopped
			if !stopped {
				s.setLocked(StateFailed, fmt.Errorf("gave up after %s: %w", plural(failures, "failed attempt"), err))
			}
			s.mu.Unlock()
			if !stopped {
				s.m.emit(s)
			}
			return
		}
		s.m.o.Logger.Warn("mcp: server failed; restarting", append(s.log(), "err", err, "in", backoff)...)
		s.set(StateRestarting, &restartError{err: err, attempt: failures + 1, max: max + 1, at: time.Now().Add(backoff)})
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			return
		}
		backoff = min(backoff*2, maxRestartBackoff)
		s.mu.Lock()
		if s.state == StateStopped {
			s.mu.Unlock()
			return
		}
		s.restarts++
		s.setLocked(StateConnecting, nil)
		s.mu.Unlock()
		s.m.emit(s)
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

type restartError struct {
	err          error
	attempt, max int
	at           time.Time
}

func (e *restartError) Error() string {
	wait := time.Until(e.at).Round(100 * time.Millisecond)
	if wait < 0 {
		wait = 0
	}
	return fmt.Sprintf("%v (attempt %d of %d in %s)", e.err, e.attempt, e.max, wait)
}

func (e *restartError) Unwrap() error { return e.err }

// connect starts the server and runs the MCP handshake.
func (s *server) connect() (*conn, error) {
	cfg, err := s.cfg.expanded(s.m.o.Env)
	if err != nil {
		return nil, err
	}
	c := newConn()
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	var transport sdk.Transport
	switch cfg.Transport() {
	case TransportStdio:
		cmd := exec.Command(cfg.Command, cfg.Args...)
		cmd.Env = s.m.o.Environ
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = withhold(cmd.Env, s.m.o.Withhold)
		keys := make([]string, 0, len(cfg.Env))
		for k := range cfg.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			cmd.Env = append(cmd.Env, k+"="+cfg.Env[k])
		}
		cmd.Dir = s.workDir(cfg)
		c.stderr = &tail{}
		cmd.Stderr = c.stderr
		cmd.WaitDelay = 2 * time.Second
		isolate(cmd)
		pr, mode, err := s.confine(cmd)
		if err != nil {
			c.cancel()
			return nil, err
		}
		c.sandbox = mode
		transport = &stdioTransport{cmd: cmd, terminate: 2 * time.Second, logger: s.m.o.Logger.With(s.log()...), stderr: c.stderr, ended: c.end,
			warn: func(line string) {
				s.m.warn(fmt.Sprintf("mcp: server %q printed output that is not JSON-RPC on stdout (ignored; servers should log to stderr): %s", s.cfg.Name, line))
			}}
		if pr != nil {
			transport.(*stdioTransport).sandbox = &sandboxEnd{pr: pr, warn: func(msg string) {
				s.m.warn(fmt.Sprintf("mcp: server %q: the sandbox %s", s.cfg.Name, msg))
			}}
		}
		c.grace = 0
		defer func() {
			if cmd.Process != nil {
				c.pid = cmd.Process.Pid
			}
		}()
	case TransportHTTP:
		transport = &lifetime{Transport: &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: s.httpClient(cfg.Headers)}, ctx: c.ctx}
	case TransportSSE:
		// The SSE transport ties its event stream to the context it is
		// connected with; the handshake's context ends when connect
		// returns, so the stream gets the connection's own (as the HTTP
		// transport's does above).
		transport = &lifetime{Transport: &sdk.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: s.httpClient(cfg.Headers)}, ctx: c.ctx}
	case TransportSDK:
		transport = cfg.Custom
	default:
		c.cancel()
		return nil, fmt.Errorf("unknown transport %q", cfg.Transport())
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "dsh", Version: s.m.o.ClientVersion}, &sdk.ClientOptions{
		Logger: s.m.o.Logger.With(s.log()...),
		// No roots: servers such as server-filesystem would replace the
		// directories they were configured with by the client's roots.
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case s.refresh <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(s.ctx, s.m.o.ConnectTimeout)
	defer cancel()
	start := time.Now()
	sess, err := client.Connect(ctx, transport, nil)
	if err != nil {
		c.cancel()
		if st, ok := transport.(*stdioTransport); ok && st.cmd.Process != nil {
			killGroup(st.cmd.Process.Pid)
			// The SDK may not close a connection whose handshake failed:
			// reap the server here (once, whoever asks first) so the
			// sandbox's descriptors and proxy socket go with it.
			st.reaper().reap()
		}
		if errors.Is(err, context.DeadlineExceeded) && s.ctx.Err() == nil {
			err = fmt.Errorf("no answer to initialize within %s", s.m.o.ConnectTimeout)
		}
		return nil, fmt.Errorf("starting: %v%s", err, c.stderr.suffix())
	}
	c.sess, c.since = sess, time.Now()
	if st, ok := transport.(*stdioTransport); ok {
		st.ready.Store(true)
	}
	s.m.o.Logger.Info("mcp: connected", append(s.log(), "took", time.Since(start))...)
	return c, nil
}

func (s *server) workDir(cfg ServerConfig) string {
	base := s.m.o.Cwd
	if s.cfg.Dir != "" {
		base = s.cfg.Dir
	}
	switch {
	case cfg.Cwd == "":
		return base
	case filepath.IsAbs(cfg.Cwd) || base == "":
		return cfg.Cwd
	}
	return filepath.Join(base, cfg.Cwd)
}

func (s *server) httpClient(headers map[string]string) *http.Client {
	base := s.m.o.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	if len(headers) == 0 {
		return base
	}
	c := *base
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = headerTransport{base: rt, headers: headers}
	return &c
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

// serve lists the tools, registers them, and waits until the connection
// ends, refreshing the tools when the server says they changed.
func (s *server) serve(c *conn) error {
	defs, err := s.listTools(c.sess)
	if err != nil {
		c.close()
		return fmt.Errorf("listing tools: %v%s", err, c.stderr.suffix())
	}
	instr := ""
	if ir := c.sess.InitializeResult(); ir != nil {
		instr = ir.Instructions
	}
	s.mu.Lock()
	s.instr = instr
	s.mu.Unlock()
	s.syncTools(defs)
	s.saveCache(defs, instr)
	s.mu.Lock()
	if s.state == StateStopped {
		s.mu.Unlock()
		c.close()
		return s.ctx.Err()
	}
	s.conn, s.fromCache, s.firstDone = c, false, true
	s.setLocked(StateConnected, nil)
	s.mu.Unlock()
	s.m.emit(s)
	defer func() {
		s.mu.Lock()
		s.conn = nil
		s.mu.Unlock()
	}()

	waited := make(chan error, 1)
	go func() {
		err := c.sess.Wait()
		c.end()
		waited <- err
	}()
	for {
		select {
		case err := <-waited:
			c.close()
			if err == nil {
				err = errors.New("the connection closed")
			}
			return fmt.Errorf("server exited: %v%s", err, c.stderr.suffix())
		case <-s.refresh:
			defs, err := s.listTools(c.sess)
			if err != nil {
				s.m.o.Logger.Warn("mcp: refreshing the tool list", append(s.log(), "err", err)...)
				continue
			}
			s.syncTools(defs)
			s.saveCache(defs, instr)
			s.m.emit(s)
		case l := <-s.lost:
			if l != c.sess {
				continue
			}
			c.close()
			err := <-waited
			if err == nil {
				err = errors.New("a call failed")
			}
			return fmt.Errorf("connection lost: %v%s", err, c.stderr.suffix())
		case <-s.ctx.Done():
			c.close()
			<-waited
			return s.ctx.Err()
		}
	}
}

func (c *conn) close() {
	_ = c.sess.Close()
	c.cancel()
	killGroup(c.pid)
}

// lifetime connects a transport with a context of the connection's
// lifetime rather than the caller's (the handshake's, bounded by the
// connect timeout): the caller's context still bounds how long Connect
// may take.
type lifetime struct {
	sdk.Transport
	ctx context.Context
}

func (l *lifetime) Connect(ctx context.Context) (sdk.Connection, error) {
	type result struct {
		c   sdk.Connection
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := l.Transport.Connect(l.ctx)
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		return r.c, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.c != nil {
				_ = r.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

func (s *server) listTools(sess *sdk.ClientSession) ([]*sdk.Tool, error) {
	if ir := sess.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Tools == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.m.o.ConnectTimeout)
	defer cancel()
	var out []*sdk.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func (s *server) saveCache(defs []*sdk.Tool, instr string) {
	if s.cfg.Transport() == TransportSDK {
		return
	}
	if err := saveCache(s.m.o.Home, s.cfg, defs, instr, s.m.o.Now()); err != nil {
		s.m.o.Logger.Warn("mcp: writing the tool cache", append(s.log(), "err", err)...)
	}
}

// syncTools makes the registry hold exactly defs: removed and changed
// tools are unregistered, new and changed ones registered.
func (s *server) syncTools(defs []*sdk.Tool) {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	want := map[string]*sdk.Tool{}
	var order []string
	for _, d := range defs {
		if d == nil || toolPart(d.Name) == "" {
			continue
		}
		name := ToolName(s.cfg.Name, d.Name)
		if _, dup := want[name]; dup {
			s.m.o.Logger.Warn("mcp: two tools map to one name; keeping the first", append(s.log(), "tool", name)...)
			continue
		}
		want[name] = d
		order = append(order, name)
	}
	kept := make([]*sdk.Tool, 0, len(order))
	infos := make([]tool.Info, 0, len(order))
	for _, n := range order {
		kept = append(kept, want[n])
		infos = append(infos, toolInfo(s.cfg.Name, want[n]))
	}
	s.mu.Lock()
	stopped := s.state == StateStopped
	if !stopped {
		s.defs, s.infos = kept, infos
	}
	s.mu.Unlock()
	if stopped {
		return
	}
	// Decide deferral before anything becomes visible.
	s.m.toolsChanged()
	for name, r := range s.regs {
		if d, ok := want[name]; !ok || !sameInfo(r.t.info, toolInfo(s.cfg.Name, d)) {
			r.dispose()
			delete(s.regs, name)
			s.m.mu.Lock()
			if s.m.byTool[name] == s {
				delete(s.m.byTool, name)
			}
			s.m.mu.Unlock()
		}
	}
	for i, name := range order {
		if _, ok := s.regs[name]; ok {
			continue
		}
		d := want[name]
		t := &mcpTool{s: s, name: d.Name, info: infos[i]}
		s.m.mu.Lock()
		if other := s.m.byTool[name]; other != nil && other != s {
			s.m.mu.Unlock()
			continue
		}
		s.m.byTool[name] = s
		s.m.mu.Unlock()
		dispose, err := s.m.o.Tools.Register(t)
		if err != nil {
			s.m.o.Logger.Warn("mcp: registering a tool", append(s.log(), "tool", name, "err", err)...)
			s.m.mu.Lock()
			delete(s.m.byTool, name)
			s.m.mu.Unlock()
			continue
		}
		s.regs[name] = &registeredTool{t: t, dispose: dispose}
	}
}

func sameInfo(a, b tool.Info) bool {
	return a.Name == b.Name && a.Description == b.Description && a.Kind == b.Kind && a.ReadOnly == b.ReadOnly &&
		a.Concurrent == b.Concurrent && bytes.Equal(a.Parameters, b.Parameters)
}

func (s *server) unregisterAll() {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	for name, r := range s.regs {
		r.dispose()
		delete(s.regs, name)
		s.m.mu.Lock()
		if s.m.byTool[name] == s {
			delete(s.m.byTool, name)
		}
		s.m.mu.Unlock()
	}
	s.mu.Lock()
	s.defs, s.infos = nil, nil
	s.mu.Unlock()
}

// stop ends the supervisor (closing the connection and the process) and
// removes the server's tools.
func (s *server) stop() {
	s.mu.Lock()
	if s.state == StateStopped {
		s.mu.Unlock()
		return
	}
	started, done := s.started, s.done
	s.setLocked(StateStopped, nil)
	s.mu.Unlock()
	s.cancel()
	if started {
		<-done
	}
	s.unregisterAll()
	s.m.emit(s)
}

// session returns a live connection, starting the server if it is idle and
// waiting while it connects or restarts (bounded by ctx: the call's
// timeout). A server that failed or may not run answers with an error at
// once.
func (s *server) session(ctx context.Context) (*conn, error) {
	for {
		s.mu.Lock()
		switch s.state {
		case StateConnected:
			if c := s.conn; c != nil {
				s.mu.Unlock()
				return c, nil
			}
			// The connection just ended; the supervisor is deciding.
		case StateIdle:
			s.startLocked()
		case StateRestarting:
			// Wait for the restart: the call's timeout bounds it.
		case StateFailed:
			err := s.err
			s.mu.Unlock()
			return nil, fmt.Errorf("MCP server %q failed: %v", s.cfg.Name, err)
		case StateStopped:
			s.mu.Unlock()
			return nil, fmt.Errorf("MCP server %q was stopped", s.cfg.Name)
		case StateUntrusted, StateDisabled:
			err := s.err
			s.mu.Unlock()
			if err == nil {
				err = errors.New(string(s.state))
			}
			return nil, fmt.Errorf("MCP server %q does not run: %v", s.cfg.Name, err)
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// connectNow starts the server (again, if it was given up) and waits for
// the outcome of the attempt.
func (s *server) connectNow(ctx context.Context) error {
	s.mu.Lock()
	if s.state == StateFailed {
		s.state = StateIdle
	}
	s.startLocked()
	s.mu.Unlock()
	for {
		s.mu.Lock()
		st, err, ch := s.state, s.err, s.changed
		s.mu.Unlock()
		switch st {
		case StateConnected:
			return nil
		case StateRestarting, StateFailed, StateStopped, StateUntrusted, StateDisabled:
			if err == nil {
				err = errors.New(string(st))
			}
			return fmt.Errorf("mcp: server %q: %w", s.cfg.Name, err)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// waitSettled waits while the server makes its first connection attempt.
func (s *server) waitSettled(ctx context.Context) {
	for {
		s.mu.Lock()
		busy := s.started && !s.firstDone && s.state == StateConnecting
		ch := s.changed
		s.mu.Unlock()
		if !busy {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

func (s *server) status() ServerStatus {
	c := s.cfg
	st := ServerStatus{Name: c.Name, Source: c.Source, Path: c.Path, Transport: c.Transport(), Target: target(c)}
	deferred := s.m.deferred.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	st.State, st.FromCache, st.Restarts, st.Instructions = s.state, s.fromCache && s.state == StateIdle, s.restarts, s.instr
	st.Session = !s.global
	if s.err != nil {
		st.Error = s.err.Error()
	}
	if s.conn != nil {
		st.PID = s.conn.pid
		st.Sandbox = s.conn.sandbox
	}
	st.Tools = []ToolStatus{}
	for i, d := range s.defs {
		info := s.infos[i]
		st.Tools = append(st.Tools, ToolStatus{Name: info.Name, ServerName: d.Name, Description: info.Description,
			ReadOnly: info.ReadOnly, Deferred: (*deferred)[info.Name]})
	}
	return st
}

func target(c ServerConfig) string {
	switch c.Transport() {
	case TransportStdio:
		return strings.Join(append([]string{c.Command}, c.Args...), " ")
	case TransportSDK:
		return "in-process (" + c.Name + ")"
	}
	return c.URL
}

// errCallTimeout is the cause of a call's own deadline.
var errCallTimeout = errors.New("mcp call timeout")

// call runs one tool call on the server.
func (s *server) call(ctx context.Context, name string, args json.RawMessage) (tool.Result, error) {
	timeout := s.cfg.Timeout()
	if timeout <= 0 {
		timeout = s.m.o.CallTimeout
	}
	cctx, cancel := context.WithTimeoutCause(ctx, timeout, errCallTimeout)
	defer cancel()
	timedOut := func() bool { return ctx.Err() == nil && errors.Is(context.Cause(cctx), errCallTimeout) }
	c, err := s.session(cctx)
	if err != nil {
		if timedOut() {
			s.mu.Lock()
			st, last := s.state, s.err
			s.mu.Unlock()
			if st == StateRestarting && last != nil {
				return tool.Result{}, fmt.Errorf("MCP server %q is restarting and was not back within the call timeout (%s): %v", s.cfg.Name, timeout, last)
			}
			return tool.Result{}, fmt.Errorf("MCP server %q did not start within the call timeout (%s)", s.cfg.Name, timeout)
		}
		if ctx.Err() != nil {
			return tool.Result{}, context.Cause(ctx)
		}
		return tool.Result{}, err
	}
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	res, err := c.sess.CallTool(cctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		switch {
		case timedOut():
			return tool.Result{}, fmt.Errorf("MCP tool %s on server %q timed out after %s; the call was cancelled", name, s.cfg.Name, timeout)
		case ctx.Err() != nil:
			return tool.Result{}, context.Cause(ctx)
		case isServerError(err):
			return tool.Result{}, fmt.Errorf("MCP server %q: %v", s.cfg.Name, err)
		case !c.lost(err):
			// The session lives on: the answer was unreadable (a content
			// type the SDK does not know, bad base64) or, over HTTP, the
			// request did not get through. Restarting the server would
			// only lose its state.
			if c.grace == 0 { // stdio: only the answer can be at fault
				return tool.Result{}, fmt.Errorf("MCP server %q: the server's result could not be read: %v (the server keeps running)", s.cfg.Name, err)
			}
			return tool.Result{}, fmt.Errorf("MCP server %q: the call failed, but the connection is still up (the server's result could not be read or the request did not get through): %v", s.cfg.Name, err)
		}
		select {
		case s.lost <- c.sess:
		default:
		}
		return tool.Result{}, fmt.Errorf("MCP server %q: the connection failed during the call (%v); restarting it", s.cfg.Name, err)
	}
	return convertResult(res, s.m.limits(), convertOptions{structured: s.cfg.StructuredContent, save: s.m.saveImage}), nil
}

// isServerError reports an error the server answered with (as opposed to
// a broken connection).
func isServerError(err error) bool {
	var je *jsonrpcError
	return errors.As(err, &je)
}

type jsonrpcError = jsonrpc.Error

// mcpTool is one server tool in the registry.
type mcpTool struct {
	s    *server
	name string
	info tool.Info
}

func (t *mcpTool) Info() tool.Info { return t.info }

func (t *mcpTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	return t.s.call(ctx, t.name, call.Args)
}

// tail keeps the end of a server's stderr for error messages.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 4096

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailMax {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailMax:]...)
	}
	t.mu.Unlock()
	return len(p), nil
}

// suffix renders the last stderr lines as "; stderr: …", or "".
func (t *tail) suffix() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	s := strings.TrimSpace(string(t.buf))
	t.mu.Unlock()
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	s = strings.Join(lines, " | ")
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	return "; stderr: " + s
}

// withhold copies environ without the variables named in names.
func withhold(environ, names []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); slices.Contains(names, name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}
