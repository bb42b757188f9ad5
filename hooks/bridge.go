package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/compact"
	"github.com/dshq/dsh/internal/claudemsg"
	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/subagent"
	"github.com/dshq/dsh/tool"
)

// Durable event types. They carry no wall-clock fields, so a log replays
// deterministically; durations go to the Ran signal and the log file.
const (
	TypeInvoked = "hook/invoked"
	TypeResult  = "hook/result"
)

// Invoked payload.
type Invoked struct {
	Turn      int    `json:"turn"`
	Point     string `json:"point"`
	Dialect   string `json:"dialect"`
	HandlerID string `json:"handlerId"`
	Command   string `json:"command"`
	Source    string `json:"source"`
}

// Result payload.
type Result struct {
	Turn          int    `json:"turn"`
	Point         string `json:"point"`
	HandlerID     string `json:"handlerId"`
	Decision      string `json:"decision"`
	Reason        string `json:"reason,omitempty"`
	ExitCode      *int   `json:"exitCode,omitempty"`
	StderrSummary string `json:"stderrSummary,omitempty"`
	SystemMessage string `json:"systemMessage,omitempty"`
	Problem       string `json:"problem,omitempty"`
}

// Ran notifies one hook run with its duration (live only).
type Ran struct {
	Dialect  string
	Event    string
	Hook     Hook
	Output   Output
	Duration time.Duration
	// Async reports a background hook (its output decided nothing).
	Async bool
}

// SessionEnd reasons, as Claude Code sends them.
const (
	EndClear           = "clear"
	EndResume          = "resume"
	EndLogout          = "logout"
	EndPromptInputExit = "prompt_input_exit"
	EndOther           = "other"
)

// DefaultExitGrace is how long SessionEnd hooks still running when dsh is
// asked to stop (its first signal) may go on.
const DefaultExitGrace = 5 * time.Second

// Options configure a bridge.
type Options struct {
	Dialect string
	// Config returns the hooks for a working directory (user hooks plus
	// that project's); the caller caches.
	Config func(cwd string) *Config
	Runner Runner
	// Trusted reports whether project hooks of cwd may run.
	Trusted func(cwd string) bool
	// Mode returns the permission mode of a session for payloads
	// ("default" if nil).
	Mode func(id session.ID) string
	// TranscriptPath returns the Claude-format transcript of a session for
	// payloads (transcript_path; null when nil).
	TranscriptPath func(id session.ID) string
	// Model is the model of payloads and prompt hooks when the agent's
	// options name none.
	Model string
	// Env is added to every hook's environment (the settings' "env").
	Env map[string]string
	// MaxStopContinuations caps how many times in a row Stop (and
	// SubagentStop) hooks may keep one turn going (default 8, as Claude
	// Code): the loop guard beyond stop_hook_active.
	MaxStopContinuations int
	// Warn receives what the user must see — a hook that timed out,
	// failed to decide or answered with invalid JSON — once per distinct
	// message (the cli prints it on stderr). Nil: the log only.
	Warn   func(msg string)
	Logger *slog.Logger
	// Stopping closes when dsh is asked to stop (its first signal):
	// SessionEnd hooks still running then get at most ExitGrace more.
	// Aborting closes on a second signal: every running hook is stopped at
	// once. Either may be nil.
	Stopping, Aborting <-chan struct{}
	ExitGrace          time.Duration
}

// Bridge runs one dialect's hooks on dsh's points.
type Bridge struct {
	o        Options
	agents   *agent.Registry
	sessions *session.Live
	mu       sync.Mutex
	counter  int
	pending  map[llm.CallID][]string // PreToolUse context for the result
	stops    map[agent.ID][2]int     // turn, forced continuations
	subs     map[session.ID]subInfo  // children by session
	ends     map[agent.ID]string     // SessionEnd reasons set by front-ends
	warned   map[string]bool

	// async hooks run under bg; closing the bridge cancels it and waits.
	bg       context.Context
	cancelBg context.CancelFunc
	wg       sync.WaitGroup

	// RanPoint notifies every run (with durations).
	RanPoint *kernel.Signal[Ran]
}

// subInfo is what SubagentStart recorded of a child.
type subInfo struct {
	typ     string
	stopped bool          // its SubagentStop already fired from its own turn
	known   chan struct{} // closed once typ is recorded
}

// New returns a bridge.
func New(o Options, agents *agent.Registry) *Bridge {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxStopContinuations <= 0 {
		o.MaxStopContinuations = 8
	}
	if o.Trusted == nil {
		o.Trusted = func(string) bool { return false }
	}
	if o.ExitGrace <= 0 {
		o.ExitGrace = DefaultExitGrace
	}
	bg, cancel := context.WithCancel(context.Background())
	return &Bridge{o: o, agents: agents, pending: map[llm.CallID][]string{}, stops: map[agent.ID][2]int{},
		subs: map[session.ID]subInfo{}, ends: map[agent.ID]string{}, warned: map[string]bool{},
		bg: bg, cancelBg: cancel, RanPoint: kernel.NewSignal[Ran]("hooks/ran")}
}

