package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/checkpoint"
	"github.com/dshq/dsh/checkpoint/files"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/internal/claudemsg"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/sandbox"
	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/tokens"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/tool"
	"github.com/dshq/dsh/tools/task"
)

// TypeSession is the event type a server records, inside a session's first
// turn (and again after a change), with what it was created with: model,
// permission and sandbox modes, agent. A worker that loads the session
// later, this one after an eviction or another one of a fleet, runs it the
// same way. It is an event like any other (the log is the one record).
const TypeSession = "serve/session"

// Meta is what a session runs with, beside its log.
type Meta struct {
	Model          string               `json:"model,omitempty"`
	PermissionMode string               `json:"permissionMode,omitempty"`
	Sandbox        string               `json:"sandbox,omitempty"`
	Agent          string               `json:"agent,omitempty"`
	Definition     *api.AgentDefinition `json:"definition,omitempty"`
}

// ---- workspaces ----

type wsEntry struct {
	ready   chan struct{}
	dir     string
	sandbox string
	app     *app.App
	err     error
}

// workspace returns the app of dir for a sandbox mode, building it once.
func (s *Server) workspace(ctx context.Context, dir, sandboxMode string) (*wsEntry, error) {
	key := dir + "\x00" + sandboxMode
	s.wsMu.Lock()
	w, ok := s.workspaces[key]
	if !ok {
		w = &wsEntry{ready: make(chan struct{}), dir: dir, sandbox: sandboxMode}
		s.workspaces[key] = w
	}
	s.wsMu.Unlock()
	if ok {
		<-w.ready
		return w, w.err
	}
	w.app, w.err = s.o.App(context.WithoutCancel(ctx), dir, sandboxMode)
	if w.err == nil {
		w.err = s.install(w)
	}
	if w.err != nil {
		if w.app != nil {
			_ = w.app.Close(context.WithoutCancel(ctx))
			w.app = nil
		}
		s.wsMu.Lock()
		delete(s.workspaces, key) // a later request may succeed (fixed settings)
		s.wsMu.Unlock()
		w.err = errorf(http.StatusBadRequest, api.CodeBadRequest, "cannot start dsh in %s: %v", dir, w.err)
	}
	close(w.ready)
	return w, w.err
}

// install adds the server's listeners to a workspace's host: the session
// record at turn starts.
func (s *Server) install(w *wsEntry) error {
	if err := s.installProgress(w); err != nil {
		return err
	}
	h := w.app.Host
	return h.Scope.Add(h.Sessions.Appended.Listen(func(ctx context.Context, ap session.Appended) error {
		if ap.Event.Type != session.TypeTurnStart {
			return nil
		}
		e := s.lookup(string(ap.Session.ID()))
		if e == nil || !e.metaDirty.CompareAndSwap(true, false) {
			return nil
		}
		m := e.getMeta()
		if _, err := ap.Session.AppendIf(ctx, func(t session.TurnState) bool { return t.Open }, TypeSession, m); err != nil {
			e.metaDirty.Store(true)
			s.log.Warn("serve: recording the session's settings", "session", ap.Session.ID(), "err", err)
		}
		return nil
	}, kernel.Named("serve")))
}

// ---- entries ----

// entry is one session the server knows: live (an agent in memory) or not.
type entry struct {
	s   *Server
	id  session.ID
	dir string

	metaDirty atomic.Bool
	// unstored is set when the session was evicted without an event: it
	// has no log to load, and loading it starts it afresh.
	unstored atomic.Bool
	// output is what its running calls printed lately, for live streams.
	output liveOutput

	// load serializes loading and eviction.
	load sync.Mutex
	// run is held by the attempt of a background run working on this
	// session in this process: River may start a second attempt (a
	// rescue) while the first still runs here, and the check for an
	// answered prompt and the sending of it must not interleave, or
	// the prompt is sent twice and answered as one turn.
	run sync.Mutex

	mu        sync.Mutex
	meta      Meta
	ws        *wsEntry
	h         *agent.Handle
	lastUsed  time.Time
	approvals []*pending
	// liveCh is closed when the session goes live here; goneCh when its
	// agent is disposed (both replaced for the next change).
	liveCh chan struct{}
	goneCh chan struct{}
}

func (e *entry) getMeta() Meta {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.meta
}

func (e *entry) touch() {
	e.mu.Lock()
	e.lastUsed = e.s.o.Now()
	e.mu.Unlock()
}

// agent returns the live agent, or nil.
func (e *entry) agent() agent.Agent {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h == nil {
		return nil
	}
	return e.h.Agent
}

