package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/providers"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/backends"
	"github.com/dshq/dsh/tool"
)

// ProtocolVersion is the ACP protocol version dsh speaks.
const ProtocolVersion = sdk.ProtocolVersionNumber

// Options configure a server.
type Options struct {
	// Home is $DSH_HOME: sessions live under it, in the store the user
	// settings name (Home/sessions for JSONL, Home/sessions.db for SQLite).
	Home string
	// Env reads the environment (nil: os.Getenv).
	Env func(string) string
	// Logger receives diagnostics; it must never write to the protocol
	// stream. Nil discards.
	Logger *slog.Logger
	// HTTPClient for model adapters (tests pass a loopback client).
	HTTPClient *http.Client
	// Version is reported as agentInfo.version.
	Version string
	// Cwd is the process's directory; it only picks the settings that
	// decide the prompt capabilities announced before any session exists.
	Cwd string
	// UserHome is the user's home directory (~/.claude and ~/.codex hook
	// files, ~ in permission rules).
	UserHome string
	// NoSync skips fsync (tests, benchmarks).
	NoSync bool
	// CancelGrace bounds how long a cancelled prompt waits for its turn to
	// close (so the log is balanced and every update precedes the answer)
	// before it answers cancelled anyway. Zero means 10s.
	CancelGrace time.Duration
	// Configure runs the configuration pipeline for a workspace (cwd; ""
	// for the user's own layers only) with extra layers on top (a
	// session's additional directories), and returns the trust function of
	// the workspace's site. The command line passes one with its flags and
	// trust policy; nil reads the settings files under Home and trusts no
	// project.
	Configure func(cwd string, extra ...settings.File) (*settings.Config, func(dir string) bool, error)
}

// Server is dsh's ACP agent: one per connection. Each ACP session is a dsh
// session with its own agent; sessions of the same workspace (cwd) share
// one composed app, built from that workspace's settings.
type Server struct {
	o    Options
	log  *slog.Logger
	peer peer
	out  *frameWriter

	jobs tracker       // handlers and helper goroutines
	done chan struct{} // closed when teardown starts

	mu          sync.Mutex
	closed      bool
	caps        sdk.ClientCapabilities
	zedTerminal bool
	sessions    map[string]*sess
	loading     map[string]bool
	workspaces  map[string]*wsEntry
	catalog     *store.Coordinator
	catalogDone func()

	// kidsMu guards kids: the child sessions (subagents) whose activity is
	// shown under an owned session's call. Lock order: kidsMu, then a
	// session's mu, then mu.
	kidsMu sync.Mutex
	kids   map[session.ID]*childLink

	// order puts each session/cancel after the prompts before it on the
	// wire (the frame filter notes both).
	order promptOrder

	teardownOnce sync.Once
}

// Serve runs the ACP server over in/out until in ends (the client
// disconnected) or ctx is done, then disposes every agent, flushes every
// session and returns. out receives protocol frames only.
func Serve(ctx context.Context, in io.Reader, out io.Writer, o Options) error {
	s := newServer(o)
	w := &frameWriter{w: out, spawn: s.spawn}
	s.out = w
	pr, pw := io.Pipe()
	conn := sdk.NewAgentSideConnection(adapter{s}, w, pr)
	conn.SetLogger(s.log.With("component", "acp-jsonrpc"))
	s.peer = conn
	filtered := make(chan struct{})
	go func() {
		defer close(filtered)
		filterFrames(in, pw, w, &s.order, s.log)
	}()
	select {
	case <-conn.Done():
	case <-ctx.Done():
		pw.CloseWithError(ctx.Err())
		<-conn.Done()
	}
	s.teardown()
	if !s.jobs.wait(30 * time.Second) {
		s.log.Warn("acp: handlers still running after teardown")
	}
	select {
	case <-filtered:
	case <-ctx.Done():
		// The reader is blocked on an input we cannot interrupt; the
		// process is exiting anyway.
	}
	return nil
}

