// Package providers builds dsh's model adapters from settings: the built-in
// presets (deepseek, openai, anthropic), any number of named
// OpenAI-compatible or Anthropic-compatible providers, model references of
// the form "provider/model", aliases, and the default model.
//
// A built-in preset is enabled when its key variable is set
// (DEEPSEEK_API_KEY, OPENAI_API_KEY, ANTHROPIC_API_KEY) or when settings
// configure it explicitly; its base URL comes from settings, else from its
// base-URL variable (DEEPSEEK_BASE_URL, …), else the public endpoint.
package providers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/anthropic"
	"github.com/dshq/dsh/llm/openai"
	"github.com/dshq/dsh/llm/pricing"
	"github.com/dshq/dsh/llm/sse"
)

// Provider types.
const (
	TypeOpenAI    = "openai"
	TypeAnthropic = "anthropic"
)

// Config is the model section of dsh's settings.
type Config struct {
	// Providers configures providers by name. A name of a built-in preset
	// (deepseek, openai, anthropic) overrides that preset's fields.
	Providers map[string]ProviderConfig `json:"providers,omitempty"`
	// DefaultModel is the model reference used when none is given
	// ($DSH_MODEL wins over it).
	DefaultModel string `json:"defaultModel,omitempty"`
	// Aliases maps short names to model references (or other aliases).
	Aliases map[string]string `json:"aliases,omitempty"`
	// Model is the model chosen on the command line (--model): it wins
	// over $DSH_MODEL and DefaultModel.
	Model string `json:"-"`
	// Prices override the built-in list prices (the "pricing" key).
	Prices map[string]pricing.Setting `json:"-"`
}

// ProviderConfig configures one provider.
type ProviderConfig struct {
	// Type is "openai" (Chat Completions) or "anthropic" (Messages);
	// built-in presets have theirs.
	Type string `json:"type,omitempty"`
	// BaseURL is the API root ("https://api.deepseek.com",
	// "https://openrouter.ai/api/v1", "http://localhost:11434/v1").
	BaseURL string `json:"baseURL,omitempty"`
	// APIKeyEnv names the environment variable holding the key. Empty for
	// a custom provider means no key is sent (a local server).
	APIKeyEnv string `json:"apiKeyEnv,omitempty"`
	// Headers are added to every request; "${VAR}" expands from the
	// environment.
	Headers map[string]string `json:"headers,omitempty"`
	// Models this provider serves. For a preset they are added to (or
	// override the limits of) the preset's own list.
	Models []ModelConfig `json:"models,omitempty"`
	// Disabled turns a preset off even when its key variable is set.
	Disabled bool `json:"disabled,omitempty"`

	// Wire dialect options (openai type).
	MaxTokensField  string `json:"maxTokensField,omitempty"`  // max_tokens | max_completion_tokens
	ReasoningReplay string `json:"reasoningReplay,omitempty"` // "", current-turn, tool-turns
	Thinking        string `json:"thinking,omitempty"`        // DeepSeek: enabled | disabled
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
	NoImages        *bool  `json:"noImages,omitempty"`
	// Wire dialect options (anthropic type).
	ThinkingBudget int    `json:"thinkingBudget,omitempty"`
	Version        string `json:"anthropicVersion,omitempty"`

	// Reliability: durations as Go strings ("30s", "5m").
	ConnectTimeout string `json:"connectTimeout,omitempty"`
	IdleTimeout    string `json:"idleTimeout,omitempty"`
	MaxRetries     *int   `json:"maxRetries,omitempty"`
}

// ModelConfig describes one model of a provider.
type ModelConfig struct {
	// ID is the provider's model name ("deepseek-v4-flash"); a
	// "provider/" prefix is accepted and dropped.
	ID            string `json:"id"`
	ContextWindow int    `json:"contextWindow,omitempty"`
	MaxOutput     int    `json:"maxOutput,omitempty"`
	// Images says whether the model reads image blocks; unset, the
	// provider decides (see [AcceptsImages]). A text-only model served by
	// a provider that takes images elsewhere sets it to false.
	Images *bool `json:"images,omitempty"`
}

