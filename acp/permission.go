package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/llm/demo"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// ---- permission requests ----

// Permission option ids (and the kinds they carry).
const (
	optAllowOnce    = "allow_once"
	optAllowAlways  = "allow_always"
	optRejectOnce   = "reject_once"
	optRejectAlways = "reject_always"
)

// permissionOptions are the answers offered for a request. "Always allow"
// is offered only when a rule can cover calls like this one (the request's
// suggestions): it accepts those rules for the session. "Always reject"
// denies the tool for the session.
func permissionOptions(req tool.ApprovalRequest) []sdk.PermissionOption {
	out := []sdk.PermissionOption{{OptionId: optAllowOnce, Name: "Allow", Kind: sdk.PermissionOptionKindAllowOnce}}
	if len(req.Suggestions) > 0 {
		out = append(out, sdk.PermissionOption{OptionId: optAllowAlways, Name: "Always allow in this session", Kind: sdk.PermissionOptionKindAllowAlways})
	}
	return append(out,
		sdk.PermissionOption{OptionId: optRejectOnce, Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
		sdk.PermissionOption{OptionId: optRejectAlways, Name: "Always reject in this session", Kind: sdk.PermissionOptionKindRejectAlways})
}

// Approve implements [tool.Approver]: an ask decision becomes a
// session/request_permission. "Always" answers carry permission rules
// (the request's suggestions to allow, the tool's name to reject), which
// the permission layer records in the session's log: they hold for the
// rest of the session, for its subagents, and after session/load in any
// process. A cancelled turn, a cancelled request or a client gone answers
// reject.
func (r *sess) Approve(ctx context.Context, req tool.ApprovalRequest) (out tool.Approval, _ error) {
	name := req.Call.Name
	// A subagent's call (its agent inherits this session's approver): the
	// editor never saw the child's call, so the question goes on the
	// parent's task/fork call; failing that, the call is announced first.
	var child session.ID
	if req.Call.Host != nil && req.Call.Host.SessionID() != r.id {
		child = session.ID(req.Call.Host.SessionID())
	}
	var tc sdk.ToolCallUpdate
	ok, announced := false, false
	if child != "" {
		tc, ok = r.srv.childApproval(ctx, r, child, req)
		if ok {
			defer r.srv.childAnswered(child)
		}
	}
	r.mu.Lock()
	if !ok && child == "" {
		tc, ok = r.tr.pendingCall(req.Call.ID)
	}
	if !ok {
		title := name
		kind := toolKind(req.Info.Kind, name)
		st := sdk.ToolCallStatusPending
		tc = sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(req.Call.ID), Title: &title, Kind: &kind, Status: &st}
		if child != "" && r.ready && !r.disposed {
			// A fresh card the editor is told about before it is asked.
			r.notify(sdk.SessionUpdate{ToolCall: &sdk.SessionUpdateToolCall{
				SessionUpdate: "tool_call", ToolCallId: tc.ToolCallId, Title: title, Kind: kind,
				Status: sdk.ToolCallStatusPending, RawInput: rawArgs(req.Call.Args),
			}})
			announced = true
		}
	}
	var cancelled <-chan struct{}
	if r.prompt != nil {
		cancelled = r.prompt.cancel
	}
	r.mu.Unlock()
	if announced {
		// The subagent reports the call's outcome in its own log; close the
		// card announced here once the question is answered.
		defer func() {
			st := sdk.ToolCallStatusCompleted
			if !out.Allow {
				st = sdk.ToolCallStatusFailed
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.ready && !r.disposed {
				r.notify(sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{
					SessionUpdate: "tool_call_update", ToolCallId: tc.ToolCallId, Status: &st,
				}})
			}
		}()
	}

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	r.srv.spawn(func() {
		select {
		case <-cancelled:
			stop()
		case <-r.srv.done:
			stop()
		case <-ctx.Done():
		}
	})
	if req.Reason != "" || len(req.Suggestions) > 0 {
		if tc.Meta == nil {
			tc.Meta = map[string]any{}
		}
		d, _ := tc.Meta["dsh"].(map[string]any)
		if d == nil {
			d = map[string]any{}
			tc.Meta["dsh"] = d
		}
		if req.Reason != "" {
			d["reason"] = req.Reason
		}
		if len(req.Suggestions) > 0 {
			d["sessionRules"] = req.Suggestions // what "Always allow" accepts
		}
	}
	resp, err := r.srv.peer.RequestPermission(ctx, sdk.RequestPermissionRequest{
		SessionId: sdk.SessionId(r.id), ToolCall: tc, Options: permissionOptions(req),
	})
	if err != nil {
		return tool.Approval{Allow: false, By: "acp", Reason: fmt.Sprintf("the %s call was not approved: the permission request was cancelled", name)}, nil
	}
	sel := resp.Outcome.Selected
	if sel == nil {
		return tool.Approval{Allow: false, By: "user", Reason: fmt.Sprintf("the %s call was not approved: the permission request was cancelled", name)}, nil
	}
	switch string(sel.OptionId) {
	case optAllowOnce:
		return tool.Approval{Allow: true, By: "user"}, nil
	case optAllowAlways:
		if len(req.Suggestions) == 0 {
			break // not offered
		}
		return tool.Approval{Allow: true, Rules: slices.Clone(req.Suggestions), By: "user"}, nil
	case optRejectAlways:
		return tool.Approval{Allow: false, Rules: []string{permission.ToolRule(name)}, By: "user", Reason: fmt.Sprintf("the user rejected every %s call for this session", name)}, nil
	case optRejectOnce:
		return tool.Approval{Allow: false, By: "user"}, nil
	}
	return tool.Approval{Allow: false, By: "user", Reason: fmt.Sprintf("the %s call was not approved (unknown option %q)", name, sel.OptionId)}, nil
}

