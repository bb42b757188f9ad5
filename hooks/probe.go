package hooks

import (
	"context"
	"encoding/json"
	"time"

	"github.com/dshq/dsh/internal/claudemsg"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// Probe is a synthetic event for trying hooks out (`dsh hooks test`,
// `dsh hooks replay`): the payload is built exactly as for the real event,
// from the same fields.
type Probe struct {
	// Event is the hook event (PreToolUse, Stop, …).
	Event     string
	Cwd       string
	SessionID session.ID
	// Tool and Args are the dsh tool and its arguments (tool events).
	Tool string
	Args json.RawMessage
	// CallID is the tool call's id (tool_use_id).
	CallID string
	// Result is the call's outcome (PostToolUse, PostToolUseFailure); its
	// Meta is the tool's, as logged.
	Result   *tool.Result
	Duration time.Duration
	// Response, when set, replaces the tool_response built from Result.
	Response json.RawMessage
	// Fields are the event's own fields (prompt, source, reason,
	// stop_hook_active, …), added as they are.
	Fields map[string]any
	// Subject overrides what the matcher sees for non-tool events (a
	// SessionStart source, a SessionEnd reason).
	Subject string
}

// Trial is one hook run for a probe.
type Trial struct {
	Dialect string
	Event   string
	Hook    Hook
	// Payload is what the hook got on stdin.
	Payload json.RawMessage
	// Output is its answer; Decision its label (pass, block, deny, allow,
	// ask, stop, error, timeout). Both are empty when DryRun.
	Output   Output
	Decision string
}

// Simulate runs the hooks a probe matches, synchronously (async hooks
// too, so their output can be shown), and reports each run. Nothing is
// recorded in any session. With dryRun the hooks are only matched and
// their payloads built.
func (b *Bridge) Simulate(ctx context.Context, p Probe, dryRun bool) []Trial {
	c := call{cwd: p.Cwd, sid: p.SessionID, event: p.Event, ctx: ctx, fields: map[string]any{}}
	if p.Subject != "" {
		c.subject = []string{p.Subject}
	}
	if p.Tool != "" {
		if !b.participates(p.Tool) {
			return nil
		}
		args := p.Args
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		tc := tool.Call{ID: llm.CallID(p.CallID), Name: p.Tool, Args: args, Raw: string(args), Host: probeHost{cwd: p.Cwd, sid: string(p.SessionID)}}
		c.subject = b.subjects(p.Tool)
		switch p.Event {
		case "PostToolUse", "PostToolUseFailure":
			res := tool.Result{}
			if p.Result != nil {
				res = *p.Result
			}
			ev, fields, ok := b.postFields(tool.PostInput{Call: tc, Result: res, Ran: true, Duration: p.Duration})
			if !ok {
				return nil
			}
			c.event, c.fields = ev, fields
			if p.Response != nil {
				c.fields["tool_response"] = p.Response
			}
		default:
			c.fields = b.toolFields(tc, p.Event != "PermissionRequest")
		}
	}
	for k, v := range p.Fields {
		c.fields[k] = v
	}
	hooks, payload, runCwd, env := b.prepare(c, false)
	var out []Trial
	for _, h := range hooks {
		t := Trial{Dialect: b.o.Dialect, Event: c.event, Hook: h, Payload: json.RawMessage(payload)}
		if !dryRun {
			sync := h
			sync.Async = false
			t.Output = b.o.Runner.Run(withSession(ctx, c.sessionID()), []Hook{sync}, payload, c.event, runCwd, b.o.Model, env)[0]
			t.Decision = decisionLabel(t.Output)
		}
		out = append(out, t)
	}
	return out
}

// Dialect is the bridge's dialect.
func (b *Bridge) Dialect() string { return b.o.Dialect }

// ToolForName is the dsh tool a hook author's name stands for: a Claude
// Code name (Bash, Agent or Task, Edit), Codex's apply_patch (an edit), an
// MCP tool, or a dsh name.
func ToolForName(name string) string {
	if name == "apply_patch" {
		return "edit"
	}
	return claudemsg.DshToolName(name)
}

// probeHost is the calling agent of a probe's call: its working directory
// and session, nothing else.
type probeHost struct{ cwd, sid string }

func (h probeHost) AgentID() string                                       { return "" }
func (h probeHost) SessionID() string                                     { return h.sid }
func (h probeHost) Cwd() string                                           { return h.cwd }
func (h probeHost) Append(context.Context, string, any) error             { return nil }
func (h probeHost) Inject(context.Context, []llm.Block, llm.Source) error { return nil }
func (h probeHost) Scope() *kernel.Scope                                  { return nil }