// Provider is one resolved provider: what Install registers and what a
// "list models" command shows.
type Provider struct {
	Name    string
	Type    string
	BaseURL string
	// KeyEnv is the key variable, KeySet whether it holds a value.
	KeyEnv string
	KeySet bool
	// Enabled providers are registered by Install.
	Enabled bool
	// Builtin is true for deepseek, openai and anthropic.
	Builtin bool
	// Models carry full references ("deepseek/deepseek-v4-flash").
	Models []llm.ModelInfo

	adapter func(httpClient *http.Client) (llm.Adapter, error)
}

// builtinOrder is the order presets are listed in and the preference for
// the fallback default model.
var builtinOrder = []string{"deepseek", "anthropic", "openai"}

// Resolve returns every provider the settings and environment describe,
// enabled or not: the presets in a fixed order, then custom providers by
// name. env looks up environment variables (nil: os.Getenv).
func Resolve(cfg Config, env func(string) string) ([]Provider, error) {
	if env == nil {
		env = os.Getenv
	}
	var out []Provider
	var errs []error
	for _, name := range builtinOrder {
		pc, explicit := cfg.Providers[name]
		p, err := builtin(name, pc, explicit, env)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, p)
	}
	var custom []string
	for name := range cfg.Providers {
		if !slices.Contains(builtinOrder, name) {
			custom = append(custom, name)
		}
	}
	slices.Sort(custom)
	for _, name := range custom {
		p, err := customProvider(name, cfg.Providers[name], env)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}

func builtin(name string, pc ProviderConfig, explicit bool, env func(string) string) (Provider, error) {
	if pc.Type != "" {
		want := TypeOpenAI
		if name == "anthropic" {
			want = TypeAnthropic
		}
		if pc.Type != want {
			return Provider{}, fmt.Errorf("providers: %s is a built-in %s provider; type %q cannot change that", name, want, pc.Type)
		}
	}
	transport, err := transportOf(name, pc)
	if err != nil {
		return Provider{}, err
	}
	headers := expandHeaders(pc.Headers, env)
	switch name {
	case "anthropic":
		preset := anthropic.Anthropic()
		if pc.APIKeyEnv != "" {
			preset.APIKeyEnv = pc.APIKeyEnv
		}
		c := preset.Resolve(env, pc.BaseURL != "")
		if pc.BaseURL != "" {
			c.BaseURL = pc.BaseURL
		}
		c.Headers, c.Transport = headers, transport
		c.Models = mergeModels(preset.Models, pc.Models, name)
		applyAnthropic(&c, pc)
		return anthropicProvider(name, c, !pc.Disabled && (explicit || c.APIKey != ""), true), nil
	default:
		preset := openai.DeepSeek()
		if name == "openai" {
			preset = openai.OpenAI()
		}
		if pc.APIKeyEnv != "" {
			preset.APIKeyEnv = pc.APIKeyEnv
		}
		c := preset.Resolve(env, pc.BaseURL != "")
		if pc.BaseURL != "" {
			c.BaseURL = pc.BaseURL
		}
		c.Headers, c.Transport = headers, transport
		if err := applyOpenAI(&c, pc); err != nil {
			return Provider{}, fmt.Errorf("providers: %s: %w", name, err)
		}
		models := mergeModels(preset.Models, pc.Models, name)
		return openaiProvider(name, c, models, !pc.Disabled && (explicit || c.APIKey != ""), true), nil
	}
}

