package anthropic

import (
	"net/http"
	"strings"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/sse"
)

// DefaultVersion is the anthropic-version header sent when Config.Version
// is empty.
const DefaultVersion = "2023-06-01"

// DefaultBaseURL is the API root of the anthropic preset.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens is the output limit sent when neither the request nor
// the model's known limit says otherwise (Anthropic requires one).
const DefaultMaxTokens = 8192

// Config configures one Anthropic Messages provider.
type Config struct {
	// Provider names the provider: model-reference prefix and error name.
	Provider string
	// BaseURL is the API root; requests go to its path + "/v1/messages",
	// a query string kept after the joined path; a fragment is an error.
	BaseURL string
	// APIKey is sent as x-api-key. When it is empty and APIKeyEnv is set,
	// every request fails with CodeAuth naming that variable.
	APIKey    string
	APIKeyEnv string
	// Version is the anthropic-version header (default DefaultVersion).
	Version string
	// Headers are added to every request (anthropic-beta, for instance).
	Headers    map[string]string
	HTTPClient *http.Client
	Transport  sse.Options

	// Models gives per-model output limits (bare ids) used for max_tokens
	// when the request sets none.
	Models []llm.ModelInfo
	// MaxTokens caps the default output limit (0: 32000).
	MaxTokens int
	// ThinkingBudget > 0 enables extended thinking with that many tokens.
	// Temperature is then not sent (the API only accepts the default).
	ThinkingBudget int
	// NoAutoCache disables the automatic prompt-cache breakpoints (end of
	// tools, end of system, end of the last message). Explicit Cache hints
	// on blocks are always honoured.
	NoAutoCache bool
	UserAgent   string
}

// Preset is the built-in anthropic provider; its Config.Models are the
// models it serves (bare ids).
type Preset struct {
	Config
	BaseURLEnv string
}

// Anthropic returns the anthropic preset: ANTHROPIC_API_KEY and
// ANTHROPIC_BASE_URL.
func Anthropic() Preset {
	models := []llm.ModelInfo{
		{ID: "claude-sonnet-4-5", ContextWindow: 200_000, MaxOutput: 64_000},
		{ID: "claude-opus-4-5", ContextWindow: 200_000, MaxOutput: 64_000},
		{ID: "claude-haiku-4-5", ContextWindow: 200_000, MaxOutput: 64_000},
		{ID: "claude-opus-4-1", ContextWindow: 200_000, MaxOutput: 32_000},
		{ID: "claude-sonnet-4-0", ContextWindow: 200_000, MaxOutput: 64_000},
	}
	return Preset{
		Config: Config{
			Provider:  "anthropic",
			BaseURL:   DefaultBaseURL,
			APIKeyEnv: "ANTHROPIC_API_KEY",
			Models:    models,
		},
		BaseURLEnv: "ANTHROPIC_BASE_URL",
	}
}

// Resolve fills the key and (unless explicitBaseURL) the base URL from the
// environment.
func (p Preset) Resolve(env func(string) string, explicitBaseURL bool) Config {
	c := p.Config
	if env != nil {
		if c.APIKey == "" && c.APIKeyEnv != "" {
			c.APIKey = env(c.APIKeyEnv)
		}
		if !explicitBaseURL && p.BaseURLEnv != "" {
			if v := strings.TrimSpace(env(p.BaseURLEnv)); v != "" {
				c.BaseURL = v
			}
		}
	}
	return c
}
