package bundles

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dshq/dsh/commands"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/doctor"
	"github.com/dshq/dsh/hooks"
	"github.com/dshq/dsh/internal/filestamp"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/skills"
	"github.com/dshq/dsh/subagent"
	"github.com/dshq/dsh/tools/task"
)

// Config configures the bundles plugin.
type Config struct {
	// Dirs are plugin directories given by path (--plugin-dir).
	Dirs []string
}

// Bundles is what the plugin provides: the enabled plugins of working
// directories.
type Bundles struct {
	h     *core.Host
	dirs  []string
	cache filestamp.Cache[Found]
}

// Plugin is the plugin-bundles capability: it finds the Claude Code
// plugins the user's and the (trusted) project's settings enable and adds
// their parts to the capabilities that run them — commands ("name:cmd"),
// skills ("name:skill"), agents ("name:agent", choices of the task tool),
// hooks (with CLAUDE_PLUGIN_ROOT) and MCP servers ("plugin:name:server") —
// through each one's Extra seam. It is installed before those plugins,
// reports every plugin used or skipped in dsh doctor, and says on stderr
// what of a plugin it cannot use.
func Plugin(cfg Config) core.Plugin {
	return func(_ context.Context, h *core.Host, scope *kernel.Scope) error {
		checks, err := core.Need[*doctor.Registry](h)
		if err != nil {
			return err
		}
		b := &Bundles{h: h, dirs: cfg.Dirs}
		// What of a plugin cannot be used is said at start (stderr in a
		// headless run), not only in dsh doctor; an untrusted project's
		// plugins are the trust prompt's business.
		for _, f := range b.For(h.Site.Cwd).Findings {
			if f.Severity == doctor.Warning && f.Fix != trustFix {
				h.Logger.Warn("plugins: "+f.Message, "file", f.Subject)
				h.Site.Warn("plugins: " + f.Message + " (" + f.Subject + ")")
			}
		}
		if err := scope.Add(checks.Add("plugins", func(context.Context) []doctor.Finding { return b.findings(h.Site.Cwd) })); err != nil {
			return err
		}
		for _, provide := range []func() error{
			func() error { return core.Provide(h, scope, commands.Extra(b.commandDirs)) },
			func() error { return core.Provide(h, scope, skills.Extra(b.skillDirs)) },
			func() error { return core.Provide(h, scope, task.Extra(b.agentDirs)) },
			func() error { return core.Provide(h, scope, hooks.Extra(b.hookFiles)) },
			func() error { return core.Provide(h, scope, mcp.Extra(b.servers)) },
		} {
			if err := provide(); err != nil {
				return err
			}
		}
		return core.Provide(h, scope, b)
	}
}

// For returns the plugins enabled for cwd, read again when a settings file
// or Claude Code's plugin records change, or the project's trust does.
func (b *Bundles) For(cwd string) Found {
	trusted := b.h.Site.TrustedDir(cwd)
	return b.cache.Get(cwd, trusted, func() (Found, filestamp.Set) {
		loc := Locations{UserHome: b.h.Site.UserHome, Project: cwd, Dirs: b.dirs}
		var stamps filestamp.Set
		for _, p := range watched(loc) {
			stamps = append(stamps, filestamp.Of(p))
		}
		return Find(loc, trusted), stamps
	})
}

// watched are the files whose change may change which plugins are on.
func watched(loc Locations) []string {
	var out []string
	if loc.UserHome != "" {
		out = append(out, filepath.Join(loc.UserHome, ".claude", "settings.json"),
			filepath.Join(loc.UserHome, ".claude", "plugins", "installed_plugins.json"),
			filepath.Join(loc.UserHome, ".claude", "plugins", "known_marketplaces.json"))
	}
	if loc.Project != "" {
		out = append(out, filepath.Join(loc.Project, ".claude", "settings.json"), filepath.Join(loc.Project, ".claude", "settings.local.json"))
	}
	return out
}

// usable are the plugins whose parts may act in cwd: a plugin only a
// project enabled waits for the project's trust (Find already leaves the
// files of an untrusted project unread; this keeps a stale answer from
// counting).
func (b *Bundles) usable(cwd string) []Bundle {
	trusted := b.h.Site.TrustedDir(cwd)
	var out []Bundle
	for _, x := range b.For(cwd).Bundles {
		if x.Project && !trusted {
			continue
		}
		out = append(out, x)
	}
	return out
}

func source(x Bundle) string { return "plugin " + x.Name }

