// Package plugin is the sandbox capability: the "sandbox" settings key and
// --sandbox flag, the platform's sandbox (Linux, or none), and the
// [Service] that compiles each command's policy from the mode, the
// workspace and the permission rules. It installs before the tools, which
// run bash commands through it, and tells the permission layer which calls
// the kernel confines (those need no approval).
package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/doctor"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/sandbox"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/tool"
	"github.com/dshq/dsh/tools/bashtool"
)

// Key is the "sandbox" settings key. Layers merge field by field (a higher
// layer's mode wins; allow-lists add up); a project's settings may make
// the sandbox stricter but not choose danger-full-access.
var Key = settings.Key[sandbox.Config]{
	Name: "sandbox",
	Merge: func(lower, higher sandbox.Config) sandbox.Config {
		out := lower
		if higher.Mode != "" {
			out.Mode = higher.Mode
		}
		out.Network.Allow = append(slices.Clone(lower.Network.Allow), higher.Network.Allow...)
		if higher.Limits.Any() {
			out.Limits = higher.Limits
		}
		out.Hooks = lower.Hooks || higher.Hooks
		out.MCP = lower.MCP || higher.MCP
		return out
	},
	Validate: func(c sandbox.Config) error { return c.Validate() },
	Policy: func(layer settings.Layer, path string, c sandbox.Config) (sandbox.Config, bool, string) {
		if sandbox.Mode(c.Mode) != sandbox.ModeFullAccess || !layer.Project() {
			return c, true, ""
		}
		c.Mode = ""
		return c, true, fmt.Sprintf("sandbox: %s sets mode danger-full-access, which only you can choose (--sandbox or your user settings); ignored", path)
	},
}

// Flag is the --sandbox MODE layer.
func Flag(mode string) (settings.File, error) {
	if _, err := sandbox.ParseMode(mode); err != nil {
		return settings.File{}, fmt.Errorf("--sandbox: %w", err)
	}
	return Key.Flag("--sandbox", sandbox.Config{Mode: mode}), nil
}

// Config is the plugin's configuration.
type Config struct {
	sandbox.Config
	// Sandbox replaces the platform's (tests).
	Sandbox sandbox.Sandbox
}

// Service is the sandbox of one application.
type Service struct {
	cfg  sandbox.Config
	sb   sandbox.Sandbox
	host *core.Host

	mu     sync.Mutex
	modes  map[string]sandbox.Mode // per-session modes (ACP)
	warned map[string]bool         // hosts the user was told were refused
	// refused: hosts a session's user rejected for the whole session
	// ("always reject"), by session and host.
	refused map[[2]string]bool
}

// Plugin builds the platform's sandbox and provides the [Service], the
// bash tool's [bashtool.Sandbox] and the permission layer's
// [permission.Sandboxed].
func Plugin(cfg Config) core.Plugin {
	return func(_ context.Context, h *core.Host, scope *kernel.Scope) error {
		getenv := h.Site.Getenv
		if getenv == nil {
			getenv = func(string) string { return "" }
		}
		disable, err := sandbox.ParseDisable(getenv("DSH_SANDBOX_DISABLE"))
		if err != nil {
			return core.ConfigError(err)
		}
		sb := cfg.Sandbox
		if sb == nil {
			sb = platform(h, disable)
		}
		if c, ok := sb.(interface{ Close() error }); ok {
			if err := scope.Defer(c.Close); err != nil {
				return err
			}
		}
		s := &Service{cfg: cfg.Config, sb: sb, host: h, modes: map[string]sandbox.Mode{}, warned: map[string]bool{}, refused: map[[2]string]bool{}}
		if err := core.Provide(h, scope, s); err != nil {
			return err
		}
		if err := core.Provide(h, scope, &bashtool.Sandbox{Sandbox: sb, Policy: s.Policy}); err != nil {
			return err
		}
		others := &sandbox.Others{Sandbox: sb}
		if cfg.Hooks {
			others.Hook = s.otherPolicy
		}
		if cfg.MCP {
			others.MCP = func(cwd string) (*sandbox.Policy, error) { return s.otherPolicy("", cwd) }
		}
		if err := core.Provide(h, scope, others); err != nil {
			return err
		}
		if checks, ok := core.Lookup[*doctor.Registry](h); ok {
			if err := scope.Add(checks.Add("sandbox", func(context.Context) []doctor.Finding { return s.Findings() })); err != nil {
				return err
			}
		}
		return core.Provide(h, scope, permission.Sandboxed(s.Confines))
	}
}

// Sandbox returns the platform's sandbox.
func (s *Service) Sandbox() sandbox.Sandbox { return s.sb }

// Status is the sandbox's status.
func (s *Service) Status() sandbox.Status { return s.sb.Status() }

// Config is the merged "sandbox" settings.
func (s *Service) Config() sandbox.Config { return s.cfg }

