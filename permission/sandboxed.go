package permission

import (
	"context"
	"encoding/json"

	"github.com/dshq/dsh/tool"
)

// Sandboxed tells whether a bash call will run confined by a kernel sandbox
// that enforces (the sandbox capability provides it), and how: the reason
// is shown with the decision.
//
// Why the permission layer asks it: the parser decides whether to ask, but
// inside an enforcing sandbox what a command cannot do is refused by the
// kernel, so asking about it only trains the user to say yes. In default
// and acceptEdits mode a bash call that would ask only because no rule
// allows it runs without asking when it is sandboxed; an ask rule still
// asks, a deny rule still denies, and plan mode is unchanged (a
// workspace-write sandbox would let the plan change files).
type Sandboxed func(ctx context.Context, call tool.Call) (reason string, ok bool)

// SetSandboxed installs the sandbox's answer (nil removes it).
func (c *Checker) SetSandboxed(f Sandboxed) {
	if f == nil {
		c.sandboxed.Store(nil)
		return
	}
	c.sandboxed.Store(&f)
}

// Roots returns the additional workspace roots, absolute against cwd.
func (c *Checker) Roots(cwd string) []string {
	out := make([]string, 0, len(c.roots))
	for _, r := range c.roots {
		out = append(out, absPath(r, cwd))
	}
	return out
}

// unsandboxed reports a bash call that asks to run outside the sandbox.
func unsandboxed(call tool.Call) bool {
	var a struct {
		Unsandboxed bool `json:"dangerouslyDisableSandbox"`
	}
	_ = json.Unmarshal(call.Args, &a)
	return a.Unsandboxed
}

// sandboxDecision adjusts a bash decision for the sandbox: a call that
// would ask by default runs when the sandbox confines it, and a call
// asking to leave the sandbox always asks (never runs in plan mode), unless
// the user chose bypassPermissions.
func (c *Checker) sandboxDecision(ctx context.Context, call tool.Call, mode Mode, out Decision) Decision {
	if canonical(call.Name) != toolBash || out.Behavior == Deny {
		return out
	}
	if unsandboxed(call) {
		switch mode {
		case ModePlan:
			out.Behavior, out.Reason, out.Suggest = Deny, "a command outside the sandbox never runs in plan mode", nil
			out.Rule, out.Source = "", ""
		case ModeBypass:
		default:
			if out.Behavior == Allow {
				out.Behavior, out.Rule, out.Source = Ask, "", ""
			}
			out.Reason = joinReasons("runs outside the sandbox, so it always asks", out.Reason)
			out.Suggest = nil
		}
		return out
	}
	f := c.sandboxed.Load()
	if f == nil || out.Behavior != Ask || out.Rule != "" || out.firm || mode == ModePlan {
		return out
	}
	if reason, ok := (*f)(ctx, call); ok {
		out.Behavior, out.Reason, out.Suggest = Allow, reason, nil
	}
	return out
}
