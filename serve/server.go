// Package serve is `dsh serve`: many agents in one process behind an HTTP
// API, and many such processes (workers) on one PostgreSQL.
//
// Sessions are dsh sessions. Each workspace directory (and sandbox mode)
// gets one composed app, built by the same configuration pipeline as
// every other front door, shared by its sessions. A session is live in a
// worker while it works and for a while after; an idle one is evicted
// from memory (its agent disposed, its log flushed and its lease released)
// and loaded again from the store when a message arrives, so a worker
// holds hundreds of sessions at the cost of the few that are live.
//
// Every route but /healthz needs a bearer token (package tokens): read
// tokens may only look, full tokens may act, and a token scoped to
// workspaces sees and creates sessions only under them. Event streams (SSE
// and WebSocket) carry the session log's own events, resumable from a seq;
// they read the log at the client's pace, so a slow client never holds up
// an agent and costs no buffer beyond its socket.
package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/tokens"
	"github.com/dshq/dsh/serve/weblogin"
	"github.com/dshq/dsh/store"
)

// Options configure a server.
type Options struct {
	// Roots are the directories sessions may work in (absolute); a
	// session's workspace is one of them or lies under one.
	Roots []string
	// Tokens authenticate requests: the token file (tokens.Store) for
	// one server, the database's (tokens.Postgres) for a fleet.
	Tokens tokens.Keeper
	// App builds the composed app of a workspace (absolute, symbolic links
	// resolved) for a sandbox mode ("" for the workspace's own). It is
	// called once per workspace and mode; the server closes the apps.
	App func(ctx context.Context, dir, sandbox string) (*app.App, error)
	// Catalog reads and lists stored sessions (the store every workspace's
	// app writes).
	Catalog *store.Coordinator
	Logger  *slog.Logger
	Now     func() time.Time
	// Worker names this process in health answers and session holders.
	Worker  string
	Version string

	// MaxRequestBytes caps a request body (default 1 MiB).
	MaxRequestBytes int64
	// Rate and Burst limit each token's requests (default 50/s, 100).
	Rate  rate.Limit
	Burst int
	// CORSOrigins are the origins browsers may call from; none: CORS off.
	CORSOrigins []string
	// UISessionTTL is how long a web UI log-in lasts (default 12h).
	UISessionTTL time.Duration
	// Logins keeps the web UI's log-ins (nil: in memory, this process
	// only). A fleet passes the database's (weblogin.Postgres), so a
	// log-in is good on every worker and a log-out ends it on all.
	Logins weblogin.Store

	// IdleEvict is how long an idle session stays in memory (default 2m;
	// negative: never evicted for idleness).
	IdleEvict time.Duration
	// MemoryBudget, when positive, is the heap the server aims to stay
	// under: past it, idle sessions are evicted, least recently used first.
	MemoryBudget int64
	// ApprovalTimeout is how long a question waits for an answer (default
	// 10m); ApprovalPolicy is what happens then: "deny" (the default) or
	// "cancel" (deny and cancel the turn).
	ApprovalTimeout time.Duration
	ApprovalPolicy  string
	// StreamWriteTimeout drops a stream client that has not taken an
	// event for this long (default 30s); it resumes with Last-Event-ID.
	StreamWriteTimeout time.Duration
	// Heartbeat is the interval of keep-alive comments on idle streams
	// (default 15s).
	Heartbeat time.Duration

	// Metrics serves /metrics (Prometheus text format); nil: 404.
	Metrics http.Handler
	// Runs is the background-run queue (POST /v1/runs); nil: runs are
	// refused with 503.
	Runs Runs
}

// Runs is the queue behind /v1/runs (package serve/jobs on PostgreSQL).
type Runs interface {
	Create(ctx context.Context, tok tokens.Token, req api.CreateRun, workspace string) (api.Run, error)
	Get(ctx context.Context, id int64) (api.Run, error)
	List(ctx context.Context, limit int) ([]api.Run, error)
	Cancel(ctx context.Context, id int64) (api.Run, error)
}

// ErrRunNotFound is returned by [Runs] for an unknown run.
var ErrRunNotFound = errors.New("serve: no such run")

// ErrRunFinished is returned by [Runs] for cancelling a finished run.
var ErrRunFinished = errors.New("serve: the run has finished")