// Mode is the mode commands of sessionID run in: the session's own (set
// over ACP) or, for a subagent, that of the nearest session it works for
// that has one; else the settings', else workspace-write.
func (s *Service) Mode(sessionID string) sandbox.Mode {
	ids := []string{sessionID}
	if s.host.Sessions != nil {
		if sess, ok := s.host.Sessions.Get(session.ID(sessionID)); ok {
			ids = ids[:0]
			for _, l := range s.host.Sessions.Lineage(sess) {
				ids = append(ids, string(l.ID()))
			}
		}
	}
	s.mu.Lock()
	for _, id := range ids {
		if m, ok := s.modes[id]; ok {
			s.mu.Unlock()
			return m
		}
	}
	s.mu.Unlock()
	return s.DefaultMode()
}

// DefaultMode is the mode of sessions without one of their own: the
// settings' (sandbox.mode, --sandbox), else workspace-write.
func (s *Service) DefaultMode() sandbox.Mode {
	if s.cfg.Mode != "" {
		return sandbox.Mode(s.cfg.Mode)
	}
	return sandbox.ModeWorkspaceWrite
}

// Describe says in a few words what the sandbox does for sessionID: its
// mode and whether the kernel enforces it here (the terminal's footer and
// ACP's session info show it).
func (s *Service) Describe(sessionID string) Summary {
	st := s.Status()
	m := s.Mode(sessionID)
	return Summary{Mode: m, Enforcing: st.Enforcing && m.Confines(), Reason: st.Reason, Confines: m.Confines()}
}

// Summary is the sandbox at a glance.
type Summary struct {
	Mode sandbox.Mode `json:"mode"`
	// Enforcing: the mode confines and the kernel enforces it.
	Enforcing bool `json:"enforcing"`
	// Confines: the mode confines at all (not danger-full-access).
	Confines bool `json:"confines"`
	// Reason is why the kernel does not enforce, when it does not.
	Reason string `json:"reason,omitempty"`
}

// SetSessionMode pins a session's mode ("" returns it to the settings').
func (s *Service) SetSessionMode(sessionID string, m sandbox.Mode) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m == "" {
		delete(s.modes, sessionID)
		return nil
	}
	if _, err := sandbox.ParseMode(string(m)); err != nil {
		return err
	}
	s.modes[sessionID] = m
	return nil
}

// Inputs gathers what a policy for sessionID in cwd is compiled from: the
// mode, the workspace roots and the permission rules in force.
func (s *Service) Inputs(sessionID, cwd string, mode sandbox.Mode) sandbox.Inputs {
	in := sandbox.Inputs{
		Mode: mode, Cwd: cwd, Home: s.host.Site.UserHome, DshHome: s.host.Site.Home,
		Network: s.cfg.Network.Allow, Limits: s.cfg.Limits,
	}
	if c, ok := core.Lookup[*permission.Checker](s.host); ok {
		in.Roots = c.Roots(cwd)
		for _, r := range c.Rules(sessionID) {
			if r.Behavior == permission.Ask {
				continue
			}
			in.Rules = append(in.Rules, sandbox.PathRule{Text: r.Text, Allow: r.Behavior == permission.Allow, Source: r.Source})
		}
	}
	return in
}

// Policy compiles the policy of one bash call; unsandboxed (approved by the
// user through the permission layer) runs it in danger-full-access, still
// contained. Without a working helper it returns nil: the command runs as
// it is, and the status says why.
func (s *Service) Policy(ctx context.Context, call tool.Call, dir string, unsandboxed bool) (*sandbox.Policy, error) {
	st := s.sb.Status()
	if !st.Active(sandbox.LayerReaper) {
		return nil, nil
	}
	mode := s.Mode(sessionOf(call))
	if unsandboxed {
		mode = sandbox.ModeFullAccess
	}
	p, err := sandbox.Compile(s.Inputs(sessionOf(call), dir, mode))
	if err != nil || !mode.Confines() {
		return p, err
	}
	p.Network.Ask = s.networkAsk(ctx, call)
	return p, nil
}

// otherPolicy is the policy of a command dsh runs for sessionID in cwd
// that is not a bash call (a hook, a stdio MCP server): the session's mode
// compiled as for its bash calls, with no question about the network (no
// call to put it to: a host not on the allow-list is refused). Nil without
// a working helper.
func (s *Service) otherPolicy(sessionID, cwd string) (*sandbox.Policy, error) {
	if !s.sb.Status().Active(sandbox.LayerReaper) {
		return nil, nil
	}
	return sandbox.Compile(s.Inputs(sessionID, cwd, s.Mode(sessionID)))
}

