package providers

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm/demo"
	"github.com/dshq/dsh/llm/pricing"
	"github.com/dshq/dsh/settings"
)

// The models capability's settings keys.
var (
	// ModelKey is "model": the default model reference ("provider/model"
	// or an alias). --model sets it on the command line, where it also
	// wins over $DSH_MODEL.
	ModelKey = settings.Key[string]{Name: "model", Merge: settings.Latest[string]}
	// ProvidersKey is "providers": providers by name, merged by name.
	ProvidersKey = settings.Key[map[string]ProviderConfig]{Name: "providers", Merge: settings.MergeMaps[map[string]ProviderConfig], Validate: validateProviders}
	// AliasesKey is "aliases": short names for model references.
	AliasesKey = settings.Key[map[string]string]{Name: "aliases", Merge: settings.MergeMaps[map[string]string]}
)

// Keys are the models capability's settings keys ("pricing" is
// [pricing.Key]).
var Keys = settings.Schema{ModelKey, ProvidersKey, AliasesKey, pricing.Key}

func validateProviders(ps map[string]ProviderConfig) error {
	for name, p := range ps {
		if p.Type != "" && p.Type != TypeOpenAI && p.Type != TypeAnthropic {
			return settings.Invalid(name+".type", "unknown provider type %q (want openai or anthropic)", p.Type)
		}
	}
	return nil
}

// FromSettings reads the models capability's config: providers and
// aliases merged over the layers, the files' model as DefaultModel and the
// command line's as Model.
func FromSettings(c *settings.Config) Config {
	cfg := Config{Providers: ProvidersKey.Get(c), Aliases: AliasesKey.Get(c), Prices: pricing.Key.Get(c)}
	for _, v := range ModelKey.Layers(c) {
		switch {
		case v.Value == "":
		case v.Layer == settings.LayerCLI:
			cfg.Model = v.Value
		default:
			cfg.DefaultModel = v.Value
		}
	}
	return cfg
}

// Selection is what the models plugin provides: the model new agents
// use.
type Selection struct {
	// Model is the resolved reference ("deepseek/deepseek-chat").
	Model string
	// Demo says it is the offline demo model; DemoFallback that the demo
	// was picked because nothing else is configured (not chosen by
	// --model, $DSH_MODEL or settings).
	Demo, DemoFallback bool
}

// ErrUnknownModel is returned when a model was named but nothing serves it.
var ErrUnknownModel = errors.New("unknown model")

// Plugin is the models capability: an adapter for every configured
// provider (API keys from the site's environment, over its HTTP client),
// the aliases, the offline demo model, and the default model resolved and
// provided as a [Selection], and the price table (built-in list prices
// under the "pricing" settings) as a [*pricing.Table]. A named model
// nothing serves is a configuration error.
func Plugin(cfg Config) core.Plugin {
	return func(ctx context.Context, h *core.Host, scope *kernel.Scope) error {
		dispose, err := Install(h.LLM, cfg, h.Site.Env, h.Site.HTTPClient)
		if err != nil {
			return core.ConfigError(fmt.Errorf("model providers: %w", err))
		}
		if err := scope.Add(dispose); err != nil {
			return err
		}
		if d, err := h.LLM.Register(demo.Models(), demo.Adapter{}); err == nil {
			_ = scope.Add(d)
			h.LLM.Alias("demo", demo.ModelID)
		}
		var sel Selection
		model := DefaultModel(cfg, h.Site.Env)
		if model == "" {
			sel = Selection{Model: demo.ModelID, Demo: true, DemoFallback: true}
		} else {
			id, _, ok := h.LLM.Resolve(model)
			if !ok {
				var names []string
				for _, m := range h.LLM.Models() {
					names = append(names, m.ID)
				}
				return core.ConfigError(fmt.Errorf("%w %q; available: %s (configure providers in settings, or set an API key such as DEEPSEEK_API_KEY)", ErrUnknownModel, model, strings.Join(names, ", ")))
			}
			sel = Selection{Model: id, Demo: id == demo.ModelID}
		}
		if err := core.Provide(h, scope, pricing.NewTable(cfg.Prices)); err != nil {
			return err
		}
		return core.Provide(h, scope, sel)
	}
}