// watch returns the live session (nil when not live here) with the
// channel closed when that changes.
func (e *entry) watch() (*session.Session, <-chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h == nil {
		return nil, e.liveCh
	}
	return e.h.Agent.Session(), e.goneCh
}

func (s *Server) lookup(id string) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

func (s *Server) newEntry(id session.ID, dir string, m Meta) *entry {
	e := &entry{s: s, id: id, dir: dir, meta: m, lastUsed: s.o.Now(), liveCh: make(chan struct{}), goneCh: make(chan struct{})}
	return e
}

// adopt registers e unless an entry for its id exists; it returns the
// registered one.
func (s *Server) adopt(e *entry) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.sessions[string(e.id)]; old != nil {
		return old
	}
	s.sessions[string(e.id)] = e
	return e
}

// options are the agent options of a session in its workspace.
func (e *entry) options(w *wsEntry) agent.Options {
	m := e.getMeta()
	o := w.app.AgentOptions(approver{e})
	if d := m.Definition; d != nil {
		if d.Model != "" {
			o.Model = d.Model
		}
		if d.Prompt != "" {
			o.SystemPrompt = strings.TrimSpace(o.SystemPrompt + "\n\n" + d.Prompt)
		}
		if d.Tools != nil {
			allowed := map[string]bool{}
			for _, t := range d.Tools {
				allowed[claudemsg.DshToolName(t)] = true
			}
			o.Tools = func(i tool.Info) bool { return allowed[i.Name] }
		}
	}
	if m.Model != "" {
		o.Model = m.Model
	}
	return o
}

var agentSeq atomic.Int64

func (s *Server) agentID() agent.ID {
	return agent.ID(fmt.Sprintf("serve-%d-%d", s.o.Now().UnixNano(), agentSeq.Add(1)))
}

// goLive records h as the entry's agent and applies its permission mode.
func (e *entry) goLive(w *wsEntry, h *agent.Handle) {
	m := e.getMeta()
	if m.PermissionMode != "" && w.app.Permission != nil {
		if err := w.app.Permission.SetSessionMode(string(h.Agent.Session().ID()), permission.Mode(m.PermissionMode)); err != nil {
			e.s.log.Warn("serve: permission mode", "session", e.id, "err", err)
		}
	}
	e.mu.Lock()
	e.ws, e.h, e.lastUsed = w, h, e.s.o.Now()
	close(e.liveCh)
	e.liveCh = make(chan struct{})
	e.mu.Unlock()
}

// live returns the session's agent, loading the session from the store
// when it is not in memory.
func (e *entry) live(ctx context.Context) (agent.Agent, error) {
	if a := e.agent(); a != nil {
		e.touch()
		return a, nil
	}
	e.load.Lock()
	defer e.load.Unlock()
	if a := e.agent(); a != nil {
		e.touch()
		return a, nil
	}
	m := e.getMeta()
	w, err := e.s.workspace(ctx, e.dir, m.Sandbox)
	if err != nil {
		return nil, err
	}
	h, err := w.app.Host.Agents.Resume(ctx, agent.ResumeOptions{AgentID: e.s.agentID(), SessionID: e.id, Options: e.options(w)})
	if err != nil && errors.Is(err, store.ErrNotFound) && e.unstored.Load() {
		// Evicted before it held an event (created, never sent to): the
		// store has nothing of it, and nothing is lost by starting it
		// again under its id. Under load a client's first message can come
		// later than the idle eviction.
		h, err = w.app.Host.Agents.Create(ctx, agent.CreateOptions{AgentID: e.s.agentID(), SessionID: e.id,
			Header: session.Header{Cwd: e.dir}, Options: e.options(w)})
	}
	if err != nil {
		var inUse *store.InUseError
		if errors.As(err, &inUse) {
			return nil, errorf(http.StatusConflict, api.CodeConflict, "%s", inUse.Error())
		}
		return nil, fmt.Errorf("serve: loading session %s: %w", e.id, err)
	}
	e.goLive(w, h)
	return h.Agent, nil
}

// evict disposes the live agent: its log is flushed and its lock or lease
// released; the entry stays, a few hundred bytes, to load it again.
func (e *entry) evict(ctx context.Context) error {
	e.load.Lock()
	defer e.load.Unlock()
	e.mu.Lock()
	h := e.h
	e.h = nil
	gone := e.goneCh
	e.goneCh = make(chan struct{})
	e.mu.Unlock()
	if h == nil {
		return nil
	}
	e.unstored.Store(h.Agent.Session().Len() == 0)
	err := h.Dispose(ctx)
	close(gone)
	return err
}