// networkAsk is what a command does about a host the allow-list refuses:
// ask the user through the call's approver (the question names the host;
// "allow for this session" records WebFetch(domain:HOST), which the next
// commands' policies add to their allow-list; "always reject" keeps the
// session from asking about it again), once per host and command.
// Headless, nobody is asked: the request is refused and the user told on
// stderr, once per host.
func (s *Service) networkAsk(ctx context.Context, call tool.Call) func(host string, port int) bool {
	var mu sync.Mutex
	answered := map[string]bool{}
	sid := sessionOf(call)
	return func(host string, port int) bool {
		mu.Lock()
		defer mu.Unlock()
		if ok, seen := answered[host]; seen {
			return ok
		}
		s.mu.Lock()
		refused := s.refused[[2]string{sid, host}]
		s.mu.Unlock()
		if refused {
			return false
		}
		target := net.JoinHostPort(host, strconv.Itoa(port))
		rule := "WebFetch(domain:" + host + ")"
		reason := fmt.Sprintf("the sandboxed command connects to %s, which is not in sandbox.network.allow", target)
		a, asked := tool.AskDuring(ctx, reason, []string{rule})
		allow := asked && a.Allow
		switch {
		case allow:
			if c, ok := core.Lookup[*permission.Checker](s.host); ok {
				if err := c.Accept(ctx, call, a); err != nil {
					s.host.Logger.Warn("sandbox: recording the network approval", "host", host, "err", err)
				}
			}
		case len(a.Rules) > 0:
			s.mu.Lock()
			s.refused[[2]string{sid, host}] = true
			s.mu.Unlock()
		case !asked || a.By == "none":
			s.warnOnce(host, fmt.Sprintf("sandbox: blocked %s: not in sandbox.network.allow (nobody to ask here: add %q to sandbox.network.allow, or allow %s)", target, host, rule))
		}
		answered[host] = allow
		return allow
	}
}

// warnOnce tells the user about a refused host once per process.
func (s *Service) warnOnce(host, msg string) {
	s.mu.Lock()
	seen := s.warned[host]
	s.warned[host] = true
	s.mu.Unlock()
	if seen {
		return
	}
	if s.host.Site.Warn != nil {
		s.host.Site.Warn(msg)
		return
	}
	s.host.Logger.Warn(msg)
}

// Confines is the permission layer's question: will this bash call run
// confined by an enforcing sandbox? The reason names the mode.
func (s *Service) Confines(_ context.Context, call tool.Call) (string, bool) {
	var a struct {
		Unsandboxed bool `json:"dangerouslyDisableSandbox"`
	}
	_ = json.Unmarshal(call.Args, &a)
	if a.Unsandboxed {
		return "", false
	}
	mode := s.Mode(sessionOf(call))
	if !mode.Confines() || !s.sb.Status().Enforcing {
		return "", false
	}
	return fmt.Sprintf("runs in the %s sandbox, which the kernel enforces", mode), true
}

func sessionOf(call tool.Call) string {
	if call.Host != nil {
		return call.Host.SessionID()
	}
	return ""
}

// Others says, for status and doctor, whether the commands dsh runs
// besides bash calls are confined: hook commands (sandbox.hooks) and stdio
// MCP servers (sandbox.mcp), each "sandboxed (MODE)" or why not.
func (s *Service) Others() (hooks, mcp string) {
	say := func(on bool, key string) string {
		m := s.DefaultMode()
		switch {
		case !on:
			return "not sandboxed (" + key + " is off)"
		case !m.Confines():
			return "not confined (" + key + " is on, but the mode is " + string(m) + ")"
		case !s.Status().Active(sandbox.LayerReaper):
			return "NOT sandboxed: " + key + " is on, but the sandbox helper cannot run here (" + s.Status().Reason + ")"
		case !s.Status().Enforcing:
			return "sandboxed (" + string(m) + "), but NOT enforced: " + s.Status().Reason
		}
		return "sandboxed (" + string(m) + ")"
	}
	return say(s.cfg.Hooks, "sandbox.hooks"), say(s.cfg.MCP, "sandbox.mcp")
}

// Findings are the sandbox's part of dsh doctor: whether the kernel
// enforces the mode here, and whether hooks and stdio MCP servers run in
// it.
func (s *Service) Findings() []doctor.Finding {
	st := s.Status()
	m := s.DefaultMode()
	f := doctor.Finding{Subject: "kernel sandbox", Severity: doctor.OK}
	switch {
	case !m.Confines():
		f.Severity, f.Message = doctor.Warning, fmt.Sprintf("mode %s: commands are not confined", m)
		f.Fix = "set sandbox.mode to workspace-write (or drop --sandbox " + string(m) + ")"
	case st.Enforcing:
		f.Message = fmt.Sprintf("mode %s, enforced by the kernel (%s, Landlock ABI %d); sandboxed commands run without asking", m, st.Implementation, st.LandlockABI)
	default:
		f.Severity, f.Message = doctor.Warning, fmt.Sprintf("mode %s is NOT enforced here: %s; every command the permission rules ask about asks", m, st.Reason)
		f.Fix = "dsh sandbox status shows each layer"
	}
	out := []doctor.Finding{f}
	hooks, mcp := s.Others()
	for _, o := range []struct {
		subject, text string
		on            bool
	}{{"hook commands", hooks, s.cfg.Hooks}, {"stdio MCP servers", mcp, s.cfg.MCP}} {
		g := doctor.Finding{Subject: o.subject, Severity: doctor.Info, Message: o.text}
		if o.on && (!strings.HasPrefix(o.text, "sandboxed (") || strings.Contains(o.text, "NOT")) {
			g.Severity = doctor.Warning
		}
		out = append(out, g)
	}
	return out
}
