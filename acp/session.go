package acp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/commands"
	"github.com/dshq/dsh/internal/uuid"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/pricing"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

// sess is one ACP session: a dsh session with its agent.
type sess struct {
	srv *Server
	id  string
	ws  *workspace

	handle *agent.Handle
	ag     agent.Agent
	// scope owns what the session holds beyond its agent (the client's
	// MCP servers); it closes when the session is disposed.
	scope *kernel.Scope

	// slotMu serializes the prompt slot's life (begin, end) with
	// session/cancel, which holds it until the agent has been told: a
	// prompt is not answered, nor the next one begun, while a cancel is
	// still reaching the agent. Taken before mu.
	slotMu sync.Mutex
	// mu orders everything the session writes to the client: live updates,
	// replay, in-progress marks; and guards the fields below.
	mu       sync.Mutex
	tr       *translator
	ready    bool  // live updates flow
	from     int64 // live events before this seq were replayed (or predate the session)
	prompt   *promptSlot
	model    string // the client's model choice ("" = the workspace default)
	mode     string // the permission mode last announced to the client
	disposed bool
	titled   bool // the session has a title (its first prompt)
	// stopCmd cancels the server command (/compact) that is running;
	// cmdDone closes when it has returned. dispose stops the command and
	// waits for it before it stops the agent, so the command's turn is
	// closed in the log before the agent goes.
	stopCmd context.CancelFunc
	cmdDone chan struct{}
	// stopAccount stops the background sum of the history's cost
	// (accountHistory); accountDone closes when it has returned.
	stopAccount context.CancelFunc
	accountDone chan struct{}
}

// promptSlot is the in-flight session/prompt of a session.
type promptSlot struct {
	ord       int   // its number among the session's prompts (see promptOrder)
	watermark int64 // events before it predate the prompt
	turn      int   // the message turn that answers it (0: not started)
	usage     llm.Usage
	refusal   bool
	cancel    chan struct{}
	cancelled bool
	done      chan struct{}
	once      sync.Once
	resp      sdk.PromptResponse
	err       error
}

func newSlot(watermark int64) *promptSlot {
	return &promptSlot{watermark: watermark, cancel: make(chan struct{}), done: make(chan struct{})}
}

func (p *promptSlot) settle(resp sdk.PromptResponse, err error) {
	p.once.Do(func() {
		p.resp, p.err = resp, err
		close(p.done)
	})
}

// settleReason answers the prompt from its turn's end reason.
func (p *promptSlot) settleReason(r session.EndReason) {
	var stop sdk.StopReason
	switch r.Kind {
	case session.EndCompleted:
		stop = sdk.StopReasonEndTurn
		if p.refusal {
			stop = sdk.StopReasonRefusal
		}
	case session.EndMaxTokens:
		stop = sdk.StopReasonMaxTokens
	case session.EndMaxSteps:
		stop = sdk.StopReasonMaxTurnRequests
	case session.EndAborted, session.EndDisposed, session.EndInterrupted:
		stop = sdk.StopReasonCancelled
	case session.EndRejected:
		// Every prompt was blocked by a prompt-submit hook.
		stop = sdk.StopReasonRefusal
	case session.EndError:
		if !p.cancelled {
			p.settle(sdk.PromptResponse{}, internalError("turn failed: %s", r.Message))
			return
		}
		stop = sdk.StopReasonCancelled
	default:
		stop = sdk.StopReasonEndTurn
	}
	if p.cancelled {
		stop = sdk.StopReasonCancelled
	}
	resp := sdk.PromptResponse{StopReason: stop}
	if u := p.usage; u != (llm.Usage{}) {
		resp.Usage = usageOf(u)
	}
	p.settle(resp, nil)
}

