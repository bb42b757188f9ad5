package openai

import (
	"net/http"
	"strings"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/sse"
)

// ReasoningReplay says which assistant messages carry their reasoning back
// to the provider as reasoning_content.
type ReasoningReplay string

// Replay policies.
const (
	// ReplayNone never sends reasoning_content (OpenAI rejects it).
	ReplayNone ReasoningReplay = ""
	// ReplayCurrentTurn sends it for the assistant messages after the last
	// user message that is a real prompt (not only tool results): the
	// current tool loop.
	ReplayCurrentTurn ReasoningReplay = "current-turn"
	// ReplayToolTurns is DeepSeek's thinking-mode rule: the current tool
	// loop, plus every earlier turn (the messages between two real prompts)
	// in which the model called tools — DeepSeek answers 400 when those
	// are missing. Reasoning of tool-free turns is dropped (the API ignores
	// it anyway). A message of such a turn that has no reasoning sends "".
	ReplayToolTurns ReasoningReplay = "tool-turns"
)

// Config configures one OpenAI-compatible provider.
type Config struct {
	// Provider names the provider: the prefix of its model references
	// ("deepseek" in "deepseek/deepseek-v4-flash") and the name in errors.
	Provider string
	// BaseURL is the API root; requests go to its path + "/chat/completions"
	// ("https://api.deepseek.com", "https://api.openai.com/v1"). A query
	// string is kept after the joined path (Azure's
	// ".../openai/deployments/NAME?api-version=2024-10-21"); a fragment is
	// an error.
	BaseURL string
	// APIKey is sent as a bearer token. When it is empty and APIKeyEnv is
	// set, every request fails with CodeAuth naming that variable.
	APIKey    string
	APIKeyEnv string
	// Headers are added to every request (after the defaults).
	Headers map[string]string
	// HTTPClient performs the requests (nil: a shared default client).
	HTTPClient *http.Client
	// Transport holds the timeouts and the retry policy.
	Transport sse.Options

	// MaxTokensField is the wire name of the output limit: "max_tokens"
	// (default) or "max_completion_tokens" (OpenAI's current name).
	MaxTokensField string
	// ReasoningReplay selects the reasoning_content passback rule.
	ReasoningReplay ReasoningReplay
	// Thinking, when set, is sent as {"thinking":{"type":Thinking}}
	// (DeepSeek: "enabled" or "disabled").
	Thinking string
	// ReasoningEffort, when set, is sent as reasoning_effort.
	ReasoningEffort string
	// NoImages replaces image blocks by a short text note, for providers
	// that reject image parts.
	NoImages bool
	// NoStreamOptions omits stream_options (for servers that reject it;
	// usage may then be missing).
	NoStreamOptions bool
	// UserAgent overrides the User-Agent header.
	UserAgent string
}

// Preset is a built-in provider: its defaults, environment variables and
// known models (bare ids, without the provider prefix).
type Preset struct {
	Config
	BaseURLEnv string
	Models     []llm.ModelInfo
}

// Base URLs of the presets.
const (
	DeepSeekBaseURL = "https://api.deepseek.com"
	OpenAIBaseURL   = "https://api.openai.com/v1"
)

// DeepSeek returns the deepseek preset: DEEPSEEK_API_KEY, DEEPSEEK_BASE_URL,
// thinking-mode reasoning passback.
func DeepSeek() Preset {
	return Preset{
		Config: Config{
			Provider:        "deepseek",
			BaseURL:         DeepSeekBaseURL,
			APIKeyEnv:       "DEEPSEEK_API_KEY",
			MaxTokensField:  "max_tokens",
			ReasoningReplay: ReplayToolTurns,
			NoImages:        true,
		},
		BaseURLEnv: "DEEPSEEK_BASE_URL",
		Models: []llm.ModelInfo{
			{ID: "deepseek-v4-flash", ContextWindow: 1_048_576, MaxOutput: 393_216},
			{ID: "deepseek-v4-pro", ContextWindow: 1_048_576, MaxOutput: 393_216},
			{ID: "deepseek-flash", ContextWindow: 1_048_576, MaxOutput: 393_216},
			{ID: "deepseek-chat", ContextWindow: 131_072, MaxOutput: 8_192},
			{ID: "deepseek-reasoner", ContextWindow: 131_072, MaxOutput: 65_536},
		},
	}
}

// OpenAI returns the openai preset: OPENAI_API_KEY, OPENAI_BASE_URL.
func OpenAI() Preset {
	return Preset{
		Config: Config{
			Provider:       "openai",
			BaseURL:        OpenAIBaseURL,
			APIKeyEnv:      "OPENAI_API_KEY",
			MaxTokensField: "max_completion_tokens",
		},
		BaseURLEnv: "OPENAI_BASE_URL",
		Models: []llm.ModelInfo{
			{ID: "gpt-5", ContextWindow: 400_000, MaxOutput: 128_000},
			{ID: "gpt-5-mini", ContextWindow: 400_000, MaxOutput: 128_000},
			{ID: "gpt-4.1", ContextWindow: 1_047_576, MaxOutput: 32_768},
			{ID: "gpt-4.1-mini", ContextWindow: 1_047_576, MaxOutput: 32_768},
			{ID: "gpt-4o", ContextWindow: 128_000, MaxOutput: 16_384},
			{ID: "o4-mini", ContextWindow: 200_000, MaxOutput: 100_000},
		},
	}
}

// Resolve fills the key and base URL from the environment: the key from
// APIKeyEnv, the base URL from BaseURLEnv when set (an explicit non-default
// BaseURL in the preset's Config wins over the environment only when
// explicit is true).
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