// evictable reports whether the entry may leave memory now: idle, no
// question pending, and unused since before.
func (e *entry) evictable(before time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h == nil || len(e.approvals) > 0 || e.lastUsed.After(before) {
		return false
	}
	return e.h.Agent.Status() == agent.Idle
}

// janitor evicts idle sessions: those unused for IdleEvict, and, while the
// heap is over MemoryBudget, the least recently used idle ones.
func (s *Server) janitor() {
	every := 5 * time.Second
	if s.o.IdleEvict > 0 {
		every = min(every, max(s.o.IdleEvict/4, 10*time.Millisecond))
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.sweep(context.Background())
	}
}

// sweep is one pass of the janitor; it returns how many it evicted.
func (s *Server) sweep(ctx context.Context) int {
	s.mu.Lock()
	var live []*entry
	for _, e := range s.sessions {
		if e.agent() != nil {
			live = append(live, e)
		}
	}
	s.mu.Unlock()
	n := 0
	if s.o.IdleEvict > 0 {
		cut := s.o.Now().Add(-s.o.IdleEvict)
		for _, e := range live {
			if e.evictable(cut) {
				if err := e.evict(ctx); err != nil {
					s.log.Warn("serve: evicting an idle session", "session", e.id, "err", err)
				}
				n++
			}
		}
	}
	if s.o.MemoryBudget > 0 && heapInUse() > s.o.MemoryBudget {
		slices.SortFunc(live, func(a, b *entry) int {
			a.mu.Lock()
			ta := a.lastUsed
			a.mu.Unlock()
			b.mu.Lock()
			tb := b.lastUsed
			b.mu.Unlock()
			return ta.Compare(tb)
		})
		now := s.o.Now()
		for _, e := range live {
			if heapInUse() <= s.o.MemoryBudget {
				break
			}
			if e.evictable(now) {
				_ = e.evict(ctx)
				n++
			}
		}
	}
	return n
}

// EvictIdle evicts every idle session now (benchmarks, tests, shutdown
// of a worker that hands its sessions to others); it returns how many.
func (s *Server) EvictIdle(ctx context.Context) int {
	s.mu.Lock()
	var live []*entry
	for _, e := range s.sessions {
		live = append(live, e)
	}
	s.mu.Unlock()
	n := 0
	now := s.o.Now()
	for _, e := range live {
		if e.evictable(now) {
			_ = e.evict(ctx)
			n++
		}
	}
	return n
}

// Live counts the sessions in memory and all the server knows.
func (s *Server) Live() (live, known int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.sessions {
		if e.agent() != nil {
			live++
		}
	}
	return live, len(s.sessions)
}

// ---- paths and access ----

// inside reports whether p is root or lies under it (both clean,
// absolute, symbolic links resolved).
func inside(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// tokenDirs are a token's workspaces with symbolic links resolved (a
// workspace that no longer exists keeps its clean path).
func (s *Server) tokenDirs(t tokens.Token) []string {
	out := make([]string, 0, len(t.Workspaces))
	for _, w := range t.Workspaces {
		if real, err := filepath.EvalSymlinks(w); err == nil {
			w = real
		}
		out = append(out, filepath.Clean(w))
	}
	return out
}

// allowed reports whether a token may use dir (resolved): it lies under a
// root and, for a scoped token, under one of its workspaces.
func (s *Server) allowed(t tokens.Token, dir string) bool {
	if !slices.ContainsFunc(s.roots, func(r string) bool { return inside(dir, r) }) {
		return false
	}
	if len(t.Workspaces) == 0 {
		return true
	}
	return slices.ContainsFunc(s.tokenDirs(t), func(w string) bool { return inside(dir, w) })
}

// resolveWorkspace turns a requested workspace into a directory the token
// may use: relative to the first root, cleaned, symbolic links resolved
// (so neither "..", nor a link pointing out, nor a link swapped in later
// reaches outside), an existing directory.
func (s *Server) resolveWorkspace(t tokens.Token, want string) (string, error) {
	if want == "" {
		return "", badRequest("workspace is required (GET /v1/workspaces lists the roots)")
	}
	if strings.ContainsRune(want, 0) {
		return "", badRequest("workspace %q is not a path", want)
	}
	p := want
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.roots[0], p)
	}
	p = filepath.Clean(p)
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", badRequest("workspace %s does not exist", want)
		}
		return "", badRequest("workspace %s: %v", want, err)
	}
	if !s.allowed(t, real) {
		return "", errorf(http.StatusForbidden, api.CodeForbidden, "workspace %s is outside the directories this token may use (GET /v1/workspaces lists them)", want)
	}
	st, err := os.Stat(real)
	if err != nil || !st.IsDir() {
		return "", badRequest("workspace %s is not a directory", want)
	}
	return real, nil
}