func usageOf(u llm.Usage) *sdk.Usage {
	in := u.PromptTokens()
	out := &sdk.Usage{InputTokens: in, OutputTokens: u.OutputTokens, TotalTokens: in + u.OutputTokens}
	if u.CacheReadTokens > 0 {
		n := u.CacheReadTokens
		out.CachedReadTokens = &n
	}
	if u.CacheWriteTokens > 0 {
		n := u.CacheWriteTokens
		out.CachedWriteTokens = &n
	}
	if u.ReasoningTokens > 0 {
		n := u.ReasoningTokens
		out.ThoughtTokens = &n
	}
	return out
}

func (s *Server) newRecord(id string, ws *workspace) *sess {
	_, zed := s.clientCaps()
	r := &sess{srv: s, id: id, ws: ws, scope: kernel.NewScope("acp-session-" + id)}
	r.tr = r.newTranslator(false)
	r.tr.zedTerminal = zed
	return r
}

func (r *sess) newTranslator(replay bool) *translator {
	h := r.ws.app.Host
	t := newTranslator(r.cwd(), h.Tools, func(model string) int {
		if info, ok := h.LLM.Info(model); ok {
			return info.ContextWindow
		}
		return 0
	})
	t.replay = replay
	t.prices = r.ws.app.Prices
	return t
}

func (r *sess) cwd() string {
	if r.ag != nil {
		if c := r.ag.Session().Cwd(); c != "" {
			return c
		}
	}
	return r.ws.cwd
}

// notify sends one update; failures (a client gone) are logged only.
func (r *sess) notify(u sdk.SessionUpdate) {
	if err := r.srv.peer.SessionUpdate(context.Background(), sdk.SessionNotification{SessionId: sdk.SessionId(r.id), Update: u}); err != nil {
		r.srv.log.Debug("acp: session/update not delivered", "session", r.id, "err", err)
	}
}

// onEvent translates a live event and follows the in-flight prompt's turn.
func (r *sess) onEvent(e session.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ready || e.Seq < r.from || r.disposed || r.srv.isClosed() {
		return
	}
	for _, u := range r.tr.translate(e) {
		r.notify(u)
	}
	if !r.titled && e.Type == session.TypeUserMessage {
		if m, err := session.Decode[session.Prompt](e); err == nil && m.Source.OrUser().Kind == llm.SourceUser {
			if t := title(llm.TextOf(m.Content)); t != "" {
				r.titled = true
				r.notify(sdk.SessionUpdate{SessionInfoUpdate: &sdk.SessionSessionInfoUpdate{SessionUpdate: "session_info_update", Title: &t}})
			}
		}
	}
	p := r.prompt
	if p == nil {
		return
	}
	switch e.Type {
	case session.TypeTurnStart:
		if p.turn == 0 && e.Seq >= p.watermark {
			if ts, err := session.Decode[session.TurnStart](e); err == nil && ts.Trigger.Kind == session.TriggerMessage {
				p.turn = ts.Turn
			}
		}
	case session.TypeAssistantChunk:
		if p.turn != 0 && bytes.Contains(e.Data, []byte(`"finish"`)) {
			if c, err := session.Decode[session.AssistantChunk](e); err == nil && c.Turn == p.turn && c.Chunk.Finish != nil {
				p.refusal = c.Chunk.Finish.Kind == llm.FinishRefusal
			}
		}
	case session.TypeAssistantMessage:
		if p.turn != 0 {
			if m, err := session.Decode[session.AssistantMessage](e); err == nil && m.Turn == p.turn && m.Usage != nil {
				p.usage.Add(*m.Usage)
			}
		}
	case session.TypeTurnEnd:
		if p.turn != 0 {
			if te, err := session.Decode[session.TurnEnd](e); err == nil && te.Turn == p.turn {
				p.settleReason(te.Reason)
			}
		}
	}
}

// title is a session title from its first prompt, as listings show it.
func title(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79]) + "…"
	}
	return s
}