// Install registers the bridge on the hub, the tool registry, the live
// sessions and (optionally) the compactor, for the life of scope. Closing
// scope stops async hooks still running after a short grace, as `claude
// -p` stops them at exit.
func (b *Bridge) Install(scope *kernel.Scope, reg *tool.Registry, sessions *session.Live, comp *compact.Compactor) error {
	b.sessions = sessions
	hub := b.agents.Hub
	name := kernel.Named("hooks-" + b.o.Dialect)
	adds := []func(){
		hub.SessionStart.Listen(b.sessionStart, name),
		hub.PromptSubmit.Use(b.promptSubmit, name, kernel.Prepend()),
		reg.PreExecute.Use(b.preTool, name, kernel.Prepend()),
		reg.PostExecute.Use(b.postTool, name, kernel.Prepend()),
		hub.Continuation.Use(b.stop, name),
		hub.Disposed.Listen(b.sessionEnd, name),
		sessions.Appended.Listen(b.notification, name),
	}
	if comp != nil {
		adds = append(adds, comp.BeforeCompact.Use(b.preCompact, name), comp.Done.Listen(b.postCompact, name))
	}
	for _, d := range adds {
		if err := scope.Add(d); err != nil {
			return err
		}
	}
	return scope.Add(b.stopAsync)
}

// AsyncGrace is how long async hooks still running when the bridge closes
// (dsh exits) may go on before they are stopped.
const AsyncGrace = time.Second

// stopAsync gives background hooks AsyncGrace to finish, then stops them
// (at once on a second signal) and waits for them.
func (b *Bridge) stopAsync() {
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	t := time.NewTimer(AsyncGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-b.o.Aborting:
	}
	b.cancelBg()
	<-done
}

// Check reads the hooks of cwd now and reports the problems of its files
// (through Warn), so they show at start rather than when an event fires.
func (b *Bridge) Check(cwd string) {
	if cfg := b.o.Config(cwd); cfg != nil {
		for _, w := range cfg.Warnings {
			b.warnOnce(w)
		}
	}
}

// SetEndReason records why an agent's session ends, for its SessionEnd
// hooks (clear, resume, logout, prompt_input_exit; "other" when no front
// end says). Front-ends call it before disposing the agent.
func (b *Bridge) SetEndReason(id agent.ID, reason string) {
	b.mu.Lock()
	b.ends[id] = reason
	b.mu.Unlock()
}

// call is one event dispatch.
type call struct {
	cwd     string     // overrides the agent's cwd when a is nil
	sid     session.ID // the session when a is nil (its permission mode)
	event   string
	subject []string    // what the matcher sees: a name and its aliases
	a       agent.Agent // may be nil
	fields  map[string]any
	ctx     context.Context
}

// sessionID is the session the call's hooks run for.
func (c call) sessionID() string {
	if c.a != nil {
		return string(c.a.Session().ID())
	}
	return string(c.sid)
}

func (b *Bridge) cwdOf(c call) string {
	if c.a != nil {
		return c.a.Session().Cwd()
	}
	return c.cwd
}

// events are the hook events each dialect has; Codex has neither
// SessionEnd, Notification nor PostToolUseFailure.
var codexEvents = map[string]bool{
	"SessionStart": true, "PreToolUse": true, "PermissionRequest": true, "PostToolUse": true, "UserPromptSubmit": true,
	"Stop": true, "PreCompact": true, "PostCompact": true, "SubagentStart": true, "SubagentStop": true,
}

func (b *Bridge) supports(event string) bool {
	return b.o.Dialect != Codex || codexEvents[event]
}

// dispatch runs the hooks matching an event and records them. Async hooks
// are started in the background and left out of the outputs.
func (b *Bridge) dispatch(c call) (Merged, []Output, bool) {
	all, payload, runCwd, env := b.prepare(c, true)
	if len(all) == 0 {
		return Merged{}, nil, false
	}
	var hooks, async []Hook
	for _, h := range all {
		if h.Async {
			async = append(async, h)
		} else {
			hooks = append(hooks, h)
		}
	}
	if len(async) > 0 {
		b.runAsync(c, async, payload, runCwd, env)
	}
	if len(hooks) == 0 {
		return Merged{}, nil, false
	}
	turn, durable := 0, false
	if c.a != nil {
		if ts := c.a.Session().Turns(); ts.Open {
			turn, durable = ts.Last, true
		}
	}
	ids := make([]string, len(hooks))
	for i, h := range hooks {
		ids[i] = b.handlerID(c.event)
		if durable {
			b.append(c, TypeInvoked, Invoked{Turn: turn, Point: c.event, Dialect: b.o.Dialect, HandlerID: ids[i], Command: h.Label(), Source: h.Source})
		}
	}
	ctx, cancel := b.runContext(c)
	outs := b.o.Runner.Run(withSession(ctx, c.sessionID()), hooks, payload, c.event, runCwd, b.model(c), env)
	cancel()
	var notices []string
	for i, o := range outs {
		b.report(c.event, hooks[i], o, false)
		if o.TimedOut {
			notices = append(notices, timeoutMessage(hooks[i], c.event)+"; dsh went on without its answer")
		}
		if durable {
			b.append(c, TypeResult, Result{Turn: turn, Point: c.event, HandlerID: ids[i], Decision: decisionLabel(o),
				Reason: o.Reason, ExitCode: o.ExitCode, StderrSummary: summary(o), SystemMessage: o.SystemMessage, Problem: o.Invalid})
		}
	}
	m := Merge(outs)
	m.Notices = notices
	for _, cf := range m.Conflicts {
		b.warnOnce(fmt.Sprintf("hooks: %s: %s", c.event, cf))
	}
	return m, outs, true
}

