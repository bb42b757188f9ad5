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
}

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
	// TranscriptPath returns the session log path for payloads.
	TranscriptPath func(id session.ID) string
	// Model is stamped on Codex payloads.
	Model string
	// Env is added to every hook's environment (the settings' "env").
	Env map[string]string
	// MaxStopContinuations caps how many times Stop hooks may force one
	// turn to go on (default 3): the loop guard beyond stop_hook_active.
	MaxStopContinuations int
	Logger               *slog.Logger
}

// Bridge runs one dialect's hooks on dsh's points.
type Bridge struct {
	o       Options
	agents  *agent.Registry
	mu      sync.Mutex
	counter int
	pending map[llm.CallID][]string // PreToolUse context for the result
	stops   map[agent.ID][2]int     // turn, forced continuations
	wg      sync.WaitGroup
	warned  map[string]bool

	// RanPoint notifies every run (with durations).
	RanPoint *kernel.Signal[Ran]
}

// New returns a bridge.
func New(o Options, agents *agent.Registry) *Bridge {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxStopContinuations <= 0 {
		o.MaxStopContinuations = 3
	}
	if o.Trusted == nil {
		o.Trusted = func(string) bool { return false }
	}
	return &Bridge{o: o, agents: agents, pending: map[llm.CallID][]string{}, stops: map[agent.ID][2]int{},
		warned: map[string]bool{}, RanPoint: kernel.NewSignal[Ran]("hooks/ran")}
}

// Install registers the bridge on the hub, the tool registry, the session
// store and (optionally) the compactor, for the life of scope.
func (b *Bridge) Install(scope *kernel.Scope, reg *tool.Registry, sessions *session.Live, comp *compact.Compactor) error {
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
		adds = append(adds, comp.BeforeCompact.Use(b.preCompact, name))
	}
	for _, d := range adds {
		if err := scope.Add(d); err != nil {
			return err
		}
	}
	return scope.Add(b.wg.Wait)
}

// call is one event dispatch.
type call struct {
	cwd     string     // overrides the agent's cwd when a is nil
	sid     session.ID // the session when a is nil (its permission mode)
	event   string
	subject string
	a       agent.Agent // may be nil
	fields  map[string]any
	ctx     context.Context
}

func (b *Bridge) cwdOf(c call) string {
	if c.a != nil {
		return c.a.Session().Cwd()
	}
	return c.cwd
}

// dispatch runs the hooks matching an event and records them.
func (b *Bridge) dispatch(c call) (Merged, []Output, bool) {
	cwd := b.cwdOf(c)
	cfg := b.o.Config(cwd)
	if cfg == nil {
		return Merged{}, nil, false
	}
	for _, w := range cfg.Warnings {
		b.warnOnce(w)
	}
	hooks := cfg.Matching(c.event, c.subject, b.o.Trusted(cwd))
	if len(hooks) == 0 {
		return Merged{}, nil, false
	}
	payload := b.payload(c, cwd)
	env := make(map[string]string, len(b.o.Env)+2)
	for k, v := range b.o.Env {
		env[k] = v
	}
	env["DSH_PROJECT_DIR"] = cwd
	if b.o.Dialect != Codex {
		env["CLAUDE_PROJECT_DIR"] = cwd
	}
	turn, durable := 0, false
	if c.a != nil {
		if ts := c.a.Session().Turns(); ts.Open {
			turn, durable = ts.Last, true
		}
	}
	ids := make([]string, len(hooks))
	for i, h := range hooks {
		b.mu.Lock()
		b.counter++
		ids[i] = fmt.Sprintf("%s:%s:%d", b.o.Dialect, c.event, b.counter)
		b.mu.Unlock()
		if durable {
			b.append(c, TypeInvoked, Invoked{Turn: turn, Point: c.event, Dialect: b.o.Dialect, HandlerID: ids[i], Command: h.Command, Source: h.Source})
		}
	}
	runCwd := cwd
	if runCwd == "" {
		runCwd = "/"
	}
	outs := b.o.Runner.Run(c.ctx, hooks, payload, c.event, runCwd, env)
	for i, o := range outs {
		_ = b.RanPoint.EmitAll(c.ctx, Ran{Dialect: b.o.Dialect, Event: c.event, Hook: hooks[i], Output: o, Duration: o.Duration})
		b.o.Logger.Debug("hook ran", "dialect", b.o.Dialect, "event", c.event, "command", hooks[i].Command, "duration", o.Duration, "exit", o.ExitCode)
		if o.Invalid != "" {
			b.warnOnce(fmt.Sprintf("hooks: %s hook %q: %s", c.event, hooks[i].Command, o.Invalid))
		}
		if o.SystemMessage != "" {
			b.o.Logger.Info("hook system message", "event", c.event, "message", o.SystemMessage)
		}
		if durable {
			b.append(c, TypeResult, Result{Turn: turn, Point: c.event, HandlerID: ids[i], Decision: decisionLabel(o),
				Reason: o.Reason, ExitCode: o.ExitCode, StderrSummary: summary(o), SystemMessage: o.SystemMessage, Problem: o.Invalid})
		}
	}
	m := Merge(outs)
	for _, cf := range m.Conflicts {
		b.warnOnce(fmt.Sprintf("hooks: %s: %s", c.event, cf))
	}
	return m, outs, true
}