// started marks a call as running (the tool is about to execute).
func (r *sess) started(id llm.CallID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ready || r.disposed {
		return
	}
	if u, ok := r.tr.start(id); ok {
		r.notify(u)
	}
}

// terminalAttached embeds a client terminal in a call's card.
func (r *sess) terminalAttached(id llm.CallID, terminalID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if u, ok := r.tr.clientTerminal(id, terminalID); ok && r.ready && !r.disposed {
		r.notify(u)
	}
}

func (r *sess) modelOverride() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.model
}

func (r *sess) currentModel() string {
	if m := r.modelOverride(); m != "" {
		return m
	}
	return r.ag.Options().Model
}

// attach installs the agent and turns live updates on. With replay, the
// log is first sent as whole messages (from the last compaction unless
// full; a fresh translator, so a call cut off in history leaves nothing
// pending in the live one; see replay.go).
//
// The record is registered (visible to session/close and to teardown)
// while its agent starts; attach reports false, installing nothing, when
// it was disposed meanwhile or the server is closing. The caller then
// owns h and must abandon it: a disposed record never gets an agent, so
// none outlives its session.
func (r *sess) attach(h *agent.Handle, replay, full bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.disposed || r.srv.isClosed() {
		return false
	}
	r.handle, r.ag = h, h.Agent
	if m := r.ws.modes; m != nil {
		m.Pin(r.id)
		r.mode = m.Mode(r.id)
	}
	r.tr.cwd = r.cwd()
	s := h.Agent.Session()
	n := int64(s.Len())
	// The events before from are neither replayed nor seen live: their cost
	// is summed apart.
	from, note := n, (*sdk.SessionUpdate)(nil)
	if replay {
		from, note = replayStart(context.Background(), s, n, full)
	}
	var cost pricing.Tally
	pending := false
	if from > 0 {
		cost, pending = r.accountHistory(s, from)
	}
	r.tr.cost, r.tr.costPending = cost, pending
	if replay {
		t := r.replayLocked(context.Background(), s, from, n, note, cost, pending)
		r.tr.cost, r.tr.used, r.tr.size = t.cost, t.used, t.size
	}
	for e := range s.Scan(0) {
		if e.Type == session.TypeUserMessage {
			r.titled = true
			break
		}
	}
	r.from = n
	r.ready = true
	return true
}

// replayLive replays a session that is already live in this connection.
func (r *sess) replayLive(full bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.ag.Session()
	n := int64(s.Len())
	from, note := replayStart(context.Background(), s, n, full)
	// The live translator has the whole cost, but the replay's usage update
	// comes from the events it shows: it leaves the cost out when it starts
	// past the first.
	r.replayLocked(context.Background(), s, from, n, note, pricing.Tally{}, from > 0)
}

// dispose stops the agent: a running turn ends "disposed", the loop exits
// after flushing the session, and the in-flight prompt answers cancelled.
// A running server command is stopped first, and waited for: its turn
// closes while the agent (and its session) are still there.
func (r *sess) dispose(ctx context.Context) {
	r.mu.Lock()
	r.disposed = true
	p := r.prompt
	h := r.handle
	stopCmd, cmdDone := r.stopCmd, r.cmdDone
	stopAccount, accountDone := r.stopAccount, r.accountDone
	r.mu.Unlock()
	if stopAccount != nil {
		stopAccount()
		<-accountDone
	}
	if p != nil {
		p.settle(sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil)
	}
	if stopCmd != nil {
		stopCmd()
		select {
		case <-cmdDone:
		case <-ctx.Done():
			r.srv.log.Warn("acp: command did not stop in time", "session", r.id)
		}
	}
	if h != nil {
		if err := h.Dispose(ctx); err != nil {
			r.srv.log.Warn("acp: disposing agent", "session", r.id, "err", err)
		}
	}
	r.srv.forgetChildren(r)
	r.closeScope()
}

// ---- session/new, load, resume, close, list ----

