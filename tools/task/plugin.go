package task

import (
	"context"
	"path/filepath"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/subagent"
)

// Plugin is the subagents capability: a [subagent.Service] with the spawn
// and fork providers, provided to later plugins (hooks report subagent
// starts and ends), and the task and fork tools, task with the custom
// agents of $DSH_HOME/agents and the project's .dsh/agents; its [Catalog]
// is provided too, for front doors that define agents inline.
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
		defs, err := subagent.LoadDefinitions(filepath.Join(h.Site.Home, "agents"), filepath.Join(h.Site.Cwd, ".dsh", "agents"))
		if err != nil {
			h.Logger.Warn("some custom agent definitions could not be read", "err", err)
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
		if err := core.Provide(h, scope, cat); err != nil {
			return err
		}
		return core.Provide(h, scope, svc)
	}
}