// sessionDir is where a stored session works, links resolved.
func sessionDir(cwd string) string {
	if cwd == "" {
		return ""
	}
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		return real
	}
	return filepath.Clean(cwd)
}

// find returns the entry of the session raw names (an id or a unique
// prefix), when the token may see it. A session outside the token's
// workspaces is "not found": its existence is not disclosed.
func (s *Server) find(ctx context.Context, t tokens.Token, raw string) (*entry, error) {
	if raw == "" {
		return nil, notFound("no session id")
	}
	e := s.lookup(raw)
	if e == nil {
		id, err := store.Resolve(ctx, s.o.Catalog, raw)
		if err != nil {
			if store.IsAmbiguous(err) {
				return nil, badRequest("%v", err)
			}
			if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidID) {
				return nil, notFound("no session %q", raw)
			}
			return nil, err
		}
		if e = s.lookup(string(id)); e == nil {
			h, events, err := s.o.Catalog.Read(ctx, id)
			if err != nil {
				if errors.Is(err, store.ErrNotFound) {
					return nil, notFound("no session %q", raw)
				}
				return nil, err
			}
			e = s.adopt(s.newEntry(id, sessionDir(h.Cwd), metaOf(events)))
		}
	}
	if e.dir == "" || !s.allowed(t, e.dir) {
		return nil, notFound("no session %q", raw)
	}
	return e, nil
}

// metaOf is the latest session record of a log.
func metaOf(events []session.Event) Meta {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == TypeSession {
			if m, err := session.Decode[Meta](events[i]); err == nil {
				return m
			}
		}
	}
	return Meta{}
}

// ---- views ----

// view is the API's picture of a session: from the listing entry when it
// is stored, overlaid with what the live agent knows.
func (s *Server) view(e *entry, info *store.Info) api.Session {
	m := e.getMeta()
	v := api.Session{ID: e.id, Workspace: e.dir, Status: api.StatusStored, Model: m.Model, PermissionMode: m.PermissionMode,
		Sandbox: m.Sandbox, Agent: m.Agent}
	if info != nil {
		v.CreatedAt, v.Parent, v.Title = info.Header.CreatedAt, info.Header.ParentSession, info.Title
		v.LastActivity, v.Turns, v.Events = info.LastActivity, info.Turns, info.Events
	}
	e.mu.Lock()
	v.PendingApprovals = len(e.approvals)
	h := e.h
	e.mu.Unlock()
	if h != nil {
		a := h.Agent
		sess := a.Session()
		v.Status = string(a.Status())
		if v.Status == string(agent.Disposed) {
			v.Status = api.StatusStored
		}
		v.Holder = s.o.Worker
		hd := sess.Header()
		v.CreatedAt, v.Parent = hd.CreatedAt, hd.ParentSession
		n := int64(sess.Len())
		if n > v.Events || info == nil {
			v.Events = n
			v.Turns = sess.LastTurn()
			if last, ok := sess.Event(n - 1); ok {
				v.LastActivity = last.Time
			}
			if v.Title == "" {
				v.Title = store.NewInfo(hd, firstEvents(sess, 64)).Title
			}
		}
		if v.Model == "" {
			v.Model = a.Options().Model
		}
	}
	if v.LastActivity == 0 {
		v.LastActivity = v.CreatedAt
	}
	return v
}

// firstEvents is the start of a live log (enough for its title).
func firstEvents(s *session.Session, n int) []session.Event {
	var evs []session.Event
	_ = s.Range(context.Background(), 0, int64(n), func(e session.Event) error { // a title is best effort
		evs = append(evs, e)
		return nil
	})
	return evs
}

func (s *Server) info(ctx context.Context, e *entry) *store.Info {
	infos, err := s.o.Catalog.List(ctx, store.Query{Cwd: e.dir})
	if err == nil {
		for i := range infos {
			if infos[i].Header.ID == e.id {
				return &infos[i]
			}
		}
	}
	return nil
}