func checkWorkspace(cwd string, dirs []string) (string, []string, error) {
	if !filepath.IsAbs(cwd) {
		return "", nil, invalidParams("cwd must be an absolute path: %s", cwd)
	}
	var out []string
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			return "", nil, invalidParams("additionalDirectories must be absolute paths: %s", d)
		}
		out = append(out, filepath.Clean(d))
	}
	return filepath.Clean(cwd), out, nil
}

// register adds a session record; it fails if the id is taken.
func (s *Server) register(r *sess) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errDisposed()
	}
	if _, dup := s.sessions[r.id]; dup {
		return invalidParams("session %s is already loaded", r.id)
	}
	s.sessions[r.id] = r
	return nil
}

func (s *Server) unregister(r *sess) {
	s.mu.Lock()
	if s.sessions[r.id] == r {
		delete(s.sessions, r.id)
	}
	s.mu.Unlock()
}

func (s *Server) newSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	if s.isClosed() {
		return sdk.NewSessionResponse{}, errDisposed()
	}
	cwd, dirs, err := checkWorkspace(p.Cwd, p.AdditionalDirectories)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	ws, err := s.workspace(ctx, cwd, dirs)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	id := uuid.New()
	r := s.newRecord(id, ws)
	if err := s.register(r); err != nil {
		r.closeScope()
		return sdk.NewSessionResponse{}, err
	}
	r.addMCP(ctx, p.McpServers)
	h, err := ws.app.Host.Agents.Create(context.WithoutCancel(ctx), agent.CreateOptions{
		AgentID: agent.ID(id), SessionID: session.ID(id),
		Header: session.Header{Cwd: cwd}, Options: r.agentOptions(),
	})
	if err != nil {
		s.unregister(r)
		r.closeScope()
		return sdk.NewSessionResponse{}, internalError("starting the agent: %v", err)
	}
	if !r.attach(h, false, false) {
		s.abandon(r, h)
		return sdk.NewSessionResponse{}, errDisposed()
	}
	// Commands go out once the client knows the session.
	s.out.afterResponse([]byte(`"sessionId":"`+id+`"`), func() { r.announce() })
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(id), Modes: r.modeState(), Models: r.modelState(), ConfigOptions: r.configOptions(), Meta: r.sandboxMeta()}, nil
}

// abandon disposes an agent that attach refused: its record was closed
// (session/close) or torn down (the connection ended) while the agent was
// starting, and whoever disposed the record found no agent to stop.
func (s *Server) abandon(r *sess, h *agent.Handle) {
	s.unregister(r)
	r.mu.Lock()
	r.handle = h
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.dispose(ctx)
}

// announce sends what a client learns after a session opens.
func (r *sess) announce() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.disposed || r.srv.isClosed() {
		return
	}
	r.notify(sdk.SessionUpdate{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{
		SessionUpdate: "available_commands_update", AvailableCommands: availableCommands(r.customCommands()),
	}})
}

// resolveStored finds a stored session's workspace: the persisted cwd is
// authoritative; a client asking for another one is refused.
func (s *Server) resolveStored(ctx context.Context, id, cwd string) (string, error) {
	c, err := s.store()
	if err != nil {
		return "", err
	}
	// The header only: a bounded read, however long the log (Read would
	// parse all of it).
	h, _, err := c.Tail(ctx, session.ID(id), 1)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return "", invalidParams("unknown session: %s", id)
		}
		return "", internalError("reading session %s: %v", id, err)
	}
	if h.Cwd == "" {
		return cwd, nil
	}
	if !filepath.IsAbs(h.Cwd) {
		return "", invalidParams("session %s has no absolute persisted cwd; cannot determine its workspace", id)
	}
	if !samePath(h.Cwd, cwd) {
		return "", invalidParams("session %s cwd mismatch: persisted %s, requested %s", id, h.Cwd, cwd)
	}
	return filepath.Clean(h.Cwd), nil
}

