package webtool

import (
	"context"
	"fmt"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/web/providers"
)

// PluginConfig configures the web plugin.
type PluginConfig struct {
	providers.Config
	// Env is the settings "env": it wins over the process environment for
	// the providers' keys and pins.
	Env map[string]string
}

// Plugin is the web capability: the web service ([providers.New]: the local fetcher and
// the search providers whose keys are set) and its tools, web_fetch always
// and web_search only when a search provider is available. DeepSeek's
// search costs a model call per search, so DEEPSEEK_API_KEY enables it
// only when the settings name it.
func Plugin(cfg PluginConfig) core.Plugin {
	return func(_ context.Context, h *core.Host, scope *kernel.Scope) error {
		env := func(k string) string {
			if k == providers.EnvDeepSeekKey && cfg.SearchProvider != "deepseek" {
				return ""
			}
			if v, ok := cfg.Env[k]; ok {
				return v
			}
			return h.Site.Env(k)
		}
		svc, err := providers.New(cfg.Config, env, h.Site.HTTPClient)
		if err != nil {
			return core.ConfigError(fmt.Errorf("web: %w", err))
		}
		if err := scope.Defer(svc.Close); err != nil {
			return err
		}
		return h.Tools.RegisterAll(scope, Tools(svc, Options{})...)
	}
}
