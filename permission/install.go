package permission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/prompt"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// Install attaches the checker to a tool registry for the life of scope:
//
//   - a guard (prepended, so it runs first) that makes deny rules final:
//     no hook, plugin or approver can overturn them;
//   - a pre-execute listener (prepended, so it is outermost) that lets the
//     listeners inside it decide first and then applies allow, ask and the
//     mode. It only ever makes their verdict stricter: hooks and plugins
//     can tighten a decision, never loosen it; the user loosens it through
//     rules and modes;
//   - an observer that records the rules an approval answer accepted
//     ("allow for this session", "always reject") as session rules in the
//     log;
//   - the plan-mode prompt section and the exit_plan_mode tool.
//
// With hub (nil for registry-only use), a session's rules are restored
// from its log when its agent starts (resume, fork), queued records are
// flushed at the next step, and a disposed agent's rules are dropped.
//
// Listeners registered later with kernel.Prepend run outside these ones;
// install the permission layer after them, or not at all in front of it.
func (c *Checker) Install(scope *kernel.Scope, reg *tool.Registry, pb *prompt.Builder, hub *agent.Hub) error {
	return scope.Effect(func(record func(func() error)) error {
		add := func(d func()) { record(func() error { d(); return nil }) }
		if !c.reg.CompareAndSwap(nil, reg) {
			return errors.New("permission: checker is already installed")
		}
		record(func() error { c.reg.Store(nil); return nil })
		add(reg.GuardPoint.Use(c.guard, kernel.Prepend(), kernel.Named("permission")))
		add(reg.PreExecute.Use(c.preExecute, kernel.Prepend(), kernel.Named("permission")))
		add(reg.Observed.Listen(c.observed, kernel.Named("permission")))
		if pb != nil {
			add(pb.Section(prompt.Section{Name: "permission-plan-mode", Order: 850, Dynamic: c.planPrompt}))
		}
		d, err := reg.Register(&exitPlanTool{c: c})
		if err != nil {
			return fmt.Errorf("permission: %w", err)
		}
		add(d)
		if hub != nil {
			add(hub.SessionStart.Listen(func(ctx context.Context, ev agent.SessionStart) error {
				// The rule events are kept in memory however the session
				// was resumed (KeepOnResume below): a scan of what it holds
				// finds them all, and the payloads of those released come
				// back in batched reads.
				s := ev.Agent.Session()
				var rules []session.Event
				err := s.Each(ctx, 0, func(e session.Event) bool { return e.Type == EventRule }, func(e session.Event) error {
					rules = append(rules, e)
					return nil
				})
				if err != nil {
					return fmt.Errorf("permission: reading the session's rules: %w", err)
				}
				return c.RestoreSession(string(s.ID()), string(s.Header().ParentSession), rules)
			}, kernel.Named("permission")))
			add(hub.PreStep.Use(func(ctx context.Context, ps agent.PreStep) error {
				return c.flushPending(ctx, ps.Agent.Session())
			}, kernel.Named("permission")))
			add(hub.Disposed.Listen(func(ctx context.Context, a agent.Agent) error {
				c.ForgetSession(string(a.Session().ID()))
				return nil
			}, kernel.Named("permission")))
		}
		return nil
	})
}

// Plugin returns a core plugin that installs the checker into a host.
func (c *Checker) Plugin() core.Plugin {
	return func(_ context.Context, h *core.Host, scope *kernel.Scope) error {
		c.live.Store(h.Sessions)
		return c.Install(scope, h.Tools, h.Prompt, h.Agents.Hub)
	}
}

func cwdOf(call tool.Call) string {
	if call.Host != nil {
		return call.Host.Cwd()
	}
	return ""
}

func (c *Checker) guard(ctx context.Context, g *tool.Guard) error {
	d := c.Decide(ctx, g.Call, cwdOf(g.Call))
	if d.Behavior != Deny {
		return nil
	}
	c.recordDecision(ctx, g.Call, d)
	return g.Deny(d.By(), d.Reason)
}

// preExecute runs the inner listeners (hooks, plugins) first, decides on
// the arguments they may have rewritten, and keeps the stricter verdict.
func (c *Checker) preExecute(ctx context.Context, call tool.Call, next kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
	inner, err := next(ctx, call)
	if err != nil || inner.Kind == tool.Deny {
		return inner, err
	}
	eff := call
	if inner.Args != nil {
		eff.Args, eff.Raw = inner.Args, string(inner.Args)
	}
	d := c.Decide(ctx, eff, cwdOf(call))
	c.recordDecision(ctx, call, d)
	c.decided.note(call, d)
	out := inner
	switch {
	case d.Behavior == Deny:
		out.Kind, out.Reason = tool.Deny, d.Reason
	case d.Behavior == Ask && inner.Kind == tool.Allow && inner.Approved && call.Name != ExitPlanTool:
		return inner, nil // a trusted hook answered the question already
	case d.Behavior == Ask && inner.Kind == tool.Ask:
		out.Reason = joinReasons(inner.Reason, d.Reason)
		out.Suggestions = d.Suggest
	case d.Behavior == Ask:
		out.Kind, out.Reason = tool.Ask, d.Reason
		// What "allow for this session" accepts travels with the question:
		// the rules decided on the arguments the user is shown, not a
		// decision made again after the call ran (a command that created a
		// symlink would change it).
		out.Suggestions = d.Suggest
	case inner.Kind == tool.Ask:
		return inner, nil // a hook asked; permission alone would have allowed
	default:
		out.Kind, out.Reason = tool.Allow, d.Reason
	}
	if inner.Args == nil {
		// Who rewrote the arguments stays in By (the loop records it as
		// rewrittenBy); the permission/decision event names the rule.
		out.By = d.By()
	}
	return out, nil
}