func samePath(a, b string) bool {
	a, b = filepath.Clean(a), filepath.Clean(b)
	if a == b {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// open resumes a stored session as a live one (load replays it first).
func (s *Server) open(ctx context.Context, id, reqCwd string, reqDirs []string, mcpServers []sdk.McpServer, replay, full bool) (*sess, error) {
	if s.isClosed() {
		return nil, errDisposed()
	}
	cwd, dirs, err := checkWorkspace(reqCwd, reqDirs)
	if err != nil {
		return nil, err
	}
	if id == "" {
		return nil, invalidParams("sessionId is required")
	}
	if r := s.session(id); r != nil {
		if !r.isReady() {
			return nil, invalidParams("session %s is already being loaded", id)
		}
		// Already live here (the editor reopened it): show it again, with
		// any servers the client passes this time.
		r.addMCP(ctx, mcpServers)
		if replay {
			r.replayLive(full)
		}
		return r, nil
	}
	s.mu.Lock()
	if s.loading[id] {
		s.mu.Unlock()
		return nil, invalidParams("session %s is already being loaded", id)
	}
	s.loading[id] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.loading, id)
		s.mu.Unlock()
	}()
	cwd, err = s.resolveStored(ctx, id, cwd)
	if err != nil {
		return nil, err
	}
	ws, err := s.workspace(ctx, cwd, dirs)
	if err != nil {
		return nil, err
	}
	r := s.newRecord(id, ws)
	if err := s.register(r); err != nil {
		r.closeScope()
		return nil, err
	}
	r.addMCP(ctx, mcpServers)
	h, err := ws.app.Host.Agents.Resume(context.WithoutCancel(ctx), agent.ResumeOptions{
		AgentID: agent.ID(id), SessionID: session.ID(id), Options: r.agentOptions(),
	})
	if err != nil {
		s.unregister(r)
		r.closeScope()
		if errors.Is(err, store.ErrInUse) || errors.Is(err, store.ErrLive) {
			return nil, invalidParams("session %s is open in another dsh process", id)
		}
		if errors.Is(err, store.ErrNotFound) {
			return nil, invalidParams("unknown session: %s", id)
		}
		return nil, internalError("resuming session %s: %v", id, err)
	}
	if !r.attach(h, replay, full) {
		s.abandon(r, h)
		if s.isClosed() {
			return nil, invalidParams("connection closed during session/load")
		}
		return nil, invalidParams("session %s was closed while loading", id)
	}
	r.announce()
	return r, nil
}

func (s *Server) loadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	r, err := s.open(ctx, string(p.SessionId), p.Cwd, p.AdditionalDirectories, p.McpServers, true, replayFull(p.Meta))
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	return sdk.LoadSessionResponse{Modes: r.modeState(), Models: r.modelState(), ConfigOptions: r.configOptions(), Meta: r.sandboxMeta()}, nil
}

func (s *Server) resumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	r, err := s.open(ctx, string(p.SessionId), p.Cwd, p.AdditionalDirectories, p.McpServers, false, false)
	if err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	return sdk.ResumeSessionResponse{Modes: r.modeState(), Models: r.modelState(), ConfigOptions: r.configOptions(), Meta: r.sandboxMeta()}, nil
}

func (s *Server) closeSession(ctx context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	if s.isClosed() {
		return sdk.CloseSessionResponse{}, errDisposed()
	}
	r := s.session(string(p.SessionId))
	if r == nil {
		return sdk.CloseSessionResponse{}, invalidParams("unknown session: %s", p.SessionId)
	}
	s.unregister(r)
	r.cancel(cancelAll)
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer cancel()
	r.dispose(dctx)
	return sdk.CloseSessionResponse{}, nil
}

const listPage = 100