// Server is dsh serve's HTTP API.
type Server struct {
	o     Options
	log   *slog.Logger
	roots []string // resolved

	limMu    sync.Mutex
	limiters map[string]*rate.Limiter

	logins weblogin.Store

	wsMu       sync.Mutex
	workspaces map[string]*wsEntry

	openStreams atomic.Int64
	unobserve   func()

	mu       sync.Mutex
	sessions map[string]*entry
	closed   bool

	stop chan struct{}
	wg   sync.WaitGroup
}

// New returns a server; Close stops it.
func New(o Options) (*Server, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = 1 << 20
	}
	if o.Rate <= 0 {
		o.Rate = 50
	}
	if o.Burst <= 0 {
		o.Burst = 100
	}
	if o.UISessionTTL <= 0 {
		o.UISessionTTL = 12 * time.Hour
	}
	if o.IdleEvict == 0 {
		o.IdleEvict = 2 * time.Minute
	}
	if o.ApprovalTimeout <= 0 {
		o.ApprovalTimeout = 10 * time.Minute
	}
	switch o.ApprovalPolicy {
	case "":
		o.ApprovalPolicy = "deny"
	case "deny", "cancel":
	default:
		return nil, fmt.Errorf("serve: approval timeout policy %q (want deny or cancel)", o.ApprovalPolicy)
	}
	if o.StreamWriteTimeout <= 0 {
		o.StreamWriteTimeout = 30 * time.Second
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 15 * time.Second
	}
	if o.Tokens == nil || o.Catalog == nil || o.App == nil {
		return nil, errors.New("serve: Tokens, Catalog and App are required")
	}
	if len(o.Roots) == 0 {
		return nil, errors.New("serve: at least one workspace root is required")
	}
	if o.Logins == nil {
		o.Logins = &weblogin.Memory{}
	}
	s := &Server{o: o, log: o.Logger, logins: o.Logins, limiters: map[string]*rate.Limiter{}, workspaces: map[string]*wsEntry{},
		sessions: map[string]*entry{}, stop: make(chan struct{})}
	for _, r := range o.Roots {
		if !filepath.IsAbs(r) {
			return nil, fmt.Errorf("serve: root %q is not an absolute path", r)
		}
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			return nil, fmt.Errorf("serve: root %s: %w", r, err)
		}
		if st, err := os.Stat(real); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("serve: root %s is not a directory", r)
		}
		s.roots = append(s.roots, real)
	}
	var err error
	if s.unobserve, err = s.gauges(); err != nil {
		return nil, fmt.Errorf("serve: metrics: %w", err)
	}
	s.wg.Go(s.janitor)
	return s, nil
}

// route is one API route: its method and OpenAPI path, the access it
// needs ("" for none: /healthz alone) and its handler.
type route struct {
	method, path, access string
	h                    func(w http.ResponseWriter, r *http.Request, c *call)
}

// routes is the API. TestRoutesMatchOpenAPI checks it against the
// OpenAPI document in both directions.
func (s *Server) routes() []route {
	return []route{
		{"GET", "/healthz", "", s.health},
		{"GET", "/ui", "", s.uiPage},
		{"POST", "/ui/login", "", s.uiLogin},
		{"POST", "/ui/logout", api.AccessRead, s.uiLogout},
		{"GET", "/openapi.json", api.AccessRead, s.openapi},
		{"GET", "/metrics", api.AccessRead, s.metrics},
		{"GET", "/v1/whoami", api.AccessRead, s.whoami},
		{"GET", "/v1/workspaces", api.AccessRead, s.listWorkspaces},
		{"GET", "/v1/sessions", api.AccessRead, s.listSessions},
		{"POST", "/v1/sessions", api.AccessFull, s.createSession},
		{"GET", "/v1/sessions/{id}", api.AccessRead, s.getSession},
		{"DELETE", "/v1/sessions/{id}", api.AccessFull, s.deleteSession},
		{"POST", "/v1/sessions/{id}/messages", api.AccessFull, s.sendMessage},
		{"POST", "/v1/sessions/{id}/steer", api.AccessFull, s.steer},
		{"POST", "/v1/sessions/{id}/cancel", api.AccessFull, s.cancel},
		{"POST", "/v1/sessions/{id}/fork", api.AccessFull, s.fork},
		{"GET", "/v1/sessions/{id}/rewind", api.AccessRead, s.rewindPoints},
		{"POST", "/v1/sessions/{id}/rewind", api.AccessFull, s.rewind},
		{"POST", "/v1/sessions/{id}/mode", api.AccessFull, s.setMode},
		{"GET", "/v1/sessions/{id}/events", api.AccessRead, s.events},
		{"GET", "/v1/sessions/{id}/stream", api.AccessRead, s.streamSSE},
		{"GET", "/v1/sessions/{id}/ws", api.AccessRead, s.streamWS},
		{"GET", "/v1/sessions/{id}/approvals", api.AccessRead, s.sessionApprovals},
		{"POST", "/v1/sessions/{id}/approvals/{call}", api.AccessFull, s.answer},
		{"GET", "/v1/approvals", api.AccessRead, s.allApprovals},
		{"GET", "/v1/runs", api.AccessRead, s.listRuns},
		{"POST", "/v1/runs", api.AccessFull, s.createRun},
		{"GET", "/v1/runs/{id}", api.AccessRead, s.getRun},
		{"POST", "/v1/runs/{id}/cancel", api.AccessFull, s.cancelRun},
	}
}

