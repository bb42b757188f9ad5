package compact

import (
	"context"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/settings"
)

// Settings is the "compaction" key: this capability's config. A higher
// layer that sets it replaces a lower one's whole value.
var Settings = settings.Key[Config]{Name: "compaction", Merge: func(lower, higher Config) Config {
	if higher == (Config{}) {
		return lower
	}
	return higher
}}

// Plugin is the compaction capability: a [Compactor] on agent/pre-step
// (unless Manual), provided to later plugins (hooks veto through its
// compact/before point; /compact calls it).
func Plugin(cfg Config) core.Plugin {
	return func(_ context.Context, h *core.Host, scope *kernel.Scope) error {
		c := New(cfg, h.LLM, h.Agents.Hub, h.Logger)
		if err := c.Install(scope); err != nil {
			return err
		}
		return core.Provide(h, scope, c)
	}
}