// ---- permission modes as session modes ----

// modeControl is the permission mode of each session. The server runs one
// permission checker per workspace; each session pins its own copy of the
// workspace's mode when it starts, so a client's set_mode on one session
// leaves the workspace's other sessions alone (its subagents follow it).
type modeControl interface {
	Mode(session string) string
	SetMode(session, mode string) error
	// Pin gives a session a mode of its own: the one it follows now.
	Pin(session string)
	// OnChange runs fn after any mode changed (a client's set_mode, or an
	// approved plan leaving plan mode).
	OnChange(fn func()) (dispose func())
}

type checkerModes struct{ c *permission.Checker }

func (m checkerModes) Mode(session string) string { return string(m.c.SessionMode(session)) }

func (m checkerModes) SetMode(session, s string) error {
	mode, err := permission.ParseMode(s)
	if err != nil || s == "" {
		return invalidParams("unknown mode %q", s)
	}
	return m.c.SetSessionMode(session, mode)
}

func (m checkerModes) Pin(session string) {
	_ = m.c.SetSessionMode(session, m.c.SessionMode(session))
}

func (m checkerModes) OnChange(fn func()) func() {
	return m.c.ModeChanged.Listen(func(context.Context, permission.ModeChange) error {
		fn()
		return nil
	})
}

var modeInfo = []struct{ id, name, desc string }{
	{string(permission.ModeDefault), "Default", "Ask before editing files or running commands that change anything"},
	{string(permission.ModeAcceptEdits), "Accept edits", "Edit files in the workspace without asking; ask before other commands"},
	{string(permission.ModePlan), "Plan", "Research and propose a plan; no edits or state-changing commands"},
	{string(permission.ModeBypass), "Bypass permissions", "Run everything no deny or ask rule stops"},
}

func (r *sess) modeState() *sdk.SessionModeState {
	m := r.ws.modes
	if m == nil {
		return nil
	}
	st := &sdk.SessionModeState{CurrentModeId: sdk.SessionModeId(m.Mode(r.id))}
	for _, mi := range modeInfo {
		d := mi.desc
		st.AvailableModes = append(st.AvailableModes, sdk.SessionMode{Id: sdk.SessionModeId(mi.id), Name: mi.name, Description: &d})
	}
	return st
}

// modeChanged tells each session of the workspace whose mode is no longer
// the one it last announced.
func (s *Server) modeChanged(ws *workspace) {
	s.mu.Lock()
	var recs []*sess
	for _, r := range s.sessions {
		if r.ws == ws {
			recs = append(recs, r)
		}
	}
	s.mu.Unlock()
	for _, r := range recs {
		r.mu.Lock()
		if to := ws.modes.Mode(r.id); r.ready && !r.disposed && to != r.mode {
			r.mode = to
			r.notify(sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{SessionUpdate: "current_mode_update", CurrentModeId: sdk.SessionModeId(to)}})
			r.notify(sdk.SessionUpdate{ConfigOptionUpdate: &sdk.SessionConfigOptionUpdate{SessionUpdate: "config_option_update", ConfigOptions: r.configOptionsLocked()}})
		}
		r.mu.Unlock()
	}
}

func (s *Server) setMode(_ context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	r, err := s.lookup(p.SessionId)
	if err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	if err := r.setMode(string(p.ModeId)); err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	return sdk.SetSessionModeResponse{}, nil
}

func (r *sess) setMode(id string) error {
	m := r.ws.modes
	if m == nil {
		return invalidParams("session modes are not available")
	}
	for _, mi := range modeInfo {
		if mi.id == id {
			return m.SetMode(r.id, id)
		}
	}
	return invalidParams("unknown mode %q (want one of %s)", id, permission.ModeNames())
}

