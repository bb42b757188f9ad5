package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mimepkg "mime"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dshq/dsh/doctor"
	"github.com/dshq/dsh/internal/private"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/prompt"
	"github.com/dshq/dsh/sandbox"
	"github.com/dshq/dsh/tool"
)

// ToolSearchMode says when MCP tools are hidden behind mcp_tool_search.
type ToolSearchMode string

// Tool search modes.
const (
	// ToolSearchAuto hides every MCP tool behind the search tool once the
	// servers offer more than ToolSearchThreshold tools (the default).
	ToolSearchAuto ToolSearchMode = "auto"
	// ToolSearchOn always hides MCP tools behind the search tool.
	ToolSearchOn ToolSearchMode = "on"
	// ToolSearchOff always lists every MCP tool.
	ToolSearchOff ToolSearchMode = "off"
)

// Defaults.
const (
	DefaultCallTimeout         = 10 * time.Minute
	DefaultConnectTimeout      = 60 * time.Second
	DefaultMaxRestarts         = 3
	DefaultRestartBackoff      = time.Second
	DefaultToolSearchThreshold = 50
	// DefaultMaxResultChars bounds the text of one tool result.
	DefaultMaxResultChars = 100_000
	// DefaultMaxResultImageBytes bounds the image data of one tool
	// result (decoded; about 4 MiB as base64).
	DefaultMaxResultImageBytes = 3 << 20
	maxRestartBackoff          = 30 * time.Second
	// stableAfter is how long a connection must last before its crash
	// counts as a new failure series (attempts and backoff reset).
	stableAfter = 30 * time.Second
)

// Options configure a Manager.
type Options struct {
	// Tools is the registry the servers' tools are registered in (required).
	Tools *tool.Registry
	// Prompt receives one "mcp-instructions" section with the servers'
	// instructions (optional).
	Prompt *prompt.Builder
	// Home is $DSH_HOME: tool lists are cached in Home/mcp-cache. Empty
	// disables the cache (every server then connects at startup).
	Home string
	// Cwd is where stdio servers run when their config names no cwd
	// (project servers run in their project directory). Empty: dsh's own.
	Cwd string
	// Trusted decides whether a project's servers may run (ServerConfig.Dir).
	// Nil trusts no project.
	Trusted func(dir string) bool
	// Env looks up variables for ${VAR} expansion in configs; nil uses the
	// process environment.
	Env func(string) (string, bool)
	// Environ is the base environment of stdio servers ("KEY=value"
	// entries, e.g. the process environment plus settings' env); nil uses
	// the process environment. A server's own "env" is added to it.
	Environ []string
	// Withhold names variables (exactly as spelled) removed from Environ
	// before a stdio server starts: dsh's own provider API keys, which a
	// third-party server has no business reading. A server whose config
	// "env" sets one of them explicitly still gets that value.
	Withhold []string
	// Logger receives connection and restart logs; nil discards.
	Logger *slog.Logger
	// Warn receives what the user must see (a server that failed to start,
	// with its stderr; stdout output that is not JSON-RPC), once per
	// distinct message: headless runs print it on stderr. Nil: the log only.
	Warn func(msg string)
	// HTTPClient is the base client for http and sse servers.
	HTTPClient *http.Client
	// Secrets, when set, is told the credentials a server's config holds
	// (credential-named env values, authorization-like header values, a
	// URL's password) as the server is added, so the session log scrubs
	// them: a literal token in .mcp.json is as secret as one in the
	// environment, and a command may print the file or the server's env.
	Secrets func(values ...string)

	// Sandbox and SandboxPolicy, when both are set (the settings'
	// sandbox.mcp), start every stdio server through the kernel sandbox
	// with the policy compiled for its working directory: a server is a
	// third party's program reading the model's arguments, so it gets the
	// walls the agent's own commands get. A nil policy means the sandbox
	// helper cannot run here: the server then runs unconfined and the user
	// is told so, once.
	Sandbox       sandbox.Sandbox
	SandboxPolicy func(cwd string) (*sandbox.Policy, error)

	// CallTimeout bounds one tool call (a server's "timeout" overrides it).
	CallTimeout time.Duration
	// ConnectTimeout bounds starting a server and listing its tools.
	ConnectTimeout time.Duration
	// MaxRestarts bounds how often a server that crashed or failed to
	// start is tried again before it is given up (its tools are then
	// removed). Negative: never restart.
	MaxRestarts int
	// RestartBackoff is the first delay before a restart; it doubles up
	// to 30s.
	RestartBackoff time.Duration

	// MaxResultChars bounds the text one tool result brings into the
	// session (characters, over all its text blocks): the rest is cut,
	// with a note to the model saying how much. 0 means
	// DefaultMaxResultChars; negative, no bound.
	MaxResultChars int
	// MaxResultImageBytes bounds the images of one tool result (decoded
	// bytes, in all): images beyond it are replaced by a note. 0 means
	// DefaultMaxResultImageBytes; negative, no bound.
	MaxResultImageBytes int

	// ToolSearch and ToolSearchThreshold choose when MCP tools are
	// exposed through mcp_tool_search and mcp_call instead of one schema
	// each. A server's "toolSearch" key overrides the mode for its tools.
	ToolSearch          ToolSearchMode
	ToolSearchThreshold int

	// NoConnect starts no server in the background, eager ones and those
	// without a cache included: only a call or Connect starts one
	// (`dsh mcp list --no-connect`).
	NoConnect bool

	// ClientVersion is sent to servers as the client's version.
	ClientVersion string
	// Now is the clock (cache timestamps).
	Now func() time.Time
}

