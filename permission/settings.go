package permission

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/tool"
)

// Settings is the "permissions" key of the settings files: what tools may
// do without asking. Rule lists concatenate over the layers (each rule
// keeps the file it came from); the highest layer's defaultMode wins.
type Settings struct {
	DefaultMode           string   `json:"defaultMode,omitempty"`
	Allow                 []string `json:"allow,omitempty"`
	Ask                   []string `json:"ask,omitempty"`
	Deny                  []string `json:"deny,omitempty"`
	AdditionalDirectories []string `json:"additionalDirectories,omitempty"`
	// DisableBypassPermissionsMode "disable" (Claude Code's key) keeps
	// bypassPermissions from being chosen at all, from any layer or flag.
	DisableBypassPermissionsMode string `json:"disableBypassPermissionsMode,omitempty"`
}

// Key is the permission capability's settings key. A project or local
// file cannot choose bypassPermissions: its defaultMode is dropped with a
// warning and the mode of the layer below applies, so a repository can
// never switch prompts off.
var Key = settings.Key[Settings]{
	Name: "permissions",
	Merge: func(a, b Settings) Settings {
		if b.DefaultMode != "" {
			a.DefaultMode = b.DefaultMode
		}
		a.Allow = append(a.Allow, b.Allow...)
		a.Ask = append(a.Ask, b.Ask...)
		a.Deny = append(a.Deny, b.Deny...)
		a.AdditionalDirectories = append(a.AdditionalDirectories, b.AdditionalDirectories...)
		if b.DisableBypassPermissionsMode != "" {
			a.DisableBypassPermissionsMode = b.DisableBypassPermissionsMode
		}
		return a
	},
	Validate: func(s Settings) error {
		if d := s.DisableBypassPermissionsMode; d != "" && d != "disable" {
			return settings.Invalid("disableBypassPermissionsMode", `want "disable", got %q`, d)
		}
		if s.DefaultMode != "" {
			if _, err := ParseMode(s.DefaultMode); err != nil {
				return settings.Invalid("defaultMode", "unknown mode %q (want one of %s)", s.DefaultMode, ModeNames())
			}
		}
		return nil
	},
	Policy: func(layer settings.Layer, path string, s Settings) (Settings, bool, string) {
		if Mode(s.DefaultMode) != ModeBypass || !layer.Project() {
			return s, true, ""
		}
		s.DefaultMode = ""
		return s, true, fmt.Sprintf("permission: %s sets defaultMode bypassPermissions, which only you can choose (--permission-mode or your user settings); ignored", path)
	},
}

// FromSettings gathers a Config from the layers in force: every rule with
// the file (or flag) it came from, the additional directories, and the
// mode of the highest layer that sets one. Home and Cwd are left for the
// caller ([Plugin] takes them from the site).
func FromSettings(c *settings.Config) Config {
	var cfg Config
	for _, v := range Key.Layers(c) {
		p := v.Value
		if m := p.DefaultMode; m != "" {
			cfg.Mode, cfg.ModeSource = Mode(m), v.Layer
		}
		for _, list := range []struct {
			rules []string
			b     Behavior
		}{{p.Allow, Allow}, {p.Ask, Ask}, {p.Deny, Deny}} {
			for _, r := range list.rules {
				cfg.Rules = append(cfg.Rules, Rule{Text: r, Behavior: list.b, Source: v.Path})
			}
		}
		cfg.Roots = append(cfg.Roots, p.AdditionalDirectories...)
		if p.DisableBypassPermissionsMode == "disable" {
			cfg.NoBypass = v.Path
		}
	}
	return cfg
}

// Flags returns the command-line layers of the permission flags, named as
// in Claude Code: --permission-mode, --allowedTools and --disallowedTools
// (rules, split on commas and spaces outside parentheses, so
// "Bash(git log:*) Read" is two), and --add-dir (made absolute against the
// process's directory). Rules keep the flag as their source.
func Flags(mode string, allowed, disallowed, addDirs []string) ([]settings.File, error) {
	var out []settings.File
	if mode != "" {
		if _, err := ParseMode(mode); err != nil {
			return nil, fmt.Errorf("unknown --permission-mode %q (want one of %s)", mode, ModeNames())
		}
		out = append(out, Key.Flag("--permission-mode", Settings{DefaultMode: mode}))
	}
	if rs := SplitRules(allowed); len(rs) > 0 {
		out = append(out, Key.Flag("--allowedTools", Settings{Allow: rs}))
	}
	if rs := SplitRules(disallowed); len(rs) > 0 {
		out = append(out, Key.Flag("--disallowedTools", Settings{Deny: rs}))
	}
	var dirs []string
	for _, d := range addDirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("--add-dir %s: %v", d, err)
		}
		dirs = append(dirs, abs)
	}
	if len(dirs) > 0 {
		out = append(out, Key.Flag("--add-dir", Settings{AdditionalDirectories: dirs}))
	}
	return out, nil
}

// SplitRules splits flag values on commas and spaces outside parentheses,
// so "Bash(git log:*) Read" is two rules.
func SplitRules(vals []string) []string {
	var out []string
	for _, v := range vals {
		depth, start := 0, 0
		for i, r := range v {
			switch {
			case r == '(':
				depth++
			case r == ')':
				depth--
			case (r == ',' || r == ' ') && depth == 0:
				if t := strings.TrimSpace(v[start:i]); t != "" {
					out = append(out, t)
				}
				start = i + 1
			}
		}
		// The rest, unbalanced parentheses included: the permission parser
		// reports a malformed rule rather than it vanishing here.
		if t := strings.TrimSpace(v[start:]); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// Plugin is the permission capability: a [Checker] built from cfg (Home
// and Cwd default to the site's user home and working directory),
// installed with [Checker.Install] and provided to front doors (modes,
// /permissions), as a [tool.ReadFilter] to the search tools and as a
// [tool.FileConfirm] to the file tools. A rule
// that does not parse is a configuration error.
//
// List it last: its pre-execute listener must be outermost, so hooks and
// plugins decide first and it keeps the stricter verdict.
func Plugin(cfg Config) core.Plugin {
	return func(ctx context.Context, h *core.Host, scope *kernel.Scope) error {
		if cfg.Home == "" {
			cfg.Home = h.Site.UserHome
		}
		if cfg.Cwd == "" {
			cfg.Cwd = h.Site.Cwd
		}
		c, err := New(cfg)
		if err != nil {
			return core.ConfigError(err)
		}
		if f, ok := core.Lookup[Sandboxed](h); ok {
			c.SetSandboxed(f)
		}
		for _, w := range c.Warnings() {
			h.Logger.Warn(w)
		}
		if err := c.Plugin()(ctx, h, scope); err != nil {
			return err
		}
		if err := core.Provide(h, scope, c); err != nil {
			return err
		}
		if err := core.Provide(h, scope, tool.FileConfirm(c.ConfirmFile)); err != nil {
			return err
		}
		return core.Provide(h, scope, tool.ReadFilter(c.SearchFilter))
	}
}