func customProvider(name string, pc ProviderConfig, env func(string) string) (Provider, error) {
	if strings.Contains(name, "/") || name == "" {
		return Provider{}, fmt.Errorf("providers: invalid provider name %q", name)
	}
	if pc.BaseURL == "" {
		return Provider{}, fmt.Errorf("providers: %s: baseURL is required", name)
	}
	if len(pc.Models) == 0 {
		return Provider{}, fmt.Errorf("providers: %s: at least one model is required", name)
	}
	transport, err := transportOf(name, pc)
	if err != nil {
		return Provider{}, err
	}
	key := ""
	if pc.APIKeyEnv != "" {
		key = env(pc.APIKeyEnv)
	}
	headers := expandHeaders(pc.Headers, env)
	models := mergeModels(nil, pc.Models, name)
	switch pc.Type {
	case TypeOpenAI:
		c := openai.Config{Provider: name, BaseURL: pc.BaseURL, APIKey: key, APIKeyEnv: pc.APIKeyEnv,
			Headers: headers, Transport: transport}
		if err := applyOpenAI(&c, pc); err != nil {
			return Provider{}, fmt.Errorf("providers: %s: %w", name, err)
		}
		return openaiProvider(name, c, models, !pc.Disabled, false), nil
	case TypeAnthropic:
		c := anthropic.Config{Provider: name, BaseURL: pc.BaseURL, APIKey: key, APIKeyEnv: pc.APIKeyEnv,
			Headers: headers, Transport: transport, Models: models}
		applyAnthropic(&c, pc)
		return anthropicProvider(name, c, !pc.Disabled, false), nil
	case "":
		return Provider{}, fmt.Errorf("providers: %s: type is required (%q or %q)", name, TypeOpenAI, TypeAnthropic)
	}
	return Provider{}, fmt.Errorf("providers: %s: unknown type %q (want %q or %q)", name, pc.Type, TypeOpenAI, TypeAnthropic)
}

func applyOpenAI(c *openai.Config, pc ProviderConfig) error {
	if pc.MaxTokensField != "" {
		if pc.MaxTokensField != "max_tokens" && pc.MaxTokensField != "max_completion_tokens" {
			return fmt.Errorf("maxTokensField %q is not max_tokens or max_completion_tokens", pc.MaxTokensField)
		}
		c.MaxTokensField = pc.MaxTokensField
	}
	switch r := openai.ReasoningReplay(pc.ReasoningReplay); r {
	case "":
	case "none":
		c.ReasoningReplay = openai.ReplayNone
	case openai.ReplayCurrentTurn, openai.ReplayToolTurns:
		c.ReasoningReplay = r
	default:
		return fmt.Errorf("reasoningReplay %q is not none, %s or %s", pc.ReasoningReplay, openai.ReplayCurrentTurn, openai.ReplayToolTurns)
	}
	if pc.Thinking != "" {
		c.Thinking = pc.Thinking
	}
	if pc.ReasoningEffort != "" {
		c.ReasoningEffort = pc.ReasoningEffort
	}
	if pc.NoImages != nil {
		c.NoImages = *pc.NoImages
	}
	return nil
}

func applyAnthropic(c *anthropic.Config, pc ProviderConfig) {
	if pc.ThinkingBudget > 0 {
		c.ThinkingBudget = pc.ThinkingBudget
	}
	if pc.Version != "" {
		c.Version = pc.Version
	}
}

func openaiProvider(name string, c openai.Config, models []llm.ModelInfo, enabled, builtin bool) Provider {
	return Provider{
		Name: name, Type: TypeOpenAI, BaseURL: c.BaseURL, KeyEnv: c.APIKeyEnv, KeySet: c.APIKey != "",
		Enabled: enabled, Builtin: builtin, Models: prefixed(name, models),
		adapter: func(hc *http.Client) (llm.Adapter, error) {
			c.HTTPClient = hc
			return openai.New(c)
		},
	}
}

func anthropicProvider(name string, c anthropic.Config, enabled, builtin bool) Provider {
	return Provider{
		Name: name, Type: TypeAnthropic, BaseURL: c.BaseURL, KeyEnv: c.APIKeyEnv, KeySet: c.APIKey != "",
		Enabled: enabled, Builtin: builtin, Models: prefixed(name, c.Models),
		adapter: func(hc *http.Client) (llm.Adapter, error) {
			c.HTTPClient = hc
			return anthropic.New(c)
		},
	}
}