// Manager runs MCP servers and registers their tools. It is safe for
// concurrent use. Close stops every server.
type Manager struct {
	o     Options
	scope *kernel.Scope

	mu      sync.Mutex
	servers map[string]*server
	byTool  map[string]*server // registry name -> server
	closed  bool

	// deferred holds the registry names of the tools hidden behind the
	// search tool; read lock-free by the registry restriction.
	deferred atomic.Pointer[map[string]bool]
	// summary names the servers every caller sees whose tools are
	// deferred, with their tool counts (the search tool's description).
	summary atomic.Pointer[string]
	// searchers says who has deferred tools to search (Visible hides the
	// search tools from sessions that have none).
	searchers atomic.Pointer[searchers]

	searchMu      sync.Mutex
	searchDispose func()

	vetMu  sync.Mutex
	vetted map[string]vetEntry

	warnMu sync.Mutex
	warned map[string]bool

	// Changed fires after a server's state or tools change. Listener
	// errors are ignored; listeners run on the goroutine that made the
	// change (often a server's background goroutine).
	Changed *kernel.Signal[ServerStatus]
}

// New returns a manager with no servers. It installs, for its lifetime,
// a registry restriction (tools behind the search tool stay out of the
// schemas), the pre-execute gate of mcp_call and, with a prompt builder,
// the instructions section.
func New(o Options) (*Manager, error) {
	if o.Tools == nil {
		return nil, errors.New("mcp: Options.Tools is required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Env == nil {
		o.Env = os.LookupEnv
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.MaxRestarts == 0 {
		o.MaxRestarts = DefaultMaxRestarts
	}
	if o.RestartBackoff <= 0 {
		o.RestartBackoff = DefaultRestartBackoff
	}
	if o.ToolSearch == "" {
		o.ToolSearch = ToolSearchAuto
	}
	switch o.ToolSearch {
	case ToolSearchAuto, ToolSearchOn, ToolSearchOff:
	default:
		return nil, fmt.Errorf("mcp: unknown tool search mode %q (want auto, on or off)", o.ToolSearch)
	}
	if o.ToolSearchThreshold <= 0 {
		o.ToolSearchThreshold = DefaultToolSearchThreshold
	}
	if o.MaxResultChars == 0 {
		o.MaxResultChars = DefaultMaxResultChars
	}
	if o.MaxResultImageBytes == 0 {
		o.MaxResultImageBytes = DefaultMaxResultImageBytes
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "dev"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	m := &Manager{
		o:       o,
		scope:   kernel.NewScope("mcp"),
		servers: map[string]*server{},
		byTool:  map[string]*server{},
		vetted:  map[string]vetEntry{},
		warned:  map[string]bool{},
		Changed: kernel.NewSignal[ServerStatus]("mcp/server"),
	}
	empty := map[string]bool{}
	m.deferred.Store(&empty)
	_ = m.scope.Add(o.Tools.Restrict(func(i tool.Info) bool { return !(*m.deferred.Load())[i.Name] }))
	_ = m.scope.Add(o.Tools.PreExecute.Use(m.gate, kernel.Prepend(), kernel.Named("mcp-call")))
	if o.Prompt != nil {
		_ = m.scope.Add(o.Prompt.Section(prompt.Section{Name: "mcp-instructions", Order: 700, Dynamic: m.instructions}))
	}
	return m, nil
}

// Start adds servers for the manager's lifetime. It does not wait for any
// server: lazy servers with a cached tool list register those tools at
// once and start on their first call; the others connect in the
// background and register their tools when ready. Project servers that
// are not trusted and disabled servers are listed but never started.
// Problems with single servers are joined into the error; the other
// servers are added all the same.
func (m *Manager) Start(ctx context.Context, servers []ServerConfig) error {
	var errs []error
	for _, c := range servers {
		if _, err := m.add(c, nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// AddSessionServers connects servers for one session (an ACP client's
// mcpServers from session/new) until scope closes. They are trusted: the
// client that passes them is the user's. A server configured identically
// under the same name (by settings or another session) is shared. Servers
// without a cached tool list are connected before it returns (bounded by
// ctx and the connect timeout); a server that fails is reported by
// Servers, not here. The error reports configs that cannot be used.
func (m *Manager) AddSessionServers(ctx context.Context, scope *kernel.Scope, servers []ServerConfig) error {
	if scope == nil {
		return errors.New("mcp: AddSessionServers needs a scope")
	}
	var errs []error
	var added []*server
	for _, c := range servers {
		if c.Source == "" {
			c.Source = SourceSession
		}
		c.Dir = "" // trusted: the client passed them
		s, err := m.add(c, scope)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		added = append(added, s)
	}
	for _, s := range added {
		s.waitSettled(ctx)
	}
	return errors.Join(errs...)
}

func (m *Manager) add(c ServerConfig, owner *kernel.Scope) (*server, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("mcp: server %q: %w", c.Name, err)
	}
	if m.o.Secrets != nil {
		if v := c.secrets(m.o.Env); len(v) > 0 {
			m.o.Secrets(v...)
		}
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errors.New("mcp: manager is closed")
	}
	if s, ok := m.servers[c.Name]; ok {
		if owner != nil && sameServer(s.cfg, c) {
			s.mu.Lock()
			s.owners[owner]++
			s.mu.Unlock()
			m.mu.Unlock()
			m.release(owner, s)
			m.toolsChanged() // one more session sees its tools
			return s, nil
		}
		m.mu.Unlock()
		return nil, fmt.Errorf("mcp: server %q is already configured (%s)", c.Name, describeSource(s.cfg))
	}
	for _, s := range m.servers {
		if toolPart(s.cfg.Name) == toolPart(c.Name) {
			m.mu.Unlock()
			return nil, fmt.Errorf("mcp: servers %q and %q would name their tools alike (mcp__%s__…)", s.cfg.Name, c.Name, toolPart(c.Name))
		}
	}
	s := newServer(m, c)
	if owner != nil {
		s.owners[owner] = 1
	} else {
		s.global = true
	}
	m.servers[c.Name] = s
	m.mu.Unlock()
	if owner != nil {
		m.release(owner, s)
	}
	s.init()
	return s, nil
}

// release drops owner's reference to s when owner closes; the last
// reference stops the server.
func (m *Manager) release(owner *kernel.Scope, s *server) {
	_ = owner.Defer(func() error {
		s.mu.Lock()
		s.owners[owner]--
		if s.owners[owner] <= 0 {
			delete(s.owners, owner)
		}
		last := len(s.owners) == 0 && !s.global
		s.mu.Unlock()
		if last {
			m.remove(s)
		} else {
			m.toolsChanged() // one session less sees its tools
		}
		return nil
	})
}

func (m *Manager) remove(s *server) {
	s.stop()
	m.mu.Lock()
	if m.servers[s.cfg.Name] == s {
		delete(m.servers, s.cfg.Name)
	}
	m.mu.Unlock()
	m.toolsChanged()
}

func describeSource(c ServerConfig) string {
	if c.Path != "" {
		return c.Source + " " + c.Path
	}
	return c.Source
}

// Close stops every server (their tools are unregistered) and undoes the
// manager's registrations. It is idempotent.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	servers := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		servers = append(servers, s)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(s.stop)
	}
	wg.Wait()
	m.mu.Lock()
	m.servers = map[string]*server{}
	m.mu.Unlock()
	m.toolsChanged()
	return m.scope.Close()
}

// limits are the bounds of one tool result (negative options: none).
func (m *Manager) limits() resultLimits {
	return resultLimits{text: max(m.o.MaxResultChars, 0), image: max(m.o.MaxResultImageBytes, 0)}
}

func (m *Manager) server(name string) *server {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.servers[name]
}

func (m *Manager) snapshot() []*server {
	m.mu.Lock()
	out := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, s)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].cfg.Name < out[j].cfg.Name })
	return out
}