func newServer(o Options) *Server {
	if o.Env == nil {
		o.Env = os.Getenv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CancelGrace <= 0 {
		o.CancelGrace = 10 * time.Second
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Cwd == "" {
		o.Cwd, _ = os.Getwd()
	}
	return &Server{
		o: o, log: o.Logger, done: make(chan struct{}),
		sessions: map[string]*sess{}, loading: map[string]bool{}, workspaces: map[string]*wsEntry{},
		kids: map[session.ID]*childLink{},
	}
}

// spawn runs fn on a tracked goroutine.
func (s *Server) spawn(fn func()) {
	s.jobs.add()
	go func() {
		defer s.jobs.finish()
		fn()
	}()
}

// errDisposed is returned by every session method after teardown.
func errDisposed() error {
	return &sdk.RequestError{Code: -32603, Message: "Internal error: the ACP server has been disposed"}
}

func invalidParams(format string, args ...any) error {
	return &sdk.RequestError{Code: -32602, Message: "Invalid params: " + fmt.Sprintf(format, args...)}
}

func internalError(format string, args ...any) error {
	return &sdk.RequestError{Code: -32603, Message: "Internal error: " + fmt.Sprintf(format, args...)}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// teardown marks the server closed, cancels pending prompts, disposes every
// agent (a running turn ends "disposed"; the loop flushes its session) and
// closes the workspaces. It runs once; later callers return at once.
func (s *Server) teardown() {
	s.teardownOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.done)
		recs := make([]*sess, 0, len(s.sessions))
		for _, r := range s.sessions {
			recs = append(recs, r)
		}
		clear(s.sessions)
		entries := make([]*wsEntry, 0, len(s.workspaces))
		for _, e := range s.workspaces {
			entries = append(entries, e)
		}
		catalogDone := s.catalogDone
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for _, r := range recs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.dispose(ctx)
			}()
		}
		wg.Wait()
		for _, e := range entries {
			<-e.ready
			if e.ws != nil {
				if err := e.ws.app.Close(ctx); err != nil {
					s.log.Warn("acp: closing workspace", "cwd", e.ws.cwd, "err", err)
				}
			}
		}
		if catalogDone != nil {
			catalogDone()
		}
	})
}

// ---- initialize / authenticate ----

func (s *Server) initialize(_ context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	s.mu.Lock()
	s.caps = p.ClientCapabilities
	s.zedTerminal = p.ClientCapabilities.Meta["terminal_output"] == true
	s.mu.Unlock()
	title := "dsh"
	return sdk.InitializeResponse{
		ProtocolVersion: ProtocolVersion,
		AgentInfo:       &sdk.Implementation{Name: "dsh", Title: &title, Version: s.o.Version},
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession: true,
			// Client MCP servers: stdio always; streamable HTTP and the
			// legacy SSE transport too.
			McpCapabilities: sdk.McpCapabilities{Http: true, Sse: true},
			PromptCapabilities: sdk.PromptCapabilities{
				Image:           s.imagesAccepted(),
				EmbeddedContext: true,
			},
			SessionCapabilities: sdk.SessionCapabilities{
				List:   &sdk.SessionListCapabilities{},
				Resume: &sdk.SessionResumeCapabilities{},
				Close:  &sdk.SessionCloseCapabilities{},
			},
		},
		AuthMethods: []sdk.AuthMethod{},
	}, nil
}

// imagesAccepted says whether the default model takes images, from the
// settings of the process's directory: providers that refuse image parts
// (DeepSeek, and any configured with noImages) get none offered.
func (s *Server) imagesAccepted() bool {
	c, _, err := s.configure(s.o.Cwd)
	if err != nil {
		return false
	}
	cfg := providers.FromSettings(c)
	return providers.AcceptsImages(cfg, providers.DefaultModel(cfg, s.o.Env))
}