func (b *Bridge) warnOnce(msg string) {
	b.mu.Lock()
	seen := b.warned[msg]
	b.warned[msg] = true
	b.mu.Unlock()
	if !seen {
		b.o.Logger.Warn(msg)
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
	case o.ExitCode == nil || *o.ExitCode != 0:
		return "error"
	}
	return "pass"
}

func summary(o Output) string {
	s := o.Stderr
	if r := []rune(s); len(r) > 500 {
		s = string(r[:500]) + "…"
	}
	return s
}

func (b *Bridge) payload(c call, cwd string) []byte {
	sid := c.sid
	turn := 0
	if c.a != nil {
		sid = c.a.Session().ID()
		turn = c.a.Session().Turns().Last
	}
	mode := "default"
	if b.o.Mode != nil {
		mode = b.o.Mode(sid)
	}
	m := map[string]any{"session_id": string(sid), "cwd": cwd, "hook_event_name": c.event, "permission_mode": mode}
	if b.o.TranscriptPath != nil && sid != "" {
		m["transcript_path"] = b.o.TranscriptPath(sid)
	} else {
		m["transcript_path"] = nil
	}
	if b.o.Dialect == Codex {
		m["model"] = b.o.Model
		if c.event != "SessionStart" {
			m["turn_id"] = fmt.Sprint(turn)
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

// contexts collects additionalContext, plus plain stdout of exit-0 hooks
// where the dialect treats it as context.
func contexts(m Merged, outs []Output, plain bool) []string {
	out := append([]string(nil), m.Contexts...)
	if plain {
		for _, o := range outs {
			if o.ExitCode != nil && *o.ExitCode == 0 && o.Stdout != "" && !strings.HasPrefix(o.Stdout, "{") {
				out = append(out, o.Stdout)
			}
		}
	}
	return out
}

func textBlocks(ss []string) []llm.Block {
	var out []llm.Block
	for _, s := range ss {
		out = append(out, llm.Text(s))
	}
	return out
}

func (b *Bridge) sessionStart(ctx context.Context, s agent.SessionStart) error {
	m, outs, ok := b.dispatch(call{event: "SessionStart", subject: string(s.Source), a: s.Agent, ctx: ctx,
		fields: map[string]any{"source": string(s.Source)}})
	if !ok {
		return nil
	}
	if cs := contexts(m, outs, true); len(cs) > 0 {
		return s.Agent.Inject(ctx, textBlocks(cs), b.source())
	}
	return nil
}

func (b *Bridge) promptSubmit(ctx context.Context, in agent.PromptInput, next kernel.Next[agent.PromptInput, agent.PromptDecision]) (agent.PromptDecision, error) {
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

func (b *Bridge) toolFields(c tool.Call) map[string]any {
	return map[string]any{
		"tool_name":   ToolName(b.o.Dialect, c.Name),
		"tool_input":  ToolInput(b.o.Dialect, c.Name, c.Args),
		"tool_use_id": string(c.ID),
	}
}

func (b *Bridge) preTool(ctx context.Context, c tool.Call, next kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
	a := b.agentOf(c.Host)
	by := "hook:" + b.o.Dialect + ":PreToolUse"
	m, _, ok := b.dispatch(call{event: "PreToolUse", subject: ToolName(b.o.Dialect, c.Name), a: a, ctx: ctx, fields: b.toolFields(c)})
	if ok && len(m.Contexts) > 0 {
		b.mu.Lock()
		b.pending[c.ID] = append(b.pending[c.ID], m.Contexts...)
		b.mu.Unlock()
	}
	if ok && m.Stop {
		if a != nil {
			a.Cancel(firstNonEmpty(m.StopReason, "stopped by PreToolUse hook"))
		}
		return tool.Decision{Kind: tool.Deny, Reason: firstNonEmpty(m.StopReason, "stopped by PreToolUse hook"), By: by}, nil
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

// toolResponse is what PostToolUse hooks see of a result.
func toolResponse(name string, r tool.Result) any {
	text := llm.TextOf(r.Content)
	if name == "bash" {
		return map[string]any{"stdout": text, "stderr": "", "interrupted": false, "isImage": false}
	}
	return map[string]any{"output": text, "success": !r.IsError}
}

func (b *Bridge) postTool(ctx context.Context, in tool.PostInput, next kernel.Next[tool.PostInput, tool.PostDecision]) (tool.PostDecision, error) {
	b.mu.Lock()
	pre := b.pending[in.Call.ID]
	delete(b.pending, in.Call.ID)
	b.mu.Unlock()
	a := b.agentOf(in.Call.Host)
	event := "PostToolUse"
	fields := b.toolFields(in.Call)
	if in.Result.IsError {
		event = "PostToolUseFailure"
		fields["error"] = llm.TextOf(in.Result.Content)
	} else {
		fields["tool_response"] = toolResponse(in.Call.Name, in.Result)
	}
	m, _, ok := b.dispatch(call{event: event, subject: ToolName(b.o.Dialect, in.Call.Name), a: a, ctx: ctx, fields: fields})
	if ok && event == "PostToolUseFailure" && b.o.Dialect == Codex {
		ok = false
	}
	d, err := next(ctx, in)
	if err != nil {
		return d, err
	}
	var extra []string
	extra = append(extra, pre...)
	if ok {
		if m.Decision == "deny" {
			// The output stays; the reason is feedback the model reads.
			extra = append(extra, event+" hook feedback: "+firstNonEmpty(m.Reason, "blocked by "+event+" hook"))
		}
		extra = append(extra, m.Contexts...)
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

func (b *Bridge) stop(ctx context.Context, in agent.ContinuationInput, next kernel.Next[agent.ContinuationInput, agent.ContinuationDecision]) (agent.ContinuationDecision, error) {
	d, err := next(ctx, in)
	if err != nil || d.Continue {
		return d, err
	}
	// The agent is about to stop: Stop hooks may keep it going.
	b.mu.Lock()
	st := b.stops[in.Agent.ID()]
	if st[0] != in.Turn {
		st = [2]int{in.Turn, 0}
	}
	b.mu.Unlock()
	fields := map[string]any{"stop_hook_active": st[1] > 0}
	if b.o.Dialect == Codex {
		fields["last_assistant_message"] = lastAssistant(in.Agent.Session())
	}
	m, _, ok := b.dispatch(call{event: "Stop", a: in.Agent, ctx: ctx, fields: fields})
	if !ok || m.Stop || m.Decision != "deny" {
		return d, nil
	}
	if st[1] >= b.o.MaxStopContinuations {
		b.warnOnce(fmt.Sprintf("hooks: Stop hooks forced %d continuations of one turn; letting the agent stop", st[1]))
		return d, nil
	}
	b.mu.Lock()
	b.stops[in.Agent.ID()] = [2]int{in.Turn, st[1] + 1}
	b.mu.Unlock()
	return agent.ContinuationDecision{Continue: true, Reason: &tool.Context{
		Content: []llm.Block{llm.Text(firstNonEmpty(m.Reason, "continue: a Stop hook asked for more work"))}, Source: b.source()}}, nil
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
	m, _, ok := b.dispatch(call{event: "PreCompact", subject: trigger, a: in.Agent, ctx: ctx,
		fields: map[string]any{"trigger": trigger, "custom_instructions": in.Focus}})
	if ok && m.Decision == "deny" {
		return fmt.Errorf("PreCompact hook blocked compaction: %s", firstNonEmpty(m.Reason, "no reason given"))
	}
	return nil
}

func (b *Bridge) sessionEnd(ctx context.Context, a agent.Agent) error {
	b.dispatch(call{event: "SessionEnd", a: a, ctx: context.WithoutCancel(ctx), fields: map[string]any{"reason": "other"}})
	b.mu.Lock()
	delete(b.stops, a.ID())
	b.mu.Unlock()
	return nil
}

// notification tells Notification hooks that the agent waits for approval.
func (b *Bridge) notification(ctx context.Context, ap session.Appended) error {
	if ap.Event.Type != session.TypeApprovalRequest {
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
		b.dispatch(call{cwd: a.Session().Cwd(), sid: a.Session().ID(), event: "Notification", subject: "permission_prompt", a: nil, ctx: context.WithoutCancel(ctx), fields: map[string]any{
			"message": fmt.Sprintf("dsh needs your permission to use %s", ToolName(b.o.Dialect, req.Name)), "notification_type": "permission_prompt"}})
	}()
	return nil
}

// Approver wraps the agent's approver: PermissionRequest hooks see every
// question first and may answer it (allow or deny); otherwise inner (which
// may be nil: fail closed) is asked.
func (b *Bridge) Approver(inner tool.Approver) tool.Approver {
	return tool.ApproverFunc(func(ctx context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
		a := b.agentOf(req.Call.Host)
		m, _, ok := b.dispatch(call{event: "PermissionRequest", subject: ToolName(b.o.Dialect, req.Call.Name), a: a, ctx: ctx, fields: b.toolFields(req.Call)})
		if ok {
			switch m.Decision {
			case "allow":
				return tool.Approval{Allow: true, By: "hook:" + b.o.Dialect + ":PermissionRequest"}, nil
			case "deny":
				return tool.Approval{Allow: false, Reason: firstNonEmpty(m.Reason, "denied by PermissionRequest hook"), By: "hook:" + b.o.Dialect + ":PermissionRequest"}, nil
			}
		}
		if inner == nil {
			return tool.Approval{Allow: false, By: "none", Reason: fmt.Sprintf("tool %q requires approval, but no approver is attached to this agent (headless or non-interactive); allow it in the permission settings or run interactively", req.Call.Name)}, nil
		}
		return inner.Approve(ctx, req)
	})
}

// InstallSubagents runs SubagentStart and SubagentStop hooks around child
// agents (observe-only: a child's start or end cannot be vetoed).
func (b *Bridge) InstallSubagents(scope *kernel.Scope, started, ended *kernel.Signal[subagent.Note]) error {
	fire := func(event string) kernel.Listener[subagent.Note] {
		return func(ctx context.Context, n subagent.Note) error {
			typ, id := "general-purpose", ""
			if n.Start != nil {
				id = n.Start.ID
				if n.Start.Agent != "" {
					typ = n.Start.Agent
				}
			}
			if n.End != nil {
				id = n.End.ID
			}
			fields := map[string]any{"agent_id": id, "agent_type": typ}
			if event == "SubagentStop" {
				fields["stop_hook_active"] = false
			}
			b.dispatch(call{event: event, subject: typ, a: n.Parent, ctx: ctx, fields: fields})
			return nil
		}
	}
	if err := scope.Add(started.Listen(fire("SubagentStart"), kernel.Named("hooks-"+b.o.Dialect))); err != nil {
		return err
	}
	return scope.Add(ended.Listen(fire("SubagentStop"), kernel.Named("hooks-"+b.o.Dialect)))
}
