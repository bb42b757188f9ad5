// Package deepseek is the DeepSeek search provider: one call to DeepSeek's
// Anthropic-compatible Messages API (POST {base}/messages) offering the
// server-side web_search tool; the tool's results become the sources and
// the answer's citations their snippets. If the model answers without
// searching, the call fails rather than passing prose off as results.
package deepseek

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/dshq/dsh/web"
	"github.com/dshq/dsh/web/search/internal/api"
)

// Provider id and defaults.
const (
	ID                = "deepseek"
	DefaultBaseURL    = "https://api.deepseek.com/anthropic/v1"
	DefaultModel      = "deepseek-v4-flash"
	DefaultAPIVersion = "2023-06-01"
	DefaultMaxTokens  = 4096
	DefaultMaxUses    = 5
	DefaultTimeout    = 90 * time.Second
)

// Config configures the provider.
type Config struct {
	// APIKey is the DeepSeek key (DEEPSEEK_API_KEY, shared with the model
	// adapter); empty makes the provider unavailable.
	APIKey     string
	BaseURL    string // DefaultBaseURL when empty
	Model      string // DefaultModel when empty
	APIVersion string // DefaultAPIVersion when empty
	MaxTokens  int    // DefaultMaxTokens when 0
	MaxUses    int    // searches the model may run per call; DefaultMaxUses when 0
	HTTPClient *http.Client
	Timeout    time.Duration
}

// Provider searches through DeepSeek's native web search.
type Provider struct{ c Config }

var _ web.SearchProvider = (*Provider)(nil)

// New returns a provider.
func New(c Config) *Provider {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.APIVersion == "" {
		c.APIVersion = DefaultAPIVersion
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	if c.MaxUses <= 0 {
		c.MaxUses = DefaultMaxUses
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	return &Provider{c: c}
}

// ID implements web.SearchProvider.
func (p *Provider) ID() string { return ID }

// Available implements web.SearchProvider.
func (p *Provider) Available() error {
	if strings.TrimSpace(p.c.APIKey) == "" {
		return errors.New("DEEPSEEK_API_KEY is not set")
	}
	return api.CheckBase(p.c.BaseURL)
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type message struct {
	Role    string      `json:"role"`
	Content []textBlock `json:"content"`
}

type searchTool struct {
	Type           string   `json:"type"`
	Name           string   `json:"name"`
	MaxUses        int      `json:"max_uses"`
	AllowedDomains []string `json:"allowed_domains,omitempty"`
	BlockedDomains []string `json:"blocked_domains,omitempty"`
}

type request struct {
	Model     string       `json:"model"`
	MaxTokens int          `json:"max_tokens"`
	Messages  []message    `json:"messages"`
	Tools     []searchTool `json:"tools"`
}

type block struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	Citations []struct {
		URL       string `json:"url"`
		CitedText string `json:"cited_text"`
	} `json:"citations"`
	// Content of a web_search_tool_result: a list of results, or an error
	// object.
	Content json.RawMessage `json:"content"`
}

type result struct {
	Type    string `json:"type"`
	URL     string `json:"url"`
	Title   string `json:"title"`
	PageAge string `json:"page_age"`
}

type toolError struct {
	Type      string `json:"type"`
	ErrorCode string `json:"error_code"`
}

type response struct {
	Content []block `json:"content"`
}

// Search implements web.SearchProvider. Domain filters go to the search
// tool (the API takes allowed or blocked domains, not both; allowed win and
// the service applies the blocked ones afterwards).
func (p *Provider) Search(ctx context.Context, req web.SearchRequest) (*web.SearchResult, error) {
	tool := searchTool{Type: "web_search_20250305", Name: "web_search", MaxUses: p.c.MaxUses}
	if len(req.AllowedDomains) > 0 {
		tool.AllowedDomains = req.AllowedDomains
	} else {
		tool.BlockedDomains = req.BlockedDomains
	}
	body, err := json.Marshal(request{
		Model:     p.c.Model,
		MaxTokens: p.c.MaxTokens,
		Messages:  []message{{Role: "user", Content: []textBlock{{Type: "text", Text: "Perform a web search for the query: " + req.Query}}}},
		Tools:     []searchTool{tool},
	})
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequest(http.MethodPost, api.Join(p.c.BaseURL, "messages"), bytes.NewReader(body))
	if err != nil {
		return nil, web.Wrap(web.CodeProviderUnavailable, err, "DeepSeek is misconfigured: %v", err)
	}
	hreq.Header.Set("x-api-key", p.c.APIKey)
	hreq.Header.Set("Authorization", "Bearer "+p.c.APIKey)
	hreq.Header.Set("anthropic-version", p.c.APIVersion)
	hreq.Header.Set("Content-Type", "application/json")
	var resp response
	ep := api.Endpoint{Name: "DeepSeek", Credential: "DEEPSEEK_API_KEY", Client: p.c.HTTPClient, Timeout: p.c.Timeout}
	if err := ep.Do(ctx, hreq, &resp); err != nil {
		return nil, err
	}
	return mapResponse(req.Query, resp)
}

func mapResponse(query string, resp response) (*web.SearchResult, error) {
	snippets := map[string]string{}
	for _, b := range resp.Content {
		if b.Type != "text" {
			continue
		}
		for _, c := range b.Citations {
			u, txt := strings.TrimSpace(c.URL), api.PlainText(c.CitedText)
			if u != "" && txt != "" && snippets[u] == "" {
				snippets[u] = txt
			}
		}
	}
	out := &web.SearchResult{Provider: ID, Query: query}
	seen := map[string]bool{}
	searched := false
	var failure string
	for _, b := range resp.Content {
		if b.Type != "web_search_tool_result" {
			continue
		}
		searched = true
		var results []result
		if err := json.Unmarshal(b.Content, &results); err != nil {
			var te toolError
			if json.Unmarshal(b.Content, &te) == nil && te.ErrorCode != "" {
				failure = te.ErrorCode
			}
			continue
		}
		for _, r := range results {
			u := strings.TrimSpace(r.URL)
			if r.Type != "web_search_result" || u == "" || seen[u] {
				continue
			}
			seen[u] = true
			out.Sources = append(out.Sources, web.Source{URL: u, Title: api.PlainText(r.Title), Snippet: snippets[u], Published: strings.TrimSpace(r.PageAge)})
		}
	}
	switch {
	case !searched:
		return nil, web.Errorf(web.CodeProviderError, "DeepSeek answered without running a web search; try again or rephrase the query")
	case len(out.Sources) == 0 && failure == "too_many_requests":
		return nil, web.Wrap(web.CodeRateLimited, &web.RateLimit{}, "DeepSeek web search rate limit reached; wait before retrying")
	case len(out.Sources) == 0 && failure != "":
		return nil, web.Errorf(web.CodeProviderError, "DeepSeek web search failed: %s", failure)
	}
	return out, nil
}