func (s *Server) authenticate(_ context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	// No authentication methods are advertised: keys come from the
	// environment and settings.
	return sdk.AuthenticateResponse{}, invalidParams("unknown authentication method %q (dsh advertises none; set the provider's API key in the environment or settings)", p.MethodId)
}

// ---- workspaces ----

// workspace is the composed app serving every session of one cwd.
type workspace struct {
	key  string
	cwd  string
	dirs []string
	app  *app.App
	// modes is the permission mode control (nil when modes are unavailable).
	modes modeControl
}

type wsEntry struct {
	ready chan struct{}
	ws    *workspace
	err   error
}

// configure builds a workspace's configuration (see Options.Configure).
func (s *Server) configure(cwd string, extra ...settings.File) (*settings.Config, func(string) bool, error) {
	if s.o.Configure != nil {
		return s.o.Configure(cwd, extra...)
	}
	c, err := settings.Load(settings.Input{Paths: settings.Paths{Home: s.o.Home, Project: cwd}, Foreign: app.ForeignSettings(s.o.UserHome, cwd),
		Flags: extra, Schema: app.Schema()})
	if err != nil {
		return nil, nil, err
	}
	return c, func(string) bool { return false }, nil
}

// workspace returns (building it on first use) the app for cwd.
func (s *Server) workspace(ctx context.Context, cwd string, dirs []string) (*workspace, error) {
	key := cwd + "\x00" + strings.Join(dirs, "\x00")
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errDisposed()
	}
	e, ok := s.workspaces[key]
	if !ok {
		e = &wsEntry{ready: make(chan struct{})}
		s.workspaces[key] = e
	}
	s.mu.Unlock()
	if ok {
		<-e.ready
		return e.ws, e.err
	}
	e.ws, e.err = s.buildWorkspace(ctx, key, cwd, dirs)
	if e.err != nil {
		s.mu.Lock()
		delete(s.workspaces, key) // a later session may succeed (fixed settings)
		s.mu.Unlock()
	}
	close(e.ready)
	return e.ws, e.err
}

func (s *Server) buildWorkspace(ctx context.Context, key, cwd string, dirs []string) (*workspace, error) {
	var extra []settings.File
	if len(dirs) > 0 {
		// The editor's additional directories are the user's choice for
		// these sessions, as --add-dir is on the command line.
		extra = append(extra, permission.Key.Flag("additionalDirectories of session/new", permission.Settings{AdditionalDirectories: dirs}))
	}
	cfg, trusted, err := s.configure(cwd, extra...)
	if err != nil {
		return nil, invalidParams("%s", strings.TrimPrefix(err.Error(), "settings: "))
	}
	for _, w := range cfg.Warnings() {
		s.log.Warn(w)
	}
	a, err := app.New(context.WithoutCancel(ctx), app.Options{
		Config: cfg,
		Site: core.Site{
			Home: s.o.Home, Cwd: cwd, UserHome: s.o.UserHome, Getenv: s.o.Env, HTTPClient: s.o.HTTPClient,
			Trusted: trusted, NoSync: s.o.NoSync,
			WrapFS:   func(p fsProvider) fsProvider { return &clientFS{inner: p, srv: s} },
			WrapExec: func(e bashExecutor) bashExecutor { return &clientExec{inner: e, srv: s} },
		},
		Logger: s.log.With("cwd", cwd),
	})
	if err != nil {
		if errors.Is(err, core.ErrConfig) {
			return nil, invalidParams("%s", err)
		}
		return nil, internalError("%v", err)
	}
	ws := &workspace{key: key, cwd: cwd, dirs: dirs, app: a}
	h := a.Host
	var modes modeControl
	if a.Permission != nil {
		modes = checkerModes{a.Permission}
	}
	ws.modes = modes
	err = h.Scope.Effect(func(record func(func() error)) error {
		add := func(d func()) { record(func() error { d(); return nil }) }
		add(h.Sessions.Appended.Listen(func(ctx context.Context, ap session.Appended) error {
			return s.onAppended(ctx, h.Sessions, ap)
		}, kernel.Named("acp")))
		add(h.Tools.Wrap.Use(s.wrapTool, kernel.Named("acp")))
		add(h.Agents.Hub.Request.Use(s.overrideModel, kernel.Named("acp")))
		if modes != nil {
			add(modes.OnChange(func() { s.modeChanged(ws) }))
		}
		return nil
	})
	if err != nil {
		_ = a.Close(context.WithoutCancel(ctx))
		return nil, internalError("%v", err)
	}
	if a.Demo {
		s.log.Info("acp: no model provider is configured; sessions use the offline demo model", "cwd", cwd)
	}
	return ws, nil
}