// dirsOf lists one kind of directory of the usable bundles, each named
// for its bundle and prefixed with the bundle's namespace ("fmt:").
func dirsOf[D any](b *Bundles, cwd string, kind func(Bundle) []string, dir func(path, source, prefix string) D) []D {
	var out []D
	for _, x := range b.usable(cwd) {
		for _, d := range kind(x) {
			out = append(out, dir(d, source(x), x.Name+":"))
		}
	}
	return out
}

func (b *Bundles) commandDirs(cwd string) []commands.Dir {
	return dirsOf(b, cwd, Bundle.CommandDirs, func(p, src, pre string) commands.Dir {
		return commands.Dir{Path: p, Source: src, Prefix: pre}
	})
}

func (b *Bundles) skillDirs(cwd string) []skills.Dir {
	return dirsOf(b, cwd, Bundle.SkillDirs, func(p, src, pre string) skills.Dir {
		return skills.Dir{Path: p, Source: src, Prefix: pre}
	})
}

func (b *Bundles) agentDirs(cwd string) []subagent.Dir {
	return dirsOf(b, cwd, Bundle.AgentDirs, func(p, src, pre string) subagent.Dir {
		return subagent.Dir{Path: p, Source: src, Prefix: pre}
	})
}

func (b *Bundles) hookFiles(cwd string) []hooks.ExtraFile {
	var out []hooks.ExtraFile
	for _, x := range b.usable(cwd) {
		files, _ := x.Hooks()
		for _, f := range files {
			out = append(out, hooks.ExtraFile{Source: f.Source, JSON: f.JSON, Project: x.Project, Env: x.Env()})
		}
	}
	return out
}

// ServerName is the name of a plugin's MCP server: Claude Code's, so its
// tools are mcp__plugin_<plugin>_<server>__<tool> there and here.
func ServerName(plugin, server string) string { return "plugin:" + plugin + ":" + server }

func (b *Bundles) servers(cwd string) []mcp.ServerConfig {
	var out []mcp.ServerConfig
	for _, x := range b.usable(cwd) {
		out = append(out, Servers(x, cwd)...)
	}
	return out
}

// Servers are a plugin's MCP servers in dsh's shape, named by
// [ServerName], with CLAUDE_PLUGIN_ROOT in a stdio server's environment.
// A plugin only a project enabled gets the project as its directory, so
// its servers start only once the project is trusted. Servers dsh cannot
// read are left out (Find's findings name them).
func Servers(x Bundle, cwd string) []mcp.ServerConfig {
	raw, _ := x.MCPServers()
	renamed := make(map[string]json.RawMessage, len(raw))
	for n, v := range raw {
		renamed[ServerName(x.Name, n)] = v
	}
	dir := ""
	if x.Project {
		dir = cwd
	}
	cs, _ := mcp.ParseServers(renamed, source(x), x.Root, dir)
	for i := range cs {
		if cs[i].Command == "" {
			continue
		}
		env := map[string]string{RootVariable: x.Root}
		for k, v := range cs[i].Env {
			env[k] = v
		}
		cs[i].Env = env
	}
	return cs
}

func (b *Bundles) findings(cwd string) []doctor.Finding {
	found := b.For(cwd)
	var out []doctor.Finding
	for _, x := range found.Bundles {
		parts := x.parts()
		msg := fmt.Sprintf("used: plugin %s (%s, enabled by %s)", x.Name, x.ID, x.EnabledBy)
		if len(parts) > 0 {
			msg += ": " + strings.Join(parts, ", ")
		}
		out = append(out, doctor.Finding{Severity: doctor.OK, Subject: x.Root, Message: msg})
	}
	return append(out, found.Findings...)
}

// DirsKey is "pluginDirs": plugin directories enabled by path, from dsh's
// own settings files (a project's once it is trusted, as its other keys)
// and --plugin-dir; relative paths are against the project for a
// project's file and the command line, and against the file's directory
// for the user's. Layers add to each other.
var DirsKey = settings.Key[[]string]{Name: "pluginDirs", Merge: func(lower, higher []string) []string {
	return append(append([]string(nil), lower...), higher...)
}}

// DirsFromSettings are the "pluginDirs" of every layer, made absolute.
func DirsFromSettings(c *settings.Config) []string {
	var out []string
	cwd := c.Project()
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	for _, v := range DirsKey.Layers(c) {
		base := cwd
		if !v.Layer.Project() && v.Layer != settings.LayerCLI && v.Path != "" {
			base = filepath.Dir(v.Path)
		}
		for _, d := range v.Value {
			d = expandHome(d)
			if !filepath.IsAbs(d) {
				d = filepath.Join(base, d)
			}
			out = append(out, filepath.Clean(d))
		}
	}
	return out
}