// ---- handlers ----

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request, c *call) {
	ctx := r.Context()
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	var under string
	if ws := q.Get("workspace"); ws != "" {
		dir, err := s.resolveWorkspace(c.tok, ws)
		if err != nil {
			s.fail(w, err)
			return
		}
		under = dir
	}
	status := q.Get("status")
	infos, err := s.o.Catalog.List(ctx, store.Query{})
	if err != nil {
		s.fail(w, err)
		return
	}
	out := []api.Session{}
	seen := map[session.ID]bool{}
	keep := func(v api.Session) {
		if status != "" && v.Status != status {
			return
		}
		out = append(out, v)
	}
	for i := range infos {
		in := &infos[i]
		// Seen before any filter: a stored session left out here (a
		// subagent's, say, loaded when someone opened it) must not come
		// back below as a live one.
		seen[in.Header.ID] = true
		if in.Header.ParentSession != "" && q.Get("children") != "true" {
			continue
		}
		dir := sessionDir(in.Header.Cwd)
		if dir == "" || !s.allowed(c.tok, dir) || (under != "" && !inside(dir, under)) {
			continue
		}
		e := s.lookup(string(in.Header.ID))
		if e == nil {
			e = s.newEntry(in.Header.ID, dir, Meta{}) // not adopted: a listing loads nothing
		}
		keep(s.view(e, in))
	}
	s.mu.Lock()
	var extra []*entry
	for _, e := range s.sessions {
		if !seen[e.id] && e.dir != "" && s.allowed(c.tok, e.dir) && (under == "" || inside(e.dir, under)) {
			extra = append(extra, e)
		}
	}
	s.mu.Unlock()
	for _, e := range extra {
		keep(s.view(e, nil))
	}
	slices.SortFunc(out, func(a, b api.Session) int {
		return cmp.Or(cmp.Compare(b.LastActivity, a.LastActivity), strings.Compare(string(a.ID), string(b.ID)))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	writeJSON(w, http.StatusOK, api.SessionList{Sessions: out})
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request, c *call) {
	var req api.CreateSession
	if err := decode(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	v, err := s.create(r.Context(), c.tok, req, nil)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, v)
}

// create starts a session (seeded with a fork's prefix, or under a chosen
// id, when seed says so).
func (s *Server) create(ctx context.Context, t tokens.Token, req api.CreateSession, fork *forkSeed) (api.Session, error) {
	_, v, err := s.createEntry(ctx, t, req, fork)
	return v, err
}

func (s *Server) createEntry(ctx context.Context, t tokens.Token, req api.CreateSession, fork *forkSeed) (*entry, api.Session, error) {
	dir, err := s.resolveWorkspace(t, req.Workspace)
	if err != nil {
		return nil, api.Session{}, err
	}
	if req.PermissionMode != "" {
		if _, err := permission.ParseMode(req.PermissionMode); err != nil {
			return nil, api.Session{}, badRequest("permissionMode: %v", err)
		}
	}
	if req.Sandbox != "" {
		if _, err := sandbox.ParseMode(req.Sandbox); err != nil {
			return nil, api.Session{}, badRequest("sandbox: %v", err)
		}
	}
	if req.Agent != "" && req.AgentDefinition != nil {
		return nil, api.Session{}, badRequest("give agent (a name) or agentDefinition, not both")
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, api.Session{}, errorf(http.StatusServiceUnavailable, api.CodeUnavailable, "the server is stopping")
	}
	ws, err := s.workspace(ctx, dir, req.Sandbox)
	if err != nil {
		return nil, api.Session{}, err
	}
	m := Meta{Model: req.Model, PermissionMode: req.PermissionMode, Sandbox: req.Sandbox, Agent: req.Agent, Definition: req.AgentDefinition}
	if req.Agent != "" {
		cat, ok := core.Lookup[*task.Catalog](ws.app.Host)
		var names []string
		found := false
		if ok {
			for _, d := range cat.Definitions() {
				names = append(names, d.Name)
				if d.Name == req.Agent {
					m.Definition = &api.AgentDefinition{Prompt: d.Prompt, Tools: d.Tools, Model: d.Model}
					found = true
				}
			}
		}
		if !found {
			return nil, api.Session{}, badRequest("no agent %q in %s (agents: %s)", req.Agent, dir, strings.Join(names, ", "))
		}
	}
	e := s.newEntry("", dir, m)
	opts := e.options(ws)
	if opts.Model != "" {
		if _, _, ok := ws.app.Host.LLM.Resolve(opts.Model); !ok {
			return nil, api.Session{}, badRequest("model %q is not served here (configure a provider or use an alias)", opts.Model)
		}
	}
	co := agent.CreateOptions{AgentID: s.agentID(), Header: session.Header{Cwd: dir}, Options: opts}
	if fork != nil {
		co.Header.ParentSession = ""
		co.Seed = fork.events
		co.SessionID = fork.id
	}
	e.load.Lock()
	h, err := ws.app.Host.Agents.Create(ctx, co)
	if err != nil {
		e.load.Unlock()
		return nil, api.Session{}, fmt.Errorf("serve: creating a session: %w", err)
	}
	e.id = h.Agent.Session().ID()
	e.metaDirty.Store(true)
	s.adopt(e)
	e.goLive(ws, h)
	e.load.Unlock()
	if req.Prompt != "" {
		if err := h.Agent.Send(ctx, []llm.Block{llm.Text(req.Prompt)}, llm.UserSource); err != nil {
			return nil, api.Session{}, fmt.Errorf("serve: sending the first prompt: %w", err)
		}
	}
	return e, s.view(e, nil), nil
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request, c *call) {
	e, err := s.find(r.Context(), c.tok, r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	v := s.view(e, s.info(r.Context(), e))
	if v.Holder == "" {
		if l := s.o.Catalog.Leases(); l != nil {
			if lease, err := l.Lease(r.Context(), e.id); err == nil && !lease.Free {
				v.Holder = lease.Holder.String()
			}
		}
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request, c *call) {
	ctx := r.Context()
	e, err := s.find(ctx, c.tok, r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	if a := e.agent(); a != nil && a.Status() == agent.Running {
		a.Cancel("the session is being deleted")
		_ = a.WhenIdle(ctx)
	}
	if err := e.evict(ctx); err != nil {
		s.log.Warn("serve: disposing a deleted session", "session", e.id, "err", err)
	}
	d, ok := s.o.Catalog.Deleter()
	if !ok {
		s.fail(w, errorf(http.StatusNotImplemented, api.CodeNotImplemented, "the session store (%s) cannot delete sessions; the session was unloaded and stays stored", s.o.Catalog.Name()))
		return
	}
	if err := d.Delete(ctx, e.id); err != nil {
		s.fail(w, err)
		return
	}
	s.mu.Lock()
	delete(s.sessions, string(e.id))
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// act loads the session (when it is not live) and runs fn on its agent.
func (s *Server) act(w http.ResponseWriter, r *http.Request, c *call, body any, fn func(ctx context.Context, e *entry, a agent.Agent) error) {
	ctx := r.Context()
	if body != nil {
		if err := decode(r, body); err != nil {
			s.fail(w, err)
			return
		}
	}
	e, err := s.find(ctx, c.tok, r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	a, err := e.live(ctx)
	if err != nil {
		s.fail(w, err)
		return
	}
	seq := int64(a.Session().Len())
	if err := fn(ctx, e, a); err != nil {
		if errors.Is(err, agent.ErrDisposed) {
			err = errorf(http.StatusConflict, api.CodeConflict, "session %s was unloaded meanwhile; retry", e.id)
		}
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, api.Accepted{Session: e.id, Seq: seq})
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request, c *call) {
	var m api.Message
	s.act(w, r, c, &m, func(ctx context.Context, _ *entry, a agent.Agent) error {
		if strings.TrimSpace(m.Text) == "" {
			return badRequest("text is empty")
		}
		return a.Send(ctx, []llm.Block{llm.Text(m.Text)}, llm.UserSource)
	})
}

func (s *Server) steer(w http.ResponseWriter, r *http.Request, c *call) {
	var m api.Message
	s.act(w, r, c, &m, func(ctx context.Context, _ *entry, a agent.Agent) error {
		if strings.TrimSpace(m.Text) == "" {
			return badRequest("text is empty")
		}
		return a.Steer(ctx, []llm.Block{llm.Text(m.Text)}, llm.UserSource)
	})
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request, c *call) {
	var m api.Cancel
	s.act(w, r, c, &m, func(_ context.Context, _ *entry, a agent.Agent) error {
		reason := m.Reason
		if reason == "" {
			reason = "cancelled through the API by " + c.tok.Name
		}
		a.Cancel(reason)
		return nil
	})
}

func (s *Server) setMode(w http.ResponseWriter, r *http.Request, c *call) {
	var m api.SetMode
	s.act(w, r, c, &m, func(_ context.Context, e *entry, a agent.Agent) error {
		mode, err := permission.ParseMode(m.PermissionMode)
		if err != nil || m.PermissionMode == "" {
			return badRequest("permissionMode: unknown mode %q (%s)", m.PermissionMode, permission.ModeNames())
		}
		e.mu.Lock()
		w := e.ws
		e.mu.Unlock()
		if w == nil || w.app.Permission == nil {
			return errorf(http.StatusConflict, api.CodeConflict, "permission modes are not available in this workspace")
		}
		if err := w.app.Permission.SetSessionMode(string(a.Session().ID()), mode); err != nil {
			return badRequest("%v", err)
		}
		e.mu.Lock()
		e.meta.PermissionMode = string(mode)
		e.mu.Unlock()
		e.metaDirty.Store(true)
		return nil
	})
}

// forkSeed is what a session starts from beyond its request: a fork's
// completed prefix, or the id a background run chose for it.
type forkSeed struct {
	events []session.Event
	id     session.ID
}

func (s *Server) fork(w http.ResponseWriter, r *http.Request, c *call) {
	ctx := r.Context()
	var f api.Fork
	if err := decode(r, &f); err != nil {
		s.fail(w, err)
		return
	}
	e, err := s.find(ctx, c.tok, r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	var events []session.Event
	if sess, _ := e.watch(); sess != nil {
		if events, err = sess.Log(ctx); err != nil {
			s.fail(w, err)
			return
		}
	} else if _, events, err = s.o.Catalog.Read(ctx, e.id); err != nil {
		s.fail(w, err)
		return
	}
	seed := session.CompletedPrefix(events)
	if f.Turns > 0 {
		seed = firstTurns(seed, f.Turns)
	}
	m := e.getMeta()
	v, err := s.create(ctx, c.tok, api.CreateSession{Workspace: e.dir, Model: m.Model, PermissionMode: m.PermissionMode, Sandbox: m.Sandbox,
		AgentDefinition: m.Definition}, &forkSeed{events: store.CloneEvents(seed)})
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, v)
}

// firstTurns cuts a completed prefix after its n-th turn/end.
func firstTurns(events []session.Event, n int) []session.Event {
	ends := 0
	for i, ev := range events {
		if ev.Type == session.TypeTurnEnd {
			if ends++; ends == n {
				return events[:i+1]
			}
		}
	}
	return events
}

// rewind takes a session's code, conversation or both back to before an
// earlier turn (checkpoint.Checkpoints.Rewind, the one every front door
// uses): 200 with what was done, 409 with the same result when files
// someone else changed refuse it, 409 while a turn runs.
func (s *Server) rewind(w http.ResponseWriter, r *http.Request, c *call) {
	ctx := r.Context()
	var req api.Rewind
	if err := decode(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	cr, err := rewindRequest(req)
	if err != nil {
		s.fail(w, err)
		return
	}
	e, a, cps, err := s.checkpointed(ctx, c, r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	sess := a.Session()
	seq := int64(sess.Len())
	rep, err := cps.Rewind(ctx, sess, cr)
	res := rewindResult(e.id, req, rep, seq)
	switch {
	case errors.Is(err, checkpoint.ErrConflicts):
		res.Refused = "conflicts"
		writeJSON(w, http.StatusConflict, res)
		return
	case errors.Is(err, checkpoint.ErrBusy), errors.Is(err, checkpoint.ErrCompacted):
		s.fail(w, errorf(http.StatusConflict, api.CodeConflict, "%v", err))
		return
	case errors.Is(err, checkpoint.ErrNoPoint):
		s.fail(w, badRequest("to: %v", err))
		return
	case err != nil:
		s.fail(w, err)
		return
	}
	e.touch()
	writeJSON(w, http.StatusOK, res)
}

// rewindPoints lists the turns a session can be rewound to.
func (s *Server) rewindPoints(w http.ResponseWriter, r *http.Request, c *call) {
	_, a, cps, err := s.checkpointed(r.Context(), c, r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	pts, err := cps.Points(a.Session())
	if err != nil {
		s.fail(w, err)
		return
	}
	out := api.RewindPoints{Points: []api.RewindPoint{}}
	for _, p := range pts {
		v := api.RewindPoint{Turn: p.Target.Turn, Prompt: p.Prompt, Code: p.Code, Steps: p.Steps, Summary: p.Summary(), Changes: []api.RewindChange{}}
		for _, ch := range p.Changes {
			if ch.Old.Kind == files.Dir || ch.New.Kind == files.Dir {
				continue
			}
			v.Changes = append(v.Changes, api.RewindChange{Path: ch.Path, Op: ch.Op()})
		}
		out.Points = append(out.Points, v)
	}
	writeJSON(w, http.StatusOK, out)
}

// checkpointed finds a session, loads it and its workspace's checkpoints.
func (s *Server) checkpointed(ctx context.Context, c *call, id string) (*entry, agent.Agent, *checkpoint.Checkpoints, error) {
	e, err := s.find(ctx, c.tok, id)
	if err != nil {
		return nil, nil, nil, err
	}
	a, err := e.live(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	e.mu.Lock()
	ws := e.ws
	e.mu.Unlock()
	if ws == nil || ws.app == nil || ws.app.Checkpoints == nil {
		return nil, nil, nil, errorf(http.StatusConflict, api.CodeConflict, "rewind is not available in this workspace: the checkpoints plugin is switched off (enabledPlugins)")
	}
	return e, a, ws.app.Checkpoints, nil
}

func rewindRequest(req api.Rewind) (checkpoint.Request, error) {
	var cr checkpoint.Request
	if req.To == "" {
		return cr, badRequest("to: the turn to rewind to is missing (GET this route lists them)")
	}
	t, err := checkpoint.ParseTarget(req.To)
	if err != nil {
		return cr, badRequest("to: %v", err)
	}
	cr.To = t
	switch req.Scope {
	case api.RewindCode:
		cr.Code = true
	case api.RewindChat:
		cr.Chat = true
	case api.RewindBoth, "":
		cr.Code, cr.Chat = true, true
	default:
		return cr, badRequest("scope: %q is not code, chat or both", req.Scope)
	}
	if req.Force && req.SkipConflicts {
		return cr, badRequest("force and skipConflicts exclude each other")
	}
	cr.DryRun, cr.Force, cr.SkipConflicts = req.DryRun, req.Force, req.SkipConflicts
	return cr, nil
}

func rewindResult(id session.ID, req api.Rewind, rep checkpoint.Report, seq int64) api.RewindResult {
	scope := req.Scope
	if scope == "" {
		scope = api.RewindBoth
	}
	res := api.RewindResult{Session: id, To: rep.Request.To.String(), Scope: scope, DryRun: req.DryRun, Done: rep.Done, Prompt: rep.Prompt,
		Files: []api.RewindFile{}, Skipped: []api.RewindFile{}, Conflicts: []api.RewindConflict{}, Diff: rep.Diff,
		Hidden: rep.Shadowed, Interrupted: rep.Interrupted, Text: rep.Text(), Seq: seq}
	state := map[string][2]string{}
	if rep.Applied != nil {
		for _, f := range rep.Applied.Left {
			state[f.Path] = [2]string{"left", ""}
		}
		for _, f := range rep.Applied.Failed {
			state[f.Path] = [2]string{"failed", f.Err.Error()}
		}
	}
	for _, a := range rep.Actions {
		st := state[a.Path]
		res.Files = append(res.Files, api.RewindFile{Path: a.Path, Action: checkpoint.ActionWord(a), State: st[0], Error: st[1]})
	}
	for _, sk := range rep.Skipped {
		res.Skipped = append(res.Skipped, api.RewindFile{Path: sk.Path, Op: sk.Op(), Why: sk.Why})
	}
	for _, cf := range rep.Conflicts {
		res.Conflicts = append(res.Conflicts, api.RewindConflict{Path: cf.Path, Op: cf.Op, Diff: cf.Diff})
	}
	return res
}

func (s *Server) events(w http.ResponseWriter, r *http.Request, c *call) {
	ctx := r.Context()
	e, err := s.find(ctx, c.tok, r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	q := r.URL.Query()
	from, _ := strconv.ParseInt(q.Get("from"), 10, 64)
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 || limit > 5000 {
		limit = 500
	}
	if from < 0 {
		from = 0
	}
	var evs []session.Event
	if sess, _ := e.watch(); sess != nil {
		// One more than a page tells whether there is more.
		err = sess.Range(ctx, from, from+int64(limit)+1, func(e session.Event) error {
			evs = append(evs, e)
			return nil
		})
		if err != nil {
			s.fail(w, err)
			return
		}
	} else if evs, err = s.o.Catalog.ReadFrom(ctx, e.id, from); err != nil {
		s.fail(w, err)
		return
	}
	page := api.EventPage{Events: evs, Next: from}
	if len(evs) > limit {
		page.Events, page.More = evs[:limit], true
	}
	if page.Events == nil {
		page.Events = []session.Event{}
	}
	if n := len(page.Events); n > 0 {
		page.Next = page.Events[n-1].Seq + 1
	}
	writeJSON(w, http.StatusOK, page)
}