func (s *Server) listSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	c, err := s.store()
	if err != nil {
		return sdk.ListSessionsResponse{}, err
	}
	q := store.Query{}
	if p.Cwd != nil && *p.Cwd != "" {
		if !filepath.IsAbs(*p.Cwd) {
			return sdk.ListSessionsResponse{}, invalidParams("cwd must be an absolute path: %s", *p.Cwd)
		}
		q.Cwd = filepath.Clean(*p.Cwd)
	}
	infos, err := c.List(ctx, q)
	if err != nil {
		return sdk.ListSessionsResponse{}, internalError("listing sessions: %v", err)
	}
	// Subagent sessions (spawned or forked children) belong to their
	// parent's transcript; the editor lists top-level sessions.
	infos = slices.DeleteFunc(infos, func(in store.Info) bool { return in.Header.ParentSession != "" })
	sort.SliceStable(infos, func(i, j int) bool {
		if infos[i].LastActivity != infos[j].LastActivity {
			return infos[i].LastActivity > infos[j].LastActivity
		}
		return infos[i].Header.ID < infos[j].Header.ID
	})
	start := 0
	if p.Cursor != nil && *p.Cursor != "" {
		n, err := strconv.Atoi(*p.Cursor)
		if err != nil || n < 0 || n > len(infos) {
			return sdk.ListSessionsResponse{}, invalidParams("invalid cursor %q", *p.Cursor)
		}
		start = n
	}
	end := min(start+listPage, len(infos))
	out := sdk.ListSessionsResponse{Sessions: []sdk.SessionInfo{}}
	for _, in := range infos[start:end] {
		si := sdk.SessionInfo{SessionId: sdk.SessionId(in.Header.ID), Cwd: in.Header.Cwd}
		if in.Title != "" {
			t := in.Title
			si.Title = &t
		}
		if in.LastActivity > 0 {
			u := time.UnixMilli(in.LastActivity).UTC().Format(time.RFC3339)
			si.UpdatedAt = &u
		}
		out.Sessions = append(out.Sessions, si)
	}
	if end < len(infos) {
		next := strconv.Itoa(end)
		out.NextCursor = &next
	}
	return out, nil
}

// ---- session/prompt and session/cancel ----

func (s *Server) lookup(id sdk.SessionId) (*sess, error) {
	if s.isClosed() {
		return nil, errDisposed()
	}
	r := s.session(string(id))
	if r == nil {
		return nil, invalidParams("unknown session: %s", id)
	}
	if !r.isReady() {
		return nil, invalidParams("session %s is still being loaded", id)
	}
	return r, nil
}

// isReady reports whether the record has its agent (a record is
// registered before its agent starts).
func (r *sess) isReady() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ready
}

// begin installs the in-flight slot before anything is queued. ord is the
// prompt's place among its session's prompts on the wire: a session/cancel
// that followed it there but was handled before this (see [promptOrder])
// cancels the slot at once.
func (r *sess) begin(ord int) (*promptSlot, error) {
	r.slotMu.Lock()
	defer r.slotMu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.disposed {
		return nil, invalidParams("session %s is closed", r.id)
	}
	if r.prompt != nil {
		return nil, invalidParams("a prompt is already in flight for this session")
	}
	p := newSlot(int64(r.ag.Session().Len()))
	p.ord = ord
	r.prompt = p
	if r.srv.order.cancelled(r.id, ord) {
		p.cancelled = true
		close(p.cancel)
	}
	return p, nil
}

// cancelled reports whether the prompt has been cancelled.
func (r *sess) cancelled(p *promptSlot) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return p.cancelled
}

func (r *sess) end(p *promptSlot) {
	r.slotMu.Lock()
	defer r.slotMu.Unlock()
	r.mu.Lock()
	if r.prompt == p {
		r.prompt = nil
	}
	r.mu.Unlock()
}

// cancelAll covers every prompt (session/close).
const cancelAll = math.MaxInt

