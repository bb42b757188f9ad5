package task

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/doctor"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/subagent"
)

// Plugin is the subagents capability: a [subagent.Service] with the spawn
// and fork providers, provided to later plugins (hooks report subagent
// starts and ends), and the task and fork tools, task with the custom
// agents of [AgentDirs]; its [Catalog] is provided too, for front doors
// that define agents inline. When a doctor registry is installed it
// reports every agent file used or skipped.
func Plugin() core.Plugin {
	return func(_ context.Context, h *core.Host, scope *kernel.Scope) error {
		svc := subagent.NewService(subagent.Options{Logger: h.Logger})
		for _, p := range []subagent.Provider{subagent.Spawn(svc, h.Agents), subagent.Fork(svc, h.Agents)} {
			d, err := svc.Register(p)
			if err != nil {
				return err
			}
			if err := scope.Add(d); err != nil {
				return err
			}
		}
		trusted := h.Site.TrustedDir(h.Site.Cwd)
		dirs := AgentDirs(h.Site, trusted)
		if extra, ok := core.Lookup[Extra](h); ok && extra != nil {
			// Plugin bundles' agents rank below the user's own files.
			dirs = append(extra(h.Site.Cwd), dirs...)
		}
		defs, shadowed, loadErr := subagent.Load(dirs)
		if loadErr != nil {
			h.Logger.Warn("some custom agent definitions could not be read", "err", loadErr)
		}
		var notes []doctor.Finding
		for i := range defs {
			for _, n := range defs[i].Notes {
				msg := "agent " + defs[i].Name + ": " + n
				h.Logger.Warn(msg, "file", defs[i].Path)
				notes = append(notes, doctor.Finding{Severity: doctor.Warning, Subject: defs[i].Path, Message: msg})
			}
			if len(defs[i].Notes) > 0 {
				// One line per file on stderr; doctor has each key.
				h.Site.Warn(fmt.Sprintf("agent %s (%s): %s", defs[i].Name, defs[i].Path, strings.Join(defs[i].Notes, "; ")))
			}
			if n := fitModel(h, &defs[i]); n != "" {
				h.Logger.Warn(n)
				notes = append(notes, doctor.Finding{Severity: doctor.Warning, Subject: defs[i].Path, Message: n})
			}
		}
		cat, err := newCatalog(h.Tools, svc, h.Agents, defs)
		if err != nil {
			return err
		}
		if err := scope.Defer(cat.close); err != nil {
			return err
		}
		if err := h.Tools.RegisterAll(scope, Tool("fork", "fork", svc, h.Agents, nil)); err != nil {
			return err
		}
		if checks, ok := core.Lookup[*doctor.Registry](h); ok {
			findings := agentFindings(h.Site, trusted, defs, shadowed, loadErr, notes)
			if err := scope.Add(checks.Add("agents", func(context.Context) []doctor.Finding { return findings })); err != nil {
				return err
			}
		}
		if err := core.Provide(h, scope, cat); err != nil {
			return err
		}
		return core.Provide(h, scope, svc)
	}
}

// Extra is how other capabilities add agent directories (plugin
// bundles): a function of the working directory, provided on the host
// before this plugin installs.
type Extra func(cwd string) []subagent.Dir

// AgentDirs are the directories of custom agent files, lowest precedence
// first: Claude Code's ~/.claude/agents, $DSH_HOME/agents, then the
// project's .claude/agents and .dsh/agents once it is trusted. A later
// file of the same name wins.
func AgentDirs(site core.Site, trusted bool) []subagent.Dir {
	var dirs []subagent.Dir
	if site.UserHome != "" {
		dirs = append(dirs, subagent.Dir{Path: filepath.Join(site.UserHome, ".claude", "agents"), Source: "user"})
	}
	dirs = append(dirs, subagent.Dir{Path: filepath.Join(site.Home, "agents"), Source: "user"})
	if trusted {
		dirs = append(dirs,
			subagent.Dir{Path: filepath.Join(site.Cwd, ".claude", "agents"), Source: "project"},
			subagent.Dir{Path: filepath.Join(site.Cwd, ".dsh", "agents"), Source: "project"})
	}
	return dirs
}

// fitModel maps a Claude Code agent's model to one dsh has: "inherit"
// (and an empty model) is the parent's; a model that does not resolve
// (Claude Code's sonnet, opus and haiku without such aliases) falls back to
// the parent's with a note rather than failing every call of the agent.
func fitModel(h *core.Host, d *subagent.Definition) string {
	m := strings.TrimSpace(d.Model)
	if m == "" || m == "inherit" {
		d.Model = ""
		return ""
	}
	if h.LLM == nil {
		return ""
	}
	if id, _, ok := h.LLM.Resolve(m); ok {
		d.Model = id
		return ""
	}
	d.Model = ""
	return fmt.Sprintf("agent %s: model %q is not configured here, so it uses the main model (define an alias %q in settings to choose one)", d.Name, m, m)
}

func agentFindings(site core.Site, trusted bool, defs []subagent.Definition, shadowed []subagent.Shadow, loadErr error, notes []doctor.Finding) []doctor.Finding {
	var out []doctor.Finding
	for _, d := range defs {
		src := ""
		if d.Source != "" {
			src = ", " + d.Source
		}
		out = append(out, doctor.Finding{Severity: doctor.OK, Subject: d.Path, Message: "used: agent " + d.Name + " (a choice of the task tool" + src + ")"})
	}
	for _, s := range shadowed {
		out = append(out, doctor.Finding{Severity: doctor.Info, Subject: s.Path, Message: "shadowed: agent " + s.Name + " is defined again by " + s.By + ", which is the one used"})
	}
	out = append(out, notes...)
	if loadErr != nil {
		for _, e := range unjoin(loadErr) {
			out = append(out, doctor.Finding{Severity: doctor.Warning, Subject: "agent file", Message: "skipped: malformed: " + e.Error()})
		}
	}
	if !trusted {
		for _, dir := range []string{filepath.Join(site.Cwd, ".claude", "agents"), filepath.Join(site.Cwd, ".dsh", "agents")} {
			if st, err := os.Stat(dir); err == nil && st.IsDir() {
				out = append(out, doctor.Finding{Severity: doctor.Warning, Subject: dir, Message: "skipped: the project is not trusted yet",
					Fix: "trust the project (run dsh here interactively, or pass --trust)"})
			}
		}
	}
	return out
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