func transportOf(name string, pc ProviderConfig) (sse.Options, error) {
	var o sse.Options
	for _, f := range []struct {
		v   string
		dst *time.Duration
		key string
	}{{pc.ConnectTimeout, &o.ConnectTimeout, "connectTimeout"}, {pc.IdleTimeout, &o.IdleTimeout, "idleTimeout"}} {
		if f.v == "" {
			continue
		}
		d, err := time.ParseDuration(f.v)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("providers: %s: %s %q is not a positive duration", name, f.key, f.v)
		}
		*f.dst = d
	}
	if pc.MaxRetries != nil {
		o.MaxRetries = *pc.MaxRetries
		if o.MaxRetries == 0 {
			o.MaxRetries = -1 // zero in settings means "no retries"
		}
	}
	return o, nil
}

func expandHeaders(h map[string]string, env func(string) string) map[string]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[k] = os.Expand(v, env)
	}
	return out
}

// mergeModels returns base with extra added or overriding by id (bare ids).
func mergeModels(base []llm.ModelInfo, extra []ModelConfig, provider string) []llm.ModelInfo {
	out := slices.Clone(base)
	for _, m := range extra {
		id := strings.TrimPrefix(strings.TrimSpace(m.ID), provider+"/")
		if id == "" {
			continue
		}
		info := llm.ModelInfo{ID: id, ContextWindow: m.ContextWindow, MaxOutput: m.MaxOutput}
		if i := slices.IndexFunc(out, func(x llm.ModelInfo) bool { return x.ID == id }); i >= 0 {
			info.ContextWindow = cmp.Or(info.ContextWindow, out[i].ContextWindow)
			info.MaxOutput = cmp.Or(info.MaxOutput, out[i].MaxOutput)
			out[i] = info
			continue
		}
		out = append(out, info)
	}
	return out
}

func prefixed(provider string, models []llm.ModelInfo) []llm.ModelInfo {
	out := make([]llm.ModelInfo, len(models))
	for i, m := range models {
		m.ID = provider + "/" + m.ID
		out[i] = m
	}
	return out
}

// Install registers an adapter for every enabled provider and the aliases,
// all or nothing. httpClient is shared by the adapters (nil: a client with
// its own transport, closed by dispose). Adapters receive requests whose
// Model is the canonical "provider/model" reference even when the caller
// used an alias or a bare model name.
func Install(svc *llm.Service, cfg Config, env func(string) string, httpClient *http.Client) (dispose func(), err error) {
	provs, err := Resolve(cfg, env)
	if err != nil {
		return nil, err
	}
	aliases, err := resolveAliases(cfg.Aliases)
	if err != nil {
		return nil, err
	}
	var owned *http.Transport
	if httpClient == nil {
		owned = http.DefaultTransport.(*http.Transport).Clone()
		// net/http keeps two idle connections per host by default: with
		// more sessions than that calling one provider at once (dsh serve,
		// parallel subagents) every other call would dial, and over TLS
		// handshake, again. Keep as many as the transport keeps in all.
		owned.MaxIdleConnsPerHost = owned.MaxIdleConns
		httpClient = &http.Client{Transport: owned}
	}
	var disposers []func()
	undo := func() {
		for i := len(disposers) - 1; i >= 0; i-- {
			disposers[i]()
		}
		if owned != nil {
			owned.CloseIdleConnections()
		}
	}
	for _, p := range provs {
		if !p.Enabled {
			continue
		}
		a, err := p.adapter(httpClient)
		if err != nil {
			undo()
			return nil, fmt.Errorf("providers: %s: %w", p.Name, err)
		}
		d, err := svc.Register(p.Models, canonical(svc, a))
		if err != nil {
			undo()
			return nil, err
		}
		disposers = append(disposers, d)
	}
	names := make([]string, 0, len(aliases))
	for n := range aliases {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		svc.Alias(n, aliases[n])
	}
	return undo, nil
}

