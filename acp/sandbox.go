package acp

import (
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/sandbox"
	sbplugin "github.com/dshq/dsh/sandbox/plugin"
)

// ---- the kernel sandbox, per session ----
//
// The sandbox mode is a session config option ("sandbox"): an editor's
// sessions of one workspace each run their commands in the mode the user
// picked for it (its subagents follow it). What the sandbox does for a
// session — its mode and whether the kernel enforces it here — is in the
// option's description and in the session's _meta ("dsh.sandbox"), sent
// with session/new, load and resume and in a session_info_update whenever
// it changes.

var sandboxModeInfo = map[sandbox.Mode]struct{ name, desc string }{
	sandbox.ModeReadOnly:       {"Read-only", "Commands read anything not hidden and write only a private /tmp; no network but the allowed domains"},
	sandbox.ModeWorkspaceWrite: {"Workspace write", "Commands write the workspace and a private /tmp (not .git/hooks or agent settings); no network but the allowed domains"},
	sandbox.ModeFullAccess:     {"Full access", "Commands are not confined (they still die with dsh): they read, write and reach what you can"},
}

// sandboxService is the workspace's sandbox, when the plugin is on.
func (r *sess) sandboxService() *sbplugin.Service {
	s, _ := core.Lookup[*sbplugin.Service](r.ws.app.Host)
	return s
}

// sandboxOption is the "sandbox" config option (nil without a sandbox).
func (r *sess) sandboxOption() *sdk.SessionConfigOption {
	s := r.sandboxService()
	if s == nil {
		return nil
	}
	sum := s.Describe(r.id)
	var vals sdk.SessionConfigSelectOptionsUngrouped
	for _, m := range sandbox.Modes {
		d := sandboxModeInfo[m].desc
		vals = append(vals, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(m), Name: sandboxModeInfo[m].name, Description: &d})
	}
	desc := sandboxDescription(sum)
	return &sdk.SessionConfigOption{Select: &sdk.SessionConfigOptionSelect{
		Id: "sandbox", Name: "Sandbox", Type: "select", Description: &desc,
		CurrentValue: sdk.SessionConfigValueId(sum.Mode), Options: sdk.SessionConfigSelectOptions{Ungrouped: &vals},
		Meta: map[string]any{"enforcing": sum.Enforcing},
	}}
}

func sandboxDescription(sum sbplugin.Summary) string {
	switch {
	case !sum.Confines:
		return "Commands run unconfined"
	case sum.Enforcing:
		return "Enforced by the kernel: sandboxed commands run without asking"
	}
	return fmt.Sprintf("NOT enforced on this machine (%s): commands ask as without a sandbox", sum.Reason)
}

// sandboxMeta is the session's _meta: what the sandbox does for it.
func (r *sess) sandboxMeta() map[string]any {
	s := r.sandboxService()
	if s == nil {
		return nil
	}
	return map[string]any{"dsh": map[string]any{"sandbox": s.Describe(r.id)}}
}

// setSandbox pins the session's sandbox mode and tells the client.
func (r *sess) setSandbox(value string) error {
	s := r.sandboxService()
	if s == nil {
		return invalidParams("the sandbox plugin is switched off")
	}
	m, err := sandbox.ParseMode(value)
	if err != nil {
		return invalidParams("unknown sandbox mode %q (want read-only, workspace-write or danger-full-access)", value)
	}
	if err := s.SetSessionMode(r.id, m); err != nil {
		return invalidParams("%v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ready && !r.disposed {
		r.notify(sdk.SessionUpdate{SessionInfoUpdate: &sdk.SessionSessionInfoUpdate{SessionUpdate: "session_info_update", Meta: r.sandboxMeta()}})
	}
	return nil
}