func (b *Bridge) handlerID(event string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.counter++
	return fmt.Sprintf("%s:%s:%d", b.o.Dialect, event, b.counter)
}

// prepare finds the hooks an event runs and builds what they get: the
// payload, the directory they run in and their environment.
func (b *Bridge) prepare(c call, warn bool) (hooks []Hook, payload []byte, runCwd string, env map[string]string) {
	if !b.supports(c.event) {
		return nil, nil, "", nil
	}
	cwd := b.cwdOf(c)
	cfg := b.o.Config(cwd)
	if cfg == nil {
		return nil, nil, "", nil
	}
	if warn {
		for _, w := range cfg.Warnings {
			b.warnOnce(w)
		}
	}
	hooks = cfg.Matching(c.event, b.o.Trusted(cwd), c.subject...)
	if len(hooks) == 0 {
		return nil, nil, "", nil
	}
	env = make(map[string]string, len(b.o.Env)+2)
	for k, v := range b.o.Env {
		env[k] = v
	}
	env["DSH_PROJECT_DIR"] = cwd
	if b.o.Dialect != Codex {
		env["CLAUDE_PROJECT_DIR"] = cwd
	}
	runCwd = cwd
	if runCwd == "" {
		runCwd = "/"
	}
	return hooks, b.payload(c, cwd), runCwd, env
}