// Routes lists the API's routes as "METHOD /path" (tests compare them with
// the OpenAPI document).
func Routes() []string {
	var out []string
	for _, r := range (&Server{}).routes() {
		out = append(out, r.method+" "+r.path)
	}
	return out
}

// call is what a handler knows about the request beyond it.
type call struct {
	tok tokens.Token
}

// Handler is the API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		mux.HandleFunc(rt.method+" "+rt.path, s.wrap(rt))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// Unknown paths need a token too: an unauthenticated caller learns
		// nothing about which routes exist.
		if _, ok := s.authenticate(w, r, api.AccessRead); !ok {
			return
		}
		writeError(w, http.StatusNotFound, api.CodeNotFound, "no such route: "+r.Method+" "+r.URL.Path+" (GET /openapi.json lists them)")
	})
	return s.cors(mux)
}

func (s *Server) wrap(rt route) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := &call{}
		if rt.access != "" {
			tok, ok := s.authenticate(w, r, rt.access)
			if !ok {
				return
			}
			c.tok = tok
		}
		if r.ContentLength > s.o.MaxRequestBytes {
			writeError(w, http.StatusRequestEntityTooLarge, api.CodeTooLarge, fmt.Sprintf("request body of %d bytes is over the limit of %d", r.ContentLength, s.o.MaxRequestBytes))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.o.MaxRequestBytes)
		rt.h(w, r, c)
	}
}

// authenticate checks the bearer token (or, for streams, which browsers
// open without headers, the access_token query parameter; or the web UI's
// session cookie, with its CSRF token when the request changes anything),
// the access it grants and its rate limit. It has answered the request
// when it returns false.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, need string) (tokens.Token, bool) {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok && r.Method == http.MethodGet && (strings.HasSuffix(r.URL.Path, "/stream") || strings.HasSuffix(r.URL.Path, "/ws")) && r.URL.Query().Has("access_token") {
		raw, ok = r.URL.Query().Get("access_token"), true
	}
	if !ok {
		l, err := s.cookieLogin(r)
		if err != nil {
			s.log.Warn("serve: web log-ins", "err", err)
			w.Header().Set("Retry-After", "5")
			writeError(w, http.StatusServiceUnavailable, api.CodeUnavailable, "the web UI's log-ins cannot be checked right now; try again shortly")
			return tokens.Token{}, false
		}
		if l != nil {
			if !checkCSRF(w, r, l) {
				return tokens.Token{}, false
			}
			return s.admit(w, l.tok, need)
		}
	}
	tok, valid := tokens.Token{}, false
	if ok && raw != "" {
		tok, valid = s.o.Tokens.Check(strings.TrimSpace(raw))
	}
	if !valid {
		w.Header().Set("WWW-Authenticate", `Bearer realm="dsh"`)
		writeError(w, http.StatusUnauthorized, api.CodeUnauthorized, "unauthorized: send Authorization: Bearer TOKEN (dsh serve token create makes one)")
		return tokens.Token{}, false
	}
	return s.admit(w, tok, need)
}

// admit applies an authenticated token's rate limit and access. It has
// answered the request when it returns false.
func (s *Server) admit(w http.ResponseWriter, tok tokens.Token, need string) (tokens.Token, bool) {
	if !s.limiter(tok.ID).Allow() {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, api.CodeRateLimited, fmt.Sprintf("rate limit of %g requests per second for token %s exceeded; retry shortly", float64(s.o.Rate), tok.Name))
		return tokens.Token{}, false
	}
	if need == api.AccessFull && tok.ReadOnly() {
		writeError(w, http.StatusForbidden, api.CodeForbidden, "token "+tok.Name+" is read-only")
		return tokens.Token{}, false
	}
	return tok, true
}