// cancel cancels the in-flight prompt (and the agent's turn) when the
// cancel covers it: a prompt numbered above mark came after the cancel on
// the wire and is left alone. With no prompt in flight, the agent is
// cancelled all the same (a turn that outlived its cancelled prompt).
//
// The slot is marked first (promptSession checks the mark after Send),
// the agent told next, and the slot's cancel channel closed last, so
// whoever wakes on it sees what the agent's Cancel did (see await).
func (r *sess) cancel(mark int) {
	r.slotMu.Lock()
	defer r.slotMu.Unlock()
	r.mu.Lock()
	p := r.prompt
	if p != nil && p.ord > mark {
		r.mu.Unlock()
		return
	}
	first := p != nil && !p.cancelled
	if first {
		p.cancelled = true
	}
	ag := r.ag
	r.mu.Unlock()
	if ag != nil {
		ag.Cancel("session/cancel")
	}
	if first {
		close(p.cancel)
	}
}

// promptSession serves session/prompt. A session/cancel that follows the
// prompt on the wire is never lost: handled before begin, it is found
// there through [promptOrder] and nothing is queued; handled between begin
// and Send, it has marked the slot (the agent had nothing to stop then),
// and the mark is checked again once the input is queued; handled later,
// it reaches the queued input or the running turn.
func (s *Server) promptSession(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	ord := s.order.start(string(p.SessionId))
	defer s.order.finish(string(p.SessionId))
	r, err := s.lookup(p.SessionId)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	blocks, err := toBlocks(p.Prompt)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	slot, err := r.begin(ord)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	defer r.end(slot)
	if r.cancelled(slot) {
		// Cancelled before anything was queued: nothing runs.
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	}
	if name, arg, ok := command(blocks); ok {
		return r.runCommand(ctx, slot, name, arg)
	}
	src := llm.UserSource
	if c := r.ws.app.Commands; c != nil && len(blocks) == 1 && blocks[0].Type == llm.BlockText {
		p, err := c.Prepare(ctx, r.ag, blocks[0].Text)
		switch {
		case errors.Is(err, commands.ErrNotCommand):
		case err != nil:
			r.say(err.Error())
			return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
		default:
			for _, w := range p.Warnings {
				r.say(w + "\n")
			}
			blocks, src = p.Content, p.Source
		}
	}
	if err := r.ag.Send(context.WithoutCancel(ctx), blocks, src); err != nil {
		return sdk.PromptResponse{}, internalError("queueing the prompt: %v", err)
	}
	if r.cancelled(slot) {
		r.ag.Cancel("session/cancel")
	}
	return r.await(slot)
}

