package headless

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/internal/claudemsg"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/tool"
)

func prependNamed(name string) []kernel.Option {
	return []kernel.Option{kernel.Prepend(), kernel.Named(name)}
}

// permissionAnswer is Claude Code's PermissionResult, the answer of the
// SDK's canUseTool and of a --permission-prompt-tool MCP tool.
type permissionAnswer struct {
	Behavior     string          `json:"behavior"` // allow, deny
	UpdatedInput json.RawMessage `json:"updatedInput"`
	Message      string          `json:"message"`
	Interrupt    bool            `json:"interrupt"`
}

// promptPermission answers the permission questions of the session
// (asks: the permission layer decided neither allow nor deny) by asking
// the SDK (can_use_tool) or the permission prompt tool. It runs outside
// the permission layer, before the call is recorded, so an allow with
// updatedInput goes through the consistent rewrite: the rewritten
// arguments are what the tool/call event records and what runs. A denial
// is final; deny rules stay final too (they are guards and never ask).
func (r *run) promptPermission(ctx context.Context, call tool.Call, next kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
	d, err := next(ctx, call)
	if err != nil || d.Kind != tool.Ask {
		return d, err
	}
	args := call.Args
	if d.Args != nil {
		args = d.Args
	}
	input := claudemsg.ToolInput(call.Name, args)
	who := "sdk:canUseTool"
	if r.o.PermissionPromptTool != "stdio" {
		who = "permission-prompt-tool:" + r.o.PermissionPromptTool
	}
	ans, err := r.askPermission(ctx, call, input, d.Reason)
	if err != nil {
		return tool.Decision{Kind: tool.Deny, By: who, Reason: fmt.Sprintf("the permission prompt (%s) failed: %v", who, err)}, nil
	}
	switch ans.Behavior {
	case "allow":
		out := tool.Decision{Kind: tool.Allow, By: who, Reason: "allowed by " + who, Approved: true, Args: d.Args}
		if u := bytes.TrimSpace(ans.UpdatedInput); len(u) > 0 && string(u) != "null" && !jsonSame(u, input) {
			out.Args = claudemsg.FromToolInput(call.Name, u)
		}
		return out, nil
	case "deny":
		msg := ans.Message
		if msg == "" {
			msg = "denied by " + who
		}
		if ans.Interrupt && call.Host != nil {
			if a, ok := r.a.Host.Agents.Get(agent.ID(call.Host.AgentID())); ok {
				a.Cancel(msg)
			}
		}
		return tool.Decision{Kind: tool.Deny, By: who, Reason: msg}, nil
	}
	return tool.Decision{Kind: tool.Deny, By: who, Reason: fmt.Sprintf("%s answered %q (want allow or deny)", who, ans.Behavior)}, nil
}

func (r *run) askPermission(ctx context.Context, call tool.Call, input json.RawMessage, reason string) (permissionAnswer, error) {
	var ans permissionAnswer
	name := claudemsg.ToolName(call.Name)
	if r.o.PermissionPromptTool == "stdio" {
		if r.ctl == nil {
			return ans, errors.New("no client is attached")
		}
		req := map[string]any{"subtype": "can_use_tool", "tool_name": name, "input": input, "tool_use_id": string(call.ID),
			"permission_suggestions": []any{}}
		if reason != "" {
			req["decision_reason"] = reason
		}
		if call.Host != nil && call.Host.SessionID() != r.sid {
			req["agent_id"] = call.Host.AgentID()
		}
		if r.o.ReportState {
			r.state("requires_action")
			defer r.state("running")
		}
		resp, err := r.ctl.request(ctx, req)
		if err != nil {
			return ans, err
		}
		if err := json.Unmarshal(resp, &ans); err != nil {
			return ans, fmt.Errorf("malformed answer: %v", err)
		}
		return ans, nil
	}
	t, ok := r.a.Host.Tools.Get(r.o.PermissionPromptTool)
	if !ok {
		return ans, fmt.Errorf("no tool %q (is its MCP server configured and running?)", r.o.PermissionPromptTool)
	}
	targs, _ := json.Marshal(map[string]any{"tool_name": name, "input": input, "tool_use_id": string(call.ID)})
	res, err := t.Run(ctx, tool.Call{ID: llm.CallID("permission-" + string(call.ID)), Name: r.o.PermissionPromptTool, Raw: string(targs), Args: targs, Host: call.Host})
	if err != nil {
		return ans, err
	}
	text := strings.TrimSpace(llm.TextOf(res.Content))
	if res.IsError {
		return ans, fmt.Errorf("the tool failed: %s", text)
	}
	if err := json.Unmarshal([]byte(text), &ans); err != nil {
		return ans, fmt.Errorf("the tool's answer is not a permission result ({\"behavior\":\"allow\"|\"deny\",…}): %q", text)
	}
	return ans, nil
}

// jsonSame reports whether two JSON texts hold the same value.
func jsonSame(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
