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
	"runtime"
	"slices"
	"sync"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/sandbox"
	"github.com/dshq/dsh/sandbox/linux"
	"github.com/dshq/dsh/sandbox/none"
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

	mu    sync.Mutex
	modes map[string]sandbox.Mode // per-session modes (ACP)
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
		s := &Service{cfg: cfg.Config, sb: sb, host: h, modes: map[string]sandbox.Mode{}}
		if err := core.Provide(h, scope, s); err != nil {
			return err
		}
		if err := core.Provide(h, scope, &bashtool.Sandbox{Sandbox: sb, Policy: s.Policy}); err != nil {
			return err
		}
		return core.Provide(h, scope, permission.Sandboxed(s.Confines))
	}
}

func platform(h *core.Host, disable []string) sandbox.Sandbox {
	if runtime.GOOS != "linux" {
		return none.New("")
	}
	return linux.New(linux.Options{Home: h.Site.UserHome, Disable: disable, Logger: h.Logger})
}

// Sandbox returns the platform's sandbox.
func (s *Service) Sandbox() sandbox.Sandbox { return s.sb }

// Status is the sandbox's status.
func (s *Service) Status() sandbox.Status { return s.sb.Status() }

// Config is the merged "sandbox" settings.
func (s *Service) Config() sandbox.Config { return s.cfg }

// Mode is the mode commands of sessionID run in: the session's own (set
// over ACP), else the settings', else workspace-write.
func (s *Service) Mode(sessionID string) sandbox.Mode {
	s.mu.Lock()
	m, ok := s.modes[sessionID]
	s.mu.Unlock()
	if ok {
		return m
	}
	if s.cfg.Mode != "" {
		return sandbox.Mode(s.cfg.Mode)
	}
	return sandbox.ModeWorkspaceWrite
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
func (s *Service) Policy(_ context.Context, call tool.Call, dir string, unsandboxed bool) (*sandbox.Policy, error) {
	st := s.sb.Status()
	if !st.Active(sandbox.LayerReaper) {
		return nil, nil
	}
	mode := s.Mode(sessionOf(call))
	if unsandboxed {
		mode = sandbox.ModeFullAccess
	}
	return sandbox.Compile(s.Inputs(sessionOf(call), dir, mode))
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