// await waits for the prompt's turn to end. The request's own context is
// ignored on purpose: the library cancels it when the same session sends
// another prompt, and only session/cancel (or the client leaving) cancels
// a turn.
func (r *sess) await(p *promptSlot) (sdk.PromptResponse, error) {
	s := r.srv
	idleCtx, stop := context.WithCancel(context.Background())
	defer stop()
	idle := make(chan struct{})
	s.spawn(func() {
		for {
			if err := r.ag.WhenIdle(idleCtx); err != nil {
				return
			}
			// WhenIdle can wake as the previous turn goes idle while this
			// prompt is already queued; only an agent that is idle with
			// nothing queued right now has consumed (or dropped) it.
			if quiet(r.ag) {
				close(idle)
				return
			}
			select {
			case <-idleCtx.Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	select {
	case <-p.done:
	case <-idle:
		r.settleFromLog(p)
	case <-s.done:
		p.settle(sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil)
	case <-p.cancel:
		// Let the turn close so every update precedes the answer and the
		// log is balanced; answer cancelled regardless after the grace.
		t := time.NewTimer(s.o.CancelGrace)
		defer t.Stop()
		// A cancel that drops the prompt's still-queued input releases
		// WhenIdle (the loop does), so idle fires for that case too.
		select {
		case <-p.done:
		case <-idle:
			r.settleFromLog(p)
		case <-s.done:
		case <-t.C:
			s.log.Warn("acp: cancelled turn did not close in time", "session", r.id)
		}
		p.settle(sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil)
	}
	<-p.done
	return p.resp, p.err
}

// quiet reports whether the agent is idle with nothing queued at this
// instant: WhenIdle with a context that is already done returns nil only
// then.
func quiet(a agent.Agent) bool {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return a.WhenIdle(ctx) == nil
}

// settleFromLog answers a prompt whose agent went idle without the live
// listener settling it: from the log, else as cancelled (its input was
// dropped before a turn started).
func (r *sess) settleFromLog(p *promptSlot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	events := r.ag.Session().Since(p.watermark) // Decode reads back what was released
	turn := p.turn
	var end *session.EndReason
	for _, e := range events {
		switch e.Type {
		case session.TypeTurnStart:
			if turn == 0 {
				if ts, err := session.Decode[session.TurnStart](e); err == nil && ts.Trigger.Kind == session.TriggerMessage {
					turn = ts.Turn
				}
			}
		case session.TypeTurnEnd:
			if te, err := session.Decode[session.TurnEnd](e); err == nil && turn != 0 && te.Turn == turn {
				reason := te.Reason
				end = &reason
			}
		}
	}
	if end != nil {
		p.settleReason(*end)
		return
	}
	p.settle(sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil)
}

func (s *Server) cancelSession(_ context.Context, p sdk.CancelNotification) error {
	mark, ok := s.order.take(string(p.SessionId))
	if !ok {
		mark = cancelAll
	}
	if r := s.session(string(p.SessionId)); r != nil {
		r.cancel(mark)
	}
	return nil // unknown sessions: a silent no-op (it is a notification)
}

// toBlocks converts an ACP prompt into model content.
func toBlocks(in []sdk.ContentBlock) ([]llm.Block, error) {
	var out []llm.Block
	for _, b := range in {
		switch {
		case b.Text != nil:
			out = append(out, llm.Text(b.Text.Text))
		case b.ResourceLink != nil:
			l := b.ResourceLink
			out = append(out, llm.Text(fmt.Sprintf("\n[resource_link name=%q uri=%q]\n", l.Name, l.Uri)))
		case b.Resource != nil:
			res := b.Resource.Resource
			switch {
			case res.TextResourceContents != nil:
				t := res.TextResourceContents
				out = append(out, llm.Text(fmt.Sprintf("\n<resource uri=%q>\n%s\n</resource>\n", t.Uri, t.Text)))
			case res.BlobResourceContents != nil:
				bl := res.BlobResourceContents
				mime := ""
				if bl.MimeType != nil {
					mime = *bl.MimeType
				}
				if strings.HasPrefix(mime, "image/") {
					out = append(out, llm.Block{Type: llm.BlockImage, URL: "data:" + mime + ";base64," + bl.Blob, MimeType: mime})
				} else {
					out = append(out, llm.Text(fmt.Sprintf("\n[binary resource uri=%q mimeType=%q not shown]\n", bl.Uri, mime)))
				}
			}
		case b.Image != nil:
			im := b.Image
			if im.Data == "" {
				if im.Uri != nil {
					out = append(out, llm.Text(fmt.Sprintf("\n[image uri=%q]\n", *im.Uri)))
				}
				continue
			}
			out = append(out, llm.Block{Type: llm.BlockImage, URL: "data:" + im.MimeType + ";base64," + im.Data, MimeType: im.MimeType})
		case b.Audio != nil:
			return nil, invalidParams("audio prompt content is not supported (the audio prompt capability is off)")
		default:
			return nil, invalidParams("unknown prompt content block")
		}
	}
	empty := true
	for _, b := range out {
		if b.Type != llm.BlockText || strings.TrimSpace(b.Text) != "" {
			empty = false
			break
		}
	}
	if empty {
		return nil, invalidParams("empty prompt")
	}
	return out, nil
}