// onAppended routes every appended event to the session it belongs to.
// Sessions the server does not own are followed only when they are
// subagents of owned sessions (their activity shows under the parent's
// call).
func (s *Server) onAppended(_ context.Context, live *session.Live, ap session.Appended) error {
	if r := s.session(string(ap.Session.ID())); r != nil {
		r.onEvent(ap.Event)
	}
	s.followChildren(live, ap)
	return nil
}

// wrapTool marks a call of an owned session as running and tags its
// context, so the filesystem and terminal seams know which client session
// a call serves.
func (s *Server) wrapTool(ctx context.Context, call tool.Call, next kernel.Next[tool.Call, tool.Result]) (tool.Result, error) {
	if call.Host != nil {
		if r := s.session(call.Host.SessionID()); r != nil {
			r.started(call.ID)
			ctx = context.WithValue(ctx, callKey{}, &callCtx{rec: r, id: call.ID})
		}
	}
	return next(ctx, call)
}

// overrideModel applies a session's model selection to its requests.
func (s *Server) overrideModel(ctx context.Context, in agent.RequestInput, next kernel.Next[agent.RequestInput, *llm.Request]) (*llm.Request, error) {
	if in.Agent != nil && in.Request != nil {
		if r := s.session(string(in.Agent.Session().ID())); r != nil {
			if m := r.modelOverride(); m != "" {
				in.Request.Model = m
			}
		}
	}
	return next(ctx, in)
}

// session returns a live session record.
func (s *Server) session(id string) *sess {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

func (s *Server) clientCaps() (sdk.ClientCapabilities, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps, s.zedTerminal
}

// store returns the session catalog used for listing and loading.
func (s *Server) store() (*store.Coordinator, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errDisposed()
	}
	if s.catalog != nil {
		return s.catalog, nil
	}
	// The store is the user's choice (user settings, --settings), the same
	// for every workspace: their apps open the same one.
	cfg, _, err := s.configure("")
	if err != nil {
		return nil, internalError("opening the session store: %v", err)
	}
	b, err := backends.Open(context.Background(), backends.FromSettings(cfg), backends.Options{Home: s.o.Home, NoSync: s.o.NoSync, Getenv: s.o.Env})
	if err != nil {
		return nil, internalError("opening the session store: %v", err)
	}
	scope := kernel.NewScope("acp-catalog")
	c, err := store.Attach(scope, session.NewLive(nil), b, store.Options{})
	if err != nil {
		_ = scope.Close()
		return nil, internalError("opening the session store: %v", err)
	}
	s.catalog, s.catalogDone = c, func() { _ = scope.Close() }
	return c, nil
}

// tracker counts running jobs; wait polls because jobs may start while
// another goroutine waits (a sync.WaitGroup forbids that).
type tracker struct {
	mu sync.Mutex
	n  int
}

func (t *tracker) add() {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
}

func (t *tracker) finish() {
	t.mu.Lock()
	t.n--
	t.mu.Unlock()
}

func (t *tracker) wait(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		t.mu.Lock()
		n := t.n
		t.mu.Unlock()
		if n == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
}