// canonical rewrites req.Model to the registered reference before the
// adapter sees it, so aliases and bare names reach the provider correctly.
// (A pointer type: llm.Service compares adapters when disposing, which a
// func-typed llm.AdapterFunc cannot survive.)
type canonicalAdapter struct {
	svc *llm.Service
	a   llm.Adapter
}

func canonical(svc *llm.Service, a llm.Adapter) llm.Adapter { return &canonicalAdapter{svc, a} }

func (c *canonicalAdapter) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	if id, _, ok := c.svc.Resolve(req.Model); ok && id != req.Model {
		r := *req
		r.Model = id
		req = &r
	}
	return c.a.Stream(ctx, req)
}

// resolveAliases follows alias chains to their final target.
func resolveAliases(in map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(in))
	for name := range in {
		seen := map[string]bool{name: true}
		target := in[name]
		for {
			next, ok := in[target]
			if !ok {
				break
			}
			if seen[target] {
				return nil, fmt.Errorf("providers: alias %q is part of a cycle", name)
			}
			seen[target] = true
			target = next
		}
		if strings.TrimSpace(target) == "" {
			return nil, fmt.Errorf("providers: alias %q has no target", name)
		}
		out[name] = target
	}
	return out, nil
}

// DefaultModel returns the model to use: the command line's (Model), else $DSH_MODEL,
// else the settings' DefaultModel, else the first model of the first
// enabled provider (deepseek, anthropic, openai, then custom providers by
// name), else "".
func DefaultModel(cfg Config, env func(string) string) string {
	if env == nil {
		env = os.Getenv
	}
	if cfg.Model != "" {
		return cfg.Model
	}
	if m := strings.TrimSpace(env("DSH_MODEL")); m != "" {
		return m
	}
	if cfg.DefaultModel != "" {
		return cfg.DefaultModel
	}
	provs, _ := Resolve(cfg, env)
	for _, p := range provs {
		if p.Enabled && len(p.Models) > 0 {
			return p.Models[0].ID
		}
	}
	return ""
}

// SecretEnvNames returns the environment variables cfg's providers read
// credentials from: each preset's key variable (DEEPSEEK_API_KEY,
// ANTHROPIC_API_KEY, OPENAI_API_KEY, or the apiKeyEnv that replaces one),
// every custom provider's apiKeyEnv, and every variable a provider's
// headers expand. dsh withholds them from the commands it runs, whatever
// they are called. Sorted, without duplicates; enabled or not.
func SecretEnvNames(cfg Config) []string {
	var names []string
	add := func(n string) {
		if n != "" {
			names = append(names, n)
		}
	}
	add(openai.DeepSeek().APIKeyEnv)
	add(openai.OpenAI().APIKeyEnv)
	add(anthropic.Anthropic().APIKeyEnv)
	for _, pc := range cfg.Providers {
		add(pc.APIKeyEnv)
		for _, v := range pc.Headers {
			os.Expand(v, func(name string) string { add(name); return "" })
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// AcceptsImages says whether model (a reference, "provider/id", or an
// alias) reads image blocks: the model's "images" setting if it has one,
// else its provider's noImages, else the provider's default (DeepSeek and
// the offline demo read none; the others do). Front doors ask before
// sending an image, so a text-only model is refused with a reason instead
// of receiving a placeholder.
func AcceptsImages(cfg Config, model string) bool {
	for range 8 { // aliases may chain; resolveAliases rejects cycles
		target, ok := cfg.Aliases[model]
		if !ok {
			break
		}
		model = target
	}
	provider, id, ok := strings.Cut(model, "/")
	if !ok || provider == "" || provider == "demo" {
		return false
	}
	pc := cfg.Providers[provider]
	for _, m := range pc.Models {
		if strings.TrimPrefix(m.ID, provider+"/") == id && m.Images != nil {
			return *m.Images
		}
	}
	if pc.NoImages != nil {
		return !*pc.NoImages
	}
	return provider != "deepseek"
}