func joinReasons(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "" || a == b:
		return a
	}
	return a + "; " + b
}

// recordDecision appends a permission/decision event. The loop appends the
// call's tool/call event after the gate, so this lands just before it.
// Recording is best effort: the decision stands even if the log refuses.
func (c *Checker) recordDecision(ctx context.Context, call tool.Call, d Decision) {
	_ = appendFor(ctx, call, EventDecision, DecisionEvent{
		CallID: call.ID, Tool: call.Name, Behavior: d.Behavior, Rule: d.Rule,
		Source: d.Source, Mode: d.Mode, Reason: d.Reason,
	})
}

// observed records the rules an approval answer accepted as session
// rules: allow rules with an allow ("allow for this session"), deny rules
// with a denial ("always reject"). They go to the root of the call's
// session (session.Live.Root): the user answers for the session they work
// in, so a subagent's question answered "for this session" holds for that
// session and every subagent of it. exit_plan_mode is never remembered: a
// plan is approved each time.
func (c *Checker) observed(ctx context.Context, out tool.Outcome) error {
	a := out.Approval
	if a == nil || canonical(out.Call.Name) == ExitPlanTool {
		return nil
	}
	return c.Accept(ctx, out.Call, *a)
}

// Accept records the rules an approval answer about call accepted, as
// observed does for the answer to a call's own question: a tool that
// asked while it ran ([tool.AskDuring]) hands its answer here, so "allow
// for this session" holds for the session's later calls.
func (c *Checker) Accept(ctx context.Context, call tool.Call, a tool.Approval) error {
	if len(a.Rules) == 0 {
		return nil
	}
	b := Deny
	if a.Allow {
		b = Allow
	}
	var target *session.Session
	if h, ok := call.Host.(interface{ Session() *session.Session }); ok {
		target = h.Session()
		if live := c.live.Load(); live != nil {
			target = live.Root(target)
		}
	}
	id := sessionOf(call)
	if target != nil {
		id = string(target.ID())
	}
	added, err := c.remember(id, a.Rules, b)
	errs := []error{err}
	for _, r := range added {
		ev := RuleEvent{Rule: r.Text, Behavior: b, Source: SourceSession}
		if target != nil {
			errs = append(errs, c.record(ctx, target, ev))
		} else {
			errs = append(errs, appendFor(ctx, call, EventRule, ev))
		}
	}
	return errors.Join(errs...)
}

// sessionOf is the session a call runs in ("" outside any agent).
func sessionOf(call tool.Call) string {
	if call.Host != nil {
		return call.Host.SessionID()
	}
	return ""
}

const planPromptText = `# Plan mode

Plan mode is active: the user wants a plan before anything changes.
- Do not edit files or run commands that change state; such calls are refused in plan mode.
- Read files, search, and run read-only commands to understand the task.
- When the plan is ready, call ` + ExitPlanTool + ` with the plan as markdown. The user approves it to leave plan mode, or says what to change; keep planning until it is approved.`

// planPrompt shows in the prompt of agents whose session is in plan mode.
func (c *Checker) planPrompt(ctx context.Context) string {
	id := ""
	if a, ok := agent.FromContext(ctx); ok {
		id = string(a.Session().ID())
	}
	if c.SessionMode(id) == ModePlan {
		return planPromptText
	}
	return ""
}

// exitPlanTool is exit_plan_mode. Its call always asks (see decider.exitPlan);
// it only runs once the user approved the plan, so running it is what
// switches the mode.
type exitPlanTool struct{ c *Checker }

var exitPlanSchema = json.RawMessage(`{"type":"object","properties":{"plan":{"type":"string","description":"The plan to carry out, in markdown: the steps, the files to change, how to verify."}},"required":["plan"],"additionalProperties":false}`)

// Info describes exit_plan_mode to the model.
func (t *exitPlanTool) Info() tool.Info {
	return tool.Info{
		Name: ExitPlanTool,
		Description: "Present your plan to the user and ask to leave plan mode. Use it only in plan mode, when the plan is complete. " +
			"If the user approves, you leave plan mode and may implement the plan; otherwise keep planning with their feedback.",
		Parameters: exitPlanSchema,
		Kind:       tool.KindOther,
	}
}

// Run leaves plan mode: it only runs once the user approved the plan.
func (t *exitPlanTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	c := t.c
	id := sessionOf(call)
	// Plan mode ends where it was set: the session's own mode, an
	// ancestor's (a subagent planning for its parent), or the checker's.
	c.mu.Lock()
	owner, slot := c.modeOwnerLocked(id)
	from := slot.mode
	to := from
	if from == ModePlan {
		to = slot.leavePlan()
	}
	c.mu.Unlock()
	if from != ModePlan {
		// The user (or the approver) already switched modes while the
		// question was open; that choice stands.
		return tool.TextResult(fmt.Sprintf("The user approved the plan. The permission mode is %s: go ahead and implement it.", to)), nil
	}
	_ = c.ModeChanged.EmitAll(ctx, ModeChange{Session: owner, From: from, To: to, By: ExitPlanTool})
	_ = appendFor(ctx, call, EventMode, ModeEvent{Mode: to, Previous: from, By: ExitPlanTool})
	return tool.TextResult(fmt.Sprintf("The user approved the plan. Plan mode is over; the permission mode is now %s. Go ahead and implement the plan.", to)), nil
}

// PresentCall shows the plan itself, so the approval question is the plan.
func (t *exitPlanTool) PresentCall(args json.RawMessage) *tool.View {
	var a struct {
		Plan string `json:"plan"`
	}
	if json.Unmarshal(args, &a) != nil || strings.TrimSpace(a.Plan) == "" {
		return nil
	}
	return &tool.View{Title: "Plan", Kind: tool.KindOther, Text: a.Plan}
}