// runContext bounds a dispatch: a second signal (Aborting) stops every
// hook at once; SessionEnd hooks also end ExitGrace after the first
// (Stopping), whatever their own timeouts.
func (b *Bridge) runContext(c call) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(c.ctx)
	stop := make(chan struct{})
	go func() {
		var grace <-chan time.Time
		stopping := b.o.Stopping
		if c.event != "SessionEnd" {
			stopping = nil
		}
		for {
			select {
			case <-b.o.Aborting:
				cancel(fmt.Errorf("dsh was asked to stop again"))
				return
			case <-stopping:
				stopping = nil
				t := time.NewTimer(b.o.ExitGrace)
				defer t.Stop()
				grace = t.C
			case <-grace:
				cancel(fmt.Errorf("dsh is exiting (%s after the signal)", seconds(b.o.ExitGrace)))
				return
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return ctx, func() { close(stop); cancel(nil) }
}

// report logs a run and tells the user what went wrong with it.
func (b *Bridge) report(event string, h Hook, o Output, async bool) {
	_ = b.RanPoint.EmitAll(context.Background(), Ran{Dialect: b.o.Dialect, Event: event, Hook: h, Output: o, Duration: o.Duration, Async: async})
	b.o.Logger.Debug("hook ran", "dialect", b.o.Dialect, "event", event, "hook", h.Label(), "async", async,
		"duration", o.Duration, "exit", o.ExitCode, "stdout", clip(o.Stdout, 2000), "stderr", clip(o.Stderr, 2000))
	switch {
	case o.TimedOut:
		b.warnOnce("hooks: " + timeoutMessage(h, event))
	case o.Invalid != "":
		b.warnOnce(fmt.Sprintf("hooks: %s hook %q: %s", event, h.Label(), o.Invalid))
	}
	if o.SystemMessage != "" {
		b.o.Logger.Info("hook system message", "event", event, "message", o.SystemMessage)
	}
}

// runAsync starts background hooks: they get the same payload, decide
// nothing, and their output is logged; a JSON answer's additionalContext
// and systemMessage reach the model as context once they finish, as in
// Claude Code.
func (b *Bridge) runAsync(c call, hooks []Hook, payload []byte, cwd string, env map[string]string) {
	model := b.model(c)
	a := c.a
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		outs := b.o.Runner.Run(withSession(b.bg, c.sessionID()), hooks, payload, c.event, cwd, model, env)
		var notes []string
		for i, o := range outs {
			b.report(c.event, hooks[i], o, true)
			if o.AdditionalContext != "" {
				notes = append(notes, o.AdditionalContext)
			}
			if o.SystemMessage != "" {
				notes = append(notes, o.SystemMessage)
			}
		}
		if len(notes) == 0 || a == nil || b.bg.Err() != nil {
			return
		}
		text := "Background " + c.event + " hook reported:\n" + strings.Join(notes, "\n")
		if err := a.Inject(b.bg, []llm.Block{llm.Text(text)}, b.source()); err != nil {
			b.o.Logger.Debug("hooks: an async hook's context could not be delivered", "err", err)
		}
	}()
}

func (b *Bridge) model(c call) string {
	if c.a != nil {
		if m := c.a.Options().Model; m != "" {
			return m
		}
	}
	return b.o.Model
}

func (b *Bridge) warnOnce(msg string) {
	b.mu.Lock()
	seen := b.warned[msg]
	b.warned[msg] = true
	b.mu.Unlock()
	if seen {
		return
	}
	b.o.Logger.Warn(msg)
	if b.o.Warn != nil {
		b.o.Warn(msg)
	}
}

func (b *Bridge) append(c call, typ string, data any) {
	if _, err := c.a.Session().Writer(ownership.Hooks).Append(context.WithoutCancel(c.ctx), typ, data); err != nil {
		b.o.Logger.Warn("hooks: recording a hook event failed", "type", typ, "err", err)
	}
}

func decisionLabel(o Output) string {
	switch {
	case o.Decision != "":
		return o.Decision
	case o.Continue != nil && !*o.Continue:
		return "stop"
	case o.TimedOut:
		return "timeout"
	case o.ExitCode == nil || *o.ExitCode != 0:
		return "error"
	}
	return "pass"
}

func summary(o Output) string { return clip(o.Stderr, 500) }

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// modeEvents are the Claude Code events whose payload carries
// permission_mode (its reference shows it on these only).
var modeEvents = map[string]bool{
	"UserPromptSubmit": true, "PreToolUse": true, "PermissionRequest": true, "PostToolUse": true,
	"PostToolUseFailure": true, "Stop": true, "SubagentStop": true,
}

// lineage returns, for an agent inside a subagent, the root session (whose
// id and transcript Claude Code puts in every payload) and the child's id
// and agent type; for a top-level agent, its own session and no child.
func (b *Bridge) lineage(s *session.Session) (root session.ID, child session.ID, typ string) {
	root = s.ID()
	parent := s.Header().ParentSession
	if parent == "" {
		return root, "", ""
	}
	child, typ = s.ID(), b.subType(s)
	root = parent
	for range 16 {
		p, ok := b.sessions.Get(root)
		if !ok || p.Header().ParentSession == "" {
			break
		}
		root = p.Header().ParentSession
	}
	return root, child, typ
}

// subType is a child's agent type, as its start announced it. A child can
// finish its turn before the subagent service announces its start (which
// happens right after the child is started), so this waits for the
// announcement, briefly: a child nobody announces (none is expected) is
// "general-purpose".
func (b *Bridge) subType(child *session.Session) string {
	b.mu.Lock()
	info := b.subs[child.ID()]
	if info.typ != "" {
		b.mu.Unlock()
		return info.typ
	}
	if info.known == nil {
		info.known = make(chan struct{})
		b.subs[child.ID()] = info
	}
	known := info.known
	b.mu.Unlock()
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-known:
	case <-t.C:
	case <-b.bg.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return firstNonEmpty(b.subs[child.ID()].typ, "general-purpose")
}

func (b *Bridge) transcript(id session.ID) any {
	if b.o.TranscriptPath == nil || id == "" {
		return nil
	}
	return b.o.TranscriptPath(id)
}

// payload is the event's JSON input, field for field as the dialect
// documents it.
func (b *Bridge) payload(c call, cwd string) []byte {
	sid := c.sid
	var child session.ID
	var childType string
	turn := 0
	if c.a != nil {
		sid, child, childType = b.lineage(c.a.Session())
		turn = c.a.Session().Turns().Last
	}
	mode := "default"
	if b.o.Mode != nil {
		id := c.sid
		if c.a != nil {
			id = c.a.Session().ID()
		}
		mode = b.o.Mode(id)
	}
	m := map[string]any{"session_id": string(sid), "transcript_path": b.transcript(sid), "cwd": cwd, "hook_event_name": c.event}
	if b.o.Dialect == Codex {
		m["model"] = b.model(c)
		if c.event != "PreCompact" && c.event != "PostCompact" {
			m["permission_mode"] = mode
		}
		if c.event != "SessionStart" {
			m["turn_id"] = fmt.Sprint(turn)
		}
	} else {
		if modeEvents[c.event] {
			m["permission_mode"] = mode
		}
		if child != "" && c.event != "SubagentStart" && c.event != "SubagentStop" {
			m["agent_id"], m["agent_type"] = string(child), childType
		}
	}
	for k, v := range c.fields {
		m[k] = v
	}
	out, _ := json.Marshal(m)
	if b.o.Dialect == Claude {
		out = append(out, '\n')
	}
	return out
}

func (b *Bridge) source() llm.Source { return llm.PluginSource("hooks-" + b.o.Dialect) }

// contexts collects additionalContext, plain stdout of exit-0 hooks where
// the dialect treats it as context, and notices of hooks that timed out.
func contexts(m Merged, outs []Output, plain bool) []string {
	out := append([]string(nil), m.Contexts...)
	if plain {
		for _, o := range outs {
			if o.ExitCode != nil && *o.ExitCode == 0 && o.Stdout != "" && !strings.HasPrefix(o.Stdout, "{") {
				out = append(out, o.Stdout)
			}
		}
	}
	return append(out, m.Notices...)
}

func textBlocks(ss []string) []llm.Block {
	var out []llm.Block
	for _, s := range ss {
		out = append(out, llm.Text(s))
	}
	return out
}

func (b *Bridge) sessionStart(ctx context.Context, s agent.SessionStart) error {
	if s.Agent.Session().Header().ParentSession != "" {
		return nil // a child: SubagentStart, not a second SessionStart
	}
	fields := map[string]any{"source": string(s.Source)}
	if b.o.Dialect == Claude {
		if m := b.model(call{a: s.Agent}); m != "" {
			fields["model"] = m
		}
	}
	m, outs, ok := b.dispatch(call{event: "SessionStart", subject: []string{string(s.Source)}, a: s.Agent, ctx: ctx, fields: fields})
	if !ok {
		return nil
	}
	if cs := contexts(m, outs, true); len(cs) > 0 {
		return s.Agent.Inject(ctx, textBlocks(cs), b.source())
	}
	return nil
}

func (b *Bridge) promptSubmit(ctx context.Context, in agent.PromptInput, next kernel.Next[agent.PromptInput, agent.PromptDecision]) (agent.PromptDecision, error) {
	if in.Agent.Session().Header().ParentSession != "" {
		return next(ctx, in) // a child's task is not a prompt the user submitted
	}
	m, outs, ok := b.dispatch(call{event: "UserPromptSubmit", a: in.Agent, ctx: ctx,
		fields: map[string]any{"prompt": llm.TextOf(in.Content)}})
	if !ok {
		return next(ctx, in)
	}
	if m.Decision == "deny" || m.Stop {
		reason := firstNonEmpty(m.Reason, m.StopReason, "blocked by UserPromptSubmit hook")
		return agent.PromptDecision{Block: true, Reason: reason}, nil
	}
	d, err := next(ctx, in)
	if err != nil || d.Block {
		return d, err
	}
	if cs := contexts(m, outs, true); len(cs) > 0 {
		blocks := textBlocks(cs)
		if d.Context != nil {
			blocks = append(blocks, d.Context.Content...)
		}
		d.Context = &tool.Context{Content: blocks, Source: b.source()}
	}
	return d, nil
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func (b *Bridge) agentOf(h tool.Host) agent.Agent {
	if h == nil {
		return nil
	}
	a, _ := b.agents.Get(agent.ID(h.AgentID()))
	return a
}

// participates reports whether a tool's calls reach the dialect's tool
// hooks: every tool for Claude Code; for Codex only those it has hooks
// for (the shell, apply_patch, MCP tools).
func (b *Bridge) participates(name string) bool {
	if b.o.Dialect != Codex {
		return true
	}
	switch name {
	case "bash", "write", "edit":
		return true
	}
	return strings.HasPrefix(name, "mcp__")
}

// subjects are the names a tool matcher may use for a tool: the dialect's
// name and its aliases (Claude Code's Task for Agent; Codex's Write and
// Edit for apply_patch).
func (b *Bridge) subjects(name string) []string {
	n := ToolName(b.o.Dialect, name)
	if b.o.Dialect == Codex {
		if n == "apply_patch" {
			return []string{n, "Write", "Edit"}
		}
		return []string{n}
	}
	return append([]string{n}, claudemsg.Aliases(n)...)
}

func (b *Bridge) cwdOfCall(c tool.Call) string {
	if c.Host != nil {
		return c.Host.Cwd()
	}
	return ""
}

func (b *Bridge) toolFields(c tool.Call, withID bool) map[string]any {
	m := map[string]any{
		"tool_name":  ToolName(b.o.Dialect, c.Name),
		"tool_input": ToolInputAt(b.o.Dialect, c.Name, c.Args, b.cwdOfCall(c)),
	}
	if withID {
		m["tool_use_id"] = string(c.ID)
	}
	return m
}

func (b *Bridge) preTool(ctx context.Context, c tool.Call, next kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
	if !b.participates(c.Name) {
		return next(ctx, c)
	}
	a := b.agentOf(c.Host)
	by := "hook:" + b.o.Dialect + ":PreToolUse"
	m, _, ok := b.dispatch(call{event: "PreToolUse", subject: b.subjects(c.Name), a: a, ctx: ctx, fields: b.toolFields(c, true)})
	if notes := append(append([]string(nil), m.Contexts...), m.Notices...); ok && len(notes) > 0 {
		b.mu.Lock()
		b.pending[c.ID] = append(b.pending[c.ID], notes...)
		b.mu.Unlock()
	}
	if ok && m.Stop {
		reason := firstNonEmpty(m.StopReason, m.Reason, "stopped by PreToolUse hook")
		if a != nil {
			a.Cancel(reason)
		}
		return tool.Decision{Kind: tool.Deny, Reason: reason, By: by}, nil
	}
	var rewrite json.RawMessage
	if ok && m.UpdatedInput != nil {
		rewrite = FromToolInput(b.o.Dialect, c.Name, m.UpdatedInput)
		c.Args, c.Raw = rewrite, string(rewrite)
	}
	var d tool.Decision
	switch m.Decision {
	case "deny":
		return tool.Decision{Kind: tool.Deny, Reason: firstNonEmpty(m.Reason, "blocked by PreToolUse hook"), By: by}, nil
	case "ask":
		d = tool.Decision{Kind: tool.Ask, Reason: m.Reason, By: by}
	case "allow":
		d = tool.Decision{Kind: tool.Allow, Reason: m.Reason, By: by, Approved: true}
	default:
		var err error
		if d, err = next(ctx, c); err != nil {
			return d, err
		}
	}
	if rewrite != nil && d.Kind != tool.Deny && d.Args == nil {
		d.Args, d.By = rewrite, by
	}
	return d, nil
}

// claudeCall is the call as claudemsg describes it.
func claudeCall(in tool.PostInput) (claudemsg.Call, claudemsg.Outcome) {
	cwd := ""
	if in.Call.Host != nil {
		cwd = in.Call.Host.Cwd()
	}
	return claudemsg.Call{Name: in.Call.Name, Args: in.Call.Args, Cwd: cwd},
		claudemsg.Outcome{Content: in.Result.Content, Meta: in.Result.Meta, IsError: in.Result.IsError, Duration: in.Duration}
}

func (b *Bridge) postTool(ctx context.Context, in tool.PostInput, next kernel.Next[tool.PostInput, tool.PostDecision]) (tool.PostDecision, error) {
	b.mu.Lock()
	pre := b.pending[in.Call.ID]
	delete(b.pending, in.Call.ID)
	b.mu.Unlock()
	var (
		m     Merged
		ok    bool
		event = "PostToolUse"
		a     = b.agentOf(in.Call.Host)
	)
	if ev, fields, fire := b.postFields(in); fire {
		event = ev
		m, _, ok = b.dispatch(call{event: event, subject: b.subjects(in.Call.Name), a: a, ctx: ctx, fields: fields})
	}
	d, err := next(ctx, in)
	if err != nil {
		return d, err
	}
	extra := append([]string(nil), pre...)
	if ok {
		if m.Decision == "deny" {
			// The output stays; the reason is feedback the model reads.
			extra = append(extra, event+" hook feedback: "+firstNonEmpty(m.Reason, "blocked by "+event+" hook"))
		}
		extra = append(extra, m.Contexts...)
		extra = append(extra, m.Notices...)
		if m.UpdatedOutput != nil && d.Content == nil && !d.Block {
			if content := replacementContent(m.UpdatedOutput); content != nil {
				d.Content = content
			}
		}
		if m.Stop && a != nil {
			a.Cancel(firstNonEmpty(m.StopReason, "stopped by "+event+" hook"))
		}
	}
	if len(extra) > 0 {
		blocks := textBlocks(extra)
		if d.Context != nil {
			blocks = append(blocks, d.Context.Content...)
		}
		d.Context = &tool.Context{Content: blocks, Source: b.source()}
	}
	return d, nil
}

// postFields decides which event a finished call fires and its fields: a
// call that never reached its tool (denied, not approved, invalid
// arguments) fires neither PostToolUse nor PostToolUseFailure; Codex has
// no failure event and hooks only successful calls.
func (b *Bridge) postFields(in tool.PostInput) (string, map[string]any, bool) {
	if !in.Ran || !b.participates(in.Call.Name) {
		return "", nil, false
	}
	fields := b.toolFields(in.Call, true)
	cc, out := claudeCall(in)
	if b.o.Dialect == Codex {
		if in.Result.IsError {
			return "", nil, false
		}
		fields["tool_response"] = codexResponse(cc, out)
		return "PostToolUse", fields, true
	}
	fields["duration_ms"] = in.Duration.Milliseconds()
	if failed, msg := claudemsg.Failure(cc, out); failed {
		fields["error"], fields["is_interrupt"] = msg, false
		return "PostToolUseFailure", fields, true
	}
	fields["tool_response"] = claudemsg.ToolResponse(cc, out)
	return "PostToolUse", fields, true
}

// replacementContent turns a hook's updatedToolOutput into the result the
// model reads: a string, an object with Bash's stdout and stderr, or
// content blocks.
func replacementContent(raw json.RawMessage) []llm.Block {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []llm.Block{llm.Text(s)}
	}
	var bashOut struct {
		Stdout *string `json:"stdout"`
		Stderr string  `json:"stderr"`
	}
	if json.Unmarshal(raw, &bashOut) == nil && bashOut.Stdout != nil {
		text := *bashOut.Stdout
		if bashOut.Stderr != "" {
			text += "\n[stderr]\n" + bashOut.Stderr
		}
		return []llm.Block{llm.Text(text)}
	}
	var blocks []claudemsg.Block
	if json.Unmarshal(raw, &blocks) == nil && len(blocks) > 0 {
		if out := claudemsg.ToLLM(blocks); len(out) > 0 {
			return out
		}
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		return []llm.Block{llm.Text(string(raw))}
	}
	return nil
}

// codexResponse is Codex's tool_response: the tool's output text, or an
// MCP tool's content blocks.
func codexResponse(c claudemsg.Call, o claudemsg.Outcome) any {
	if strings.HasPrefix(c.Name, "mcp__") {
		return claudemsg.ToolResponse(c, o)
	}
	return llm.TextOf(o.Content)
}

func (b *Bridge) stop(ctx context.Context, in agent.ContinuationInput, next kernel.Next[agent.ContinuationInput, agent.ContinuationDecision]) (agent.ContinuationDecision, error) {
	d, err := next(ctx, in)
	if err != nil || d.Continue {
		return d, err
	}
	// The agent is about to stop: Stop hooks (SubagentStop for a child)
	// may keep it going.
	b.mu.Lock()
	st := b.stops[in.Agent.ID()]
	if st[0] != in.Turn {
		st = [2]int{in.Turn, 0}
	}
	b.mu.Unlock()
	s := in.Agent.Session()
	last := lastAssistant(s)
	fields := map[string]any{"stop_hook_active": st[1] > 0, "last_assistant_message": last}
	event, subject := "Stop", []string(nil)
	if s.Header().ParentSession != "" {
		event = "SubagentStop"
		typ := b.subType(s)
		subject = []string{typ}
		fields["agent_id"], fields["agent_type"] = string(s.ID()), typ
		fields["agent_transcript_path"] = b.transcript(s.ID())
		b.mu.Lock()
		info := b.subs[s.ID()]
		info.stopped = true
		b.subs[s.ID()] = info
		b.mu.Unlock()
	}
	if b.o.Dialect == Claude {
		fields["background_tasks"], fields["session_crons"] = []any{}, []any{}
	}
	m, _, ok := b.dispatch(call{event: event, subject: subject, a: in.Agent, ctx: ctx, fields: fields})
	if !ok || m.Stop {
		return d, nil
	}
	feedback := ""
	switch {
	case m.Decision == "deny":
		feedback = firstNonEmpty(m.Reason, "continue: a "+event+" hook asked for more work")
	case len(m.Contexts) > 0:
		// Non-error feedback (hookSpecificOutput.additionalContext) also
		// keeps the conversation going, as in Claude Code.
		feedback = event + " hook feedback: " + strings.Join(m.Contexts, "\n")
	default:
		return d, nil
	}
	if st[1] >= b.o.MaxStopContinuations {
		b.warnOnce(fmt.Sprintf("hooks: %s hooks kept one turn going %d times in a row; letting the agent stop", event, st[1]))
		return d, nil
	}
	b.mu.Lock()
	b.stops[in.Agent.ID()] = [2]int{in.Turn, st[1] + 1}
	b.mu.Unlock()
	return agent.ContinuationDecision{Continue: true, Reason: &tool.Context{
		Content: []llm.Block{llm.Text(feedback)}, Source: b.source()}}, nil
}

func lastAssistant(s *session.Session) any {
	e, ok := s.Last(session.TypeAssistantMessage)
	if !ok {
		return nil
	}
	am, err := session.Decode[session.AssistantMessage](e)
	if err != nil {
		return nil
	}
	return llm.TextOf(am.Content)
}

func (b *Bridge) preCompact(ctx context.Context, in compact.Before) error {
	trigger := "auto"
	if in.Reason == "manual" {
		trigger = "manual"
	}
	fields := map[string]any{"trigger": trigger}
	if b.o.Dialect == Claude {
		fields["custom_instructions"] = in.Focus
	}
	m, _, ok := b.dispatch(call{event: "PreCompact", subject: []string{trigger}, a: in.Agent, ctx: ctx, fields: fields})
	if ok && m.Decision == "deny" {
		return fmt.Errorf("PreCompact hook blocked compaction: %s", firstNonEmpty(m.Reason, "no reason given"))
	}
	return nil
}

// postCompact runs PostCompact hooks after a compaction that wrote a
// summary, with the trigger and the summary text.
func (b *Bridge) postCompact(ctx context.Context, out compact.Outcome) error {
	if out.Err != nil || !out.Summarized || out.Agent == nil {
		return nil
	}
	s := out.Agent.Session()
	trigger, text := "auto", ""
	if e, ok := s.Last(compact.TypeStart); ok {
		if st, err := session.Decode[compact.Start](e); err == nil && st.Reason == "manual" {
			trigger = "manual"
		}
	}
	if e, ok := s.Last(compact.TypeSummary); ok {
		if sm, err := session.Decode[compact.Summary](e); err == nil {
			text = llm.TextOf(sm.Summary)
		}
	}
	fields := map[string]any{"trigger": trigger}
	if b.o.Dialect == Claude {
		fields["compact_summary"] = text
	}
	b.dispatch(call{event: "PostCompact", subject: []string{trigger}, a: out.Agent, ctx: ctx, fields: fields})
	return nil
}

func (b *Bridge) sessionEnd(ctx context.Context, a agent.Agent) error {
	b.mu.Lock()
	reason := b.ends[a.ID()]
	delete(b.ends, a.ID())
	delete(b.stops, a.ID())
	b.mu.Unlock()
	if a.Session().Header().ParentSession != "" {
		return nil // a child ends with SubagentStop
	}
	if reason == "" {
		reason = EndOther
	}
	// The session is over: its end must run even though the caller's
	// context may be done, bounded by the hooks' timeouts and dsh's exit.
	b.dispatch(call{event: "SessionEnd", subject: []string{reason}, a: a, ctx: context.WithoutCancel(ctx), fields: map[string]any{"reason": reason}})
	return nil
}

// notification tells Notification hooks that the agent waits for approval.
func (b *Bridge) notification(ctx context.Context, ap session.Appended) error {
	if ap.Event.Type != session.TypeApprovalRequest || !b.supports("Notification") {
		return nil
	}
	var a agent.Agent
	for _, x := range b.agents.List() {
		if x.Session() == ap.Session {
			a = x
		}
	}
	if a == nil {
		return nil
	}
	req, err := session.Decode[session.ApprovalRequest](ap.Event)
	if err != nil {
		return nil
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.dispatch(call{cwd: a.Session().Cwd(), sid: a.Session().ID(), event: "Notification", subject: []string{"permission_prompt"}, a: nil, ctx: context.WithoutCancel(ctx), fields: map[string]any{
			"message": fmt.Sprintf("dsh needs your permission to use %s", ToolName(b.o.Dialect, req.Name)), "title": "Permission needed",
			"notification_type": "permission_prompt"}})
	}()
	return nil
}

// Approver wraps the agent's approver: PermissionRequest hooks see every
// question first and may answer it (allow or deny); otherwise inner (which
// may be nil: fail closed) is asked.
func (b *Bridge) Approver(inner tool.Approver) tool.Approver {
	return tool.ApproverFunc(func(ctx context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
		if b.participates(req.Call.Name) {
			a := b.agentOf(req.Call.Host)
			fields := b.toolFields(req.Call, false)
			if b.o.Dialect == Codex {
				var in struct {
					Description string `json:"description"`
				}
				_ = json.Unmarshal(req.Call.Args, &in)
				if in.Description != "" && req.Call.Name == "bash" {
					fields["tool_input"] = map[string]string{"command": bashCommand(req.Call.Args), "description": in.Description}
				}
			}
			m, _, ok := b.dispatch(call{event: "PermissionRequest", subject: b.subjects(req.Call.Name), a: a, ctx: ctx, fields: fields})
			if ok {
				switch m.Decision {
				case "allow":
					return tool.Approval{Allow: true, By: "hook:" + b.o.Dialect + ":PermissionRequest"}, nil
				case "deny":
					return tool.Approval{Allow: false, Reason: firstNonEmpty(m.Reason, "denied by PermissionRequest hook"), By: "hook:" + b.o.Dialect + ":PermissionRequest"}, nil
				}
			}
		}
		if inner == nil {
			return tool.Approval{Allow: false, By: "none", Reason: fmt.Sprintf("tool %q requires approval, but no approver is attached to this agent (headless or non-interactive); allow it in the permission settings or run interactively", req.Call.Name)}, nil
		}
		return inner.Approve(ctx, req)
	})
}

func bashCommand(args json.RawMessage) string {
	var a struct {
		Command string `json:"command"`
	}
	_ = json.Unmarshal(args, &a)
	return a.Command
}

// InstallSubagents runs SubagentStart hooks when a child starts (their
// additionalContext reaches the child) and SubagentStop hooks for children
// that run out of process (in-process children fire SubagentStop from
// their own turn, where it can keep them going).
func (b *Bridge) InstallSubagents(scope *kernel.Scope, started, ended *kernel.Signal[subagent.Note]) error {
	name := kernel.Named("hooks-" + b.o.Dialect)
	// record notes the child's type first thing (prepended, before any
	// bridge runs hooks), so a child that finishes quickly stops under its
	// own type.
	record := func(_ context.Context, n subagent.Note) error {
		if n.Start == nil {
			return nil
		}
		b.mu.Lock()
		info := b.subs[n.Child]
		info.typ = noteType(n.Start)
		if info.known != nil {
			close(info.known)
		} else {
			info.known = closedChan
		}
		b.subs[n.Child] = info
		b.mu.Unlock()
		return nil
	}
	onStart := func(ctx context.Context, n subagent.Note) error {
		if n.Start == nil {
			return nil
		}
		typ := noteType(n.Start)
		m, outs, ok := b.dispatch(call{event: "SubagentStart", subject: []string{typ}, a: n.Parent, ctx: ctx,
			fields: map[string]any{"agent_id": string(n.Child), "agent_type": typ}})
		if !ok {
			return nil
		}
		if cs := contexts(m, outs, false); len(cs) > 0 {
			for _, x := range b.agents.List() {
				if x.Session().ID() == n.Child {
					_ = x.Inject(ctx, textBlocks(cs), b.source())
				}
			}
		}
		return nil
	}
	onEnd := func(ctx context.Context, n subagent.Note) error {
		b.mu.Lock()
		info := b.subs[n.Child]
		delete(b.subs, n.Child)
		b.mu.Unlock()
		if info.stopped || n.End == nil {
			return nil
		}
		typ := firstNonEmpty(info.typ, "general-purpose")
		fields := map[string]any{"agent_id": string(n.Child), "agent_type": typ, "stop_hook_active": false,
			"agent_transcript_path": b.transcript(n.Child), "last_assistant_message": n.End.Result}
		if b.o.Dialect == Claude {
			fields["background_tasks"], fields["session_crons"] = []any{}, []any{}
		}
		b.dispatch(call{event: "SubagentStop", subject: []string{typ}, a: n.Parent, ctx: ctx, fields: fields})
		return nil
	}
	if err := scope.Add(started.Listen(record, name, kernel.Prepend())); err != nil {
		return err
	}
	if err := scope.Add(started.Listen(onStart, name)); err != nil {
		return err
	}
	return scope.Add(ended.Listen(onEnd, name))
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// noteType is a child's agent type: its custom agent's name; "fork" for a
// fork of the parent; Claude Code's "general-purpose" for a fresh child.
func noteType(st *subagent.StartEvent) string {
	switch {
	case st.Agent != "":
		return st.Agent
	case st.Provider == "fork":
		return "fork"
	}
	return "general-purpose"
}