func (s *Server) limiter(id string) *rate.Limiter {
	s.limMu.Lock()
	defer s.limMu.Unlock()
	l := s.limiters[id]
	if l == nil {
		l = rate.NewLimiter(s.o.Rate, s.o.Burst)
		s.limiters[id] = l
	}
	return l
}

// cors answers browsers from the configured origins; without any, no CORS
// header is ever sent, so browsers keep other sites' pages out.
func (s *Server) cors(next http.Handler) http.Handler {
	if len(s.o.CORSOrigins) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && slices.Contains(s.o.CORSOrigins, origin) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
			h.Set("Access-Control-Max-Age", "600")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// ---- helpers ----

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"encoding the response failed","code":"internal"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, code int, errCode, msg string) {
	writeJSON(w, code, api.Error{Error: msg, Code: errCode})
}

// httpError is an error with the status and code it answers with.
type httpError struct {
	status int
	code   string
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func errorf(status int, code, format string, args ...any) error {
	return &httpError{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return errorf(http.StatusBadRequest, api.CodeBadRequest, format, args...)
}

func notFound(format string, args ...any) error {
	return errorf(http.StatusNotFound, api.CodeNotFound, format, args...)
}

// fail answers err: its own status when it is an httpError, 500 (with the
// message, which names no secret: errors from the store redact URLs)
// otherwise.
func (s *Server) fail(w http.ResponseWriter, err error) {
	var he *httpError
	if errors.As(err, &he) {
		writeError(w, he.status, he.code, he.msg)
		return
	}
	var inUse *store.InUseError
	if errors.As(err, &inUse) {
		writeError(w, http.StatusConflict, api.CodeConflict, inUse.Error())
		return
	}
	s.log.Warn("serve: request failed", "err", err)
	writeError(w, http.StatusInternalServerError, api.CodeInternal, err.Error())
}

// decode reads a JSON body strictly: unknown fields are an error, and a
// body over the size cap is 413.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return errorf(http.StatusRequestEntityTooLarge, api.CodeTooLarge, "request body is over the limit of %d bytes", tooBig.Limit)
		}
		if errors.Is(err, context.Canceled) {
			return err
		}
		return badRequest("request body: %v", err)
	}
	return nil
}

// ---- simple routes ----

func (s *Server) health(w http.ResponseWriter, _ *http.Request, _ *call) {
	writeJSON(w, http.StatusOK, api.Health{Status: "ok", Version: s.o.Version, Worker: s.o.Worker})
}

func (s *Server) openapi(w http.ResponseWriter, _ *http.Request, _ *call) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(api.OpenAPI)
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request, _ *call) {
	if s.o.Metrics == nil {
		writeError(w, http.StatusNotFound, api.CodeNotFound, "metrics are not enabled on this server")
		return
	}
	s.o.Metrics.ServeHTTP(w, r)
}

func (s *Server) whoami(w http.ResponseWriter, _ *http.Request, c *call) {
	ws := c.tok.Workspaces
	if ws == nil {
		ws = []string{}
	}
	writeJSON(w, http.StatusOK, api.Whoami{Token: c.tok.Name, Access: c.tok.Access, Workspaces: ws})
}

func (s *Server) listWorkspaces(w http.ResponseWriter, _ *http.Request, c *call) {
	out := []string{}
	for _, root := range s.roots {
		if len(c.tok.Workspaces) == 0 {
			out = append(out, root)
			continue
		}
		for _, tw := range s.tokenDirs(c.tok) {
			switch {
			case inside(root, tw):
				out = append(out, tw)
			case inside(tw, root):
				out = append(out, root)
			}
		}
	}
	slices.Sort(out)
	writeJSON(w, http.StatusOK, api.Workspaces{Roots: slices.Compact(out)})
}

// Close disposes every live agent (their turns end "disposed"), closes the
// workspaces' apps and stops the janitor.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	s.unobserve()
	entries := make([]*entry, 0, len(s.sessions))
	for _, e := range s.sessions {
		entries = append(entries, e)
	}
	s.mu.Unlock()
	s.wg.Wait()
	var wg sync.WaitGroup
	for _, e := range entries {
		wg.Go(func() { _ = e.evict(ctx) })
	}
	wg.Wait()
	s.wsMu.Lock()
	wss := make([]*wsEntry, 0, len(s.workspaces))
	for _, w := range s.workspaces {
		wss = append(wss, w)
	}
	s.wsMu.Unlock()
	var errs []error
	for _, w := range wss {
		<-w.ready
		if w.app != nil {
			errs = append(errs, w.app.Close(ctx))
		}
	}
	return errors.Join(errs...)
}