// ---- models ----

func (r *sess) modelState() *sdk.SessionModelState {
	cur := r.currentModel()
	st := &sdk.SessionModelState{CurrentModelId: sdk.ModelId(cur)}
	for _, m := range r.models(cur) {
		mi := sdk.ModelInfo{ModelId: sdk.ModelId(m.id), Name: m.id}
		if m.desc != "" {
			d := m.desc
			mi.Description = &d
		}
		st.AvailableModels = append(st.AvailableModels, mi)
	}
	return st
}

type modelChoice struct{ id, desc string }

// models lists the registered models (the offline demo only when it is in
// use: nobody picks it deliberately from an editor).
func (r *sess) models(current string) []modelChoice {
	var out []modelChoice
	for _, m := range r.ws.app.Host.LLM.Models() {
		if m.ID == demo.ModelID && current != demo.ModelID {
			continue
		}
		c := modelChoice{id: m.ID}
		if m.ContextWindow > 0 {
			c.desc = fmt.Sprintf("%dk context", m.ContextWindow/1000)
		}
		out = append(out, c)
	}
	return out
}

func (r *sess) setModel(id string) error {
	canon, _, ok := r.ws.app.Host.LLM.Resolve(strings.TrimSpace(id))
	if !ok {
		return invalidParams("unknown model %q", id)
	}
	r.mu.Lock()
	r.model = canon
	r.mu.Unlock()
	return nil
}

func (s *Server) setModel(_ context.Context, p sdk.UnstableSetSessionModelRequest) (sdk.UnstableSetSessionModelResponse, error) {
	r, err := s.lookup(p.SessionId)
	if err != nil {
		return sdk.UnstableSetSessionModelResponse{}, err
	}
	if err := r.setModel(string(p.ModelId)); err != nil {
		return sdk.UnstableSetSessionModelResponse{}, err
	}
	return sdk.UnstableSetSessionModelResponse{}, nil
}

// ---- config options (the stable face of modes and models) ----

func (r *sess) configOptions() []sdk.SessionConfigOption {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.configOptionsLocked()
}

func (r *sess) configOptionsLocked() []sdk.SessionConfigOption {
	var out []sdk.SessionConfigOption
	if m := r.ws.modes; m != nil {
		var vals sdk.SessionConfigSelectOptionsUngrouped
		for _, mi := range modeInfo {
			d := mi.desc
			vals = append(vals, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(mi.id), Name: mi.name, Description: &d})
		}
		cat := sdk.SessionConfigOptionCategoryMode
		out = append(out, sdk.SessionConfigOption{Select: &sdk.SessionConfigOptionSelect{
			Id: "mode", Name: "Mode", Category: &cat, Type: "select",
			CurrentValue: sdk.SessionConfigValueId(m.Mode(r.id)), Options: sdk.SessionConfigSelectOptions{Ungrouped: &vals},
		}})
	}
	cur := r.model
	if cur == "" && r.ag != nil {
		cur = r.ag.Options().Model
	}
	var vals sdk.SessionConfigSelectOptionsUngrouped
	for _, m := range r.models(cur) {
		o := sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(m.id), Name: m.id}
		if m.desc != "" {
			d := m.desc
			o.Description = &d
		}
		vals = append(vals, o)
	}
	cat := sdk.SessionConfigOptionCategoryModel
	out = append(out, sdk.SessionConfigOption{Select: &sdk.SessionConfigOptionSelect{
		Id: "model", Name: "Model", Category: &cat, Type: "select",
		CurrentValue: sdk.SessionConfigValueId(cur), Options: sdk.SessionConfigSelectOptions{Ungrouped: &vals},
	}})
	if o := r.sandboxOption(); o != nil {
		out = append(out, *o)
	}
	return out
}

func (s *Server) setConfigOption(_ context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	v := p.ValueId
	if v == nil {
		return sdk.SetSessionConfigOptionResponse{}, invalidParams("dsh's config options take value ids")
	}
	r, err := s.lookup(v.SessionId)
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	switch v.ConfigId {
	case "mode":
		err = r.setMode(string(v.Value))
	case "model":
		err = r.setModel(string(v.Value))
	case "sandbox":
		err = r.setSandbox(string(v.Value))
	default:
		err = invalidParams("unknown config option %q", v.ConfigId)
	}
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: r.configOptions()}, nil
}

// rawArgs is a call's arguments as a client shows raw input (nil: none).
func rawArgs(args json.RawMessage) any {
	if len(args) == 0 || !json.Valid(args) {
		return nil
	}
	return args
}