// Connect starts the named server if it is not running (a server that
// was given up is tried again) and waits until it is connected or the
// attempt failed.
func (m *Manager) Connect(ctx context.Context, name string) error {
	s := m.server(name)
	if s == nil {
		return fmt.Errorf("mcp: no server %q", name)
	}
	return s.connectNow(ctx)
}

// WaitReady waits until no server is still making its first connection
// attempt (started servers are connected, restarting or failed), or ctx
// ends.
func (m *Manager) WaitReady(ctx context.Context) error {
	for _, s := range m.snapshot() {
		s.waitSettled(ctx)
	}
	return ctx.Err()
}

// Servers returns the status of every server, sorted by name.
func (m *Manager) Servers() []ServerStatus {
	var out []ServerStatus
	for _, s := range m.snapshot() {
		out = append(out, s.status())
	}
	return out
}

// Server returns one server's status.
func (m *Manager) Server(name string) (ServerStatus, bool) {
	s := m.server(name)
	if s == nil {
		return ServerStatus{}, false
	}
	return s.status(), true
}

// Visible returns a tool filter for an agent of a session whose servers
// were added with scope (AddSessionServers): it keeps every tool except
// the MCP tools of servers that only other sessions added, and the tool
// search tools while none of the tools deferred behind them is the
// session's to see. Compose it into agent.Options.Tools to keep sessions'
// servers apart; mcp_tool_search and mcp_call apply the caller's filter
// (tool.VisibleFrom) to the tools they list and run.
func (m *Manager) Visible(scope *kernel.Scope) func(tool.Info) bool {
	return func(i tool.Info) bool {
		switch i.Name {
		case SearchToolName, CallToolName:
			return m.searchable(scope)
		}
		if !strings.HasPrefix(i.Name, "mcp__") {
			return true
		}
		m.mu.Lock()
		s := m.byTool[i.Name]
		m.mu.Unlock()
		if s == nil {
			return true
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.global || s.owners[scope] > 0
	}
}

// searchable reports whether some deferred tool is visible to the session
// of scope.
func (m *Manager) searchable(scope *kernel.Scope) bool {
	v := m.searchers.Load()
	if v == nil {
		return false
	}
	if v.global {
		return true
	}
	for _, s := range v.session {
		s.mu.Lock()
		ok := s.owners[scope] > 0
		s.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

func (m *Manager) emit(s *server) {
	st := s.status()
	switch st.State {
	case StateFailed:
		m.warn(fmt.Sprintf("mcp: server %q failed and was given up: %s", st.Name, st.Error))
	case StateRestarting:
		if st.Restarts == 0 {
			m.warn(fmt.Sprintf("mcp: server %q failed to start, retrying: %s", st.Name, st.Error))
		}
	}
	if m.Changed.Len() == 0 {
		return
	}
	_ = m.Changed.EmitAll(context.Background(), st)
}

// warn tells the user, once per distinct message (the attempt counter of
// a restart is part of the message only after the first).
func (m *Manager) warn(msg string) {
	if m.o.Warn == nil {
		return
	}
	key := msg
	if i := strings.LastIndex(key, " (attempt "); i > 0 {
		key = key[:i]
	}
	m.warnMu.Lock()
	seen := m.warned[key]
	m.warned[key] = true
	m.warnMu.Unlock()
	if !seen {
		m.o.Warn(msg)
	}
}

// instructions renders the servers' instructions for the system prompt.
func (m *Manager) instructions(context.Context) string {
	var parts []string
	for _, s := range m.snapshot() {
		s.mu.Lock()
		text, state, n := s.instr, s.state, len(s.defs)
		s.mu.Unlock()
		text = strings.TrimSpace(text)
		if text == "" || (n == 0 && state != StateConnected) {
			continue
		}
		switch state {
		case StateFailed, StateStopped, StateUntrusted, StateDisabled:
			continue
		}
		if len(text) > maxInstructions {
			text = truncateUTF8(text, maxInstructions) + "…"
		}
		parts = append(parts, "## "+s.cfg.Name+"\n"+text)
	}
	if len(parts) == 0 {
		return ""
	}
	return "# MCP server instructions\n\nThe MCP servers below described how to use their tools (named mcp__<server>__<tool>):\n\n" + strings.Join(parts, "\n\n")
}

const maxInstructions = 8192

// searchers are the servers with deferred tools: whether a global one
// (seen by every caller) has some, and the session servers that do.
type searchers struct {
	global  bool
	session []*server
}

// toolsChanged recomputes which tools hide behind the search tool and
// registers or removes the search tools. Callers hold no manager or
// server lock.
//
// The threshold counts the tools of what one caller sees: the global
// servers' (settings, .mcp.json) and those of the sessions that added a
// server. The global servers' tools are deferred when the global servers
// alone offer too many; a session server's when the global servers and
// those of one of its sessions do — so one session's servers never push
// the tools of other sessions or of the settings behind the search tool.
func (m *Manager) toolsChanged() {
	m.searchMu.Lock()
	defer m.searchMu.Unlock()
	type srv struct {
		s      *server
		defs   []string
		global bool
		owners []*kernel.Scope
	}
	var all []srv
	global := 0
	perScope := map[*kernel.Scope]int{}
	for _, s := range m.snapshot() {
		s.mu.Lock()
		x := srv{s: s, global: s.global}
		if s.state != StateStopped && s.state != StateFailed {
			for _, d := range s.defs {
				x.defs = append(x.defs, ToolName(s.cfg.Name, d.Name))
			}
		}
		if !s.global {
			for o := range s.owners {
				x.owners = append(x.owners, o)
			}
		}
		s.mu.Unlock()
		if x.global {
			global += len(x.defs)
		}
		for _, o := range x.owners {
			perScope[o] += len(x.defs)
		}
		all = append(all, x)
	}
	set := map[string]bool{}
	var summary []string
	var who searchers
	for _, x := range all {
		if len(x.defs) == 0 {
			continue
		}
		total := global
		for _, o := range x.owners {
			total = max(total, global+perScope[o])
		}
		if !m.defer_(x.s.cfg, total) {
			continue
		}
		for _, n := range x.defs {
			set[n] = true
		}
		if x.global {
			// Only servers every caller sees are named in the search
			// tool's description, which all sessions share.
			summary = append(summary, fmt.Sprintf("%s (%d)", x.s.cfg.Name, len(x.defs)))
			who.global = true
		} else {
			who.session = append(who.session, x.s)
		}
	}
	m.deferred.Store(&set)
	m.searchers.Store(&who)
	sum := strings.Join(summary, ", ")
	m.summary.Store(&sum)
	switch {
	case len(set) > 0 && m.searchDispose == nil:
		var ds []func()
		for _, t := range []tool.Tool{&searchTool{m: m}, &callTool{m: m}} {
			d, err := m.o.Tools.Register(t)
			if err != nil {
				m.o.Logger.Warn("mcp: registering the tool search", "err", err)
				continue
			}
			ds = append(ds, d)
		}
		m.searchDispose = func() {
			for _, d := range slices.Backward(ds) {
				d()
			}
		}
	case len(set) == 0 && m.searchDispose != nil:
		m.searchDispose()
		m.searchDispose = nil
	}
}

// defer_ decides whether a server's tools hide behind the search tool.
func (m *Manager) defer_(c ServerConfig, total int) bool {
	if c.ToolSearch != nil {
		return *c.ToolSearch
	}
	switch m.o.ToolSearch {
	case ToolSearchOn:
		return true
	case ToolSearchOff:
		return false
	}
	return total > m.o.ToolSearchThreshold
}

func (m *Manager) isDeferred(name string) bool { return (*m.deferred.Load())[name] }

// Findings reports every server's state for `dsh doctor`: a server that
// failed to start or is restarting is an error or a warning with its
// error (which ends with the tail of its stderr); one that is untrusted or
// disabled says why it does not run.
func (m *Manager) Findings() []doctor.Finding {
	var out []doctor.Finding
	for _, s := range m.Servers() {
		f := doctor.Finding{Subject: "server " + s.Name, Severity: doctor.OK}
		switch s.State {
		case StateConnected:
			f.Message = fmt.Sprintf("connected (%s %s), %d tool(s)", s.Transport, s.Target, len(s.Tools))
			if s.Sandbox != "" {
				f.Message += ", sandboxed (" + string(s.Sandbox) + ")"
			} else if s.Transport == TransportStdio {
				f.Message += ", not sandboxed"
			}
		case StateIdle:
			f.Severity, f.Message = doctor.Info, fmt.Sprintf("not started yet (%d cached tool(s)); it starts on its first call", len(s.Tools))
		case StateConnecting:
			f.Severity, f.Message = doctor.Warning, "still starting"
		case StateRestarting:
			f.Severity, f.Message = doctor.Error, "not running, restarting: "+s.Error
		case StateFailed:
			f.Severity, f.Message = doctor.Error, "failed to start: "+s.Error
			f.Fix = "check its command, URL and environment in " + describeSource(ServerConfig{Source: s.Source, Path: s.Path})
		case StateUntrusted:
			f.Severity, f.Message = doctor.Info, s.Error
			f.Fix = "run dsh here interactively and trust the folder, or pass --trust"
		case StateDisabled:
			f.Severity, f.Message = doctor.Info, "disabled in its configuration"
		default:
			f.Severity, f.Message = doctor.Info, string(s.State)
		}
		out = append(out, f)
		if err := m.resourceError(s.Name); err != nil {
			out = append(out, doctor.Finding{Subject: "server " + s.Name, Severity: doctor.Warning,
				Message: "listing its resources failed (@ offers none of them): " + err.Error()})
		}
	}
	return out
}

// ImageDir is where images from tool results are kept, under Home.
const ImageDir = "mcp-images"

// saveImage keeps an image from a tool result in Home/mcp-images, named by
// its content (the same image is one file), and returns the path.
func (m *Manager) saveImage(mime string, data []byte) (string, error) {
	if m.o.Home == "" {
		return "", errors.New("no state directory")
	}
	dir := filepath.Join(m.o.Home, ImageDir)
	if err := private.MkdirAll(dir); err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	ext := ".bin"
	if exts, _ := mimepkg.ExtensionsByType(mime); len(exts) > 0 {
		ext = exts[len(exts)-1]
	}
	switch mime {
	case "image/png":
		ext = ".png"
	case "image/jpeg":
		ext = ".jpg"
	}
	path := filepath.Join(dir, hex.EncodeToString(sum[:12])+ext)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	return path, private.WriteFile(path, data)
}
