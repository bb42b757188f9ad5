// Package perplexity is the Perplexity search provider
// (https://docs.perplexity.ai): a Sonar chat completion
// (POST /chat/completions) whose answer becomes the summary and whose
// search_results (or, on older responses, citations) become the sources.
package perplexity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/web"
	"github.com/dshq/dsh/web/search/internal/api"
)

// Provider id and defaults.
const (
	ID               = "perplexity"
	DefaultBaseURL   = "https://api.perplexity.ai"
	DefaultModel     = "sonar"
	DefaultMaxTokens = 1024
	DefaultTimeout   = 60 * time.Second
	// maxDomainFilters is the API's limit on search_domain_filter entries.
	maxDomainFilters = 20
)

// Config configures the provider.
type Config struct {
	// APIKey is the Perplexity key (PERPLEXITY_API_KEY); empty makes the
	// provider unavailable.
	APIKey    string
	BaseURL   string // DefaultBaseURL when empty
	Model     string // DefaultModel when empty
	MaxTokens int    // DefaultMaxTokens when 0
	// Recency restricts results to the last day, week, month or year.
	Recency    string
	HTTPClient *http.Client
	Timeout    time.Duration
}

// Provider searches with Perplexity.
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
	if c.MaxTokens <= 0 {
		c.MaxTokens = DefaultMaxTokens
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
		return errors.New("PERPLEXITY_API_KEY is not set")
	}
	switch p.c.Recency {
	case "", "hour", "day", "week", "month", "year":
	default:
		return errors.New("recency must be hour, day, week, month or year")
	}
	return api.CheckBase(p.c.BaseURL)
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type request struct {
	Model               string    `json:"model"`
	MaxTokens           int       `json:"max_tokens"`
	Messages            []message `json:"messages"`
	SearchRecencyFilter string    `json:"search_recency_filter,omitempty"`
	SearchDomainFilter  []string  `json:"search_domain_filter,omitempty"`
}

type response struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	// SearchResults is a pointer so a present-but-empty list (no sources)
	// is told apart from an absent one (fall back to citations).
	SearchResults *[]struct {
		Title   string `json:"title"`
		URL     string `json:"url"`
		Date    string `json:"date"`
		Snippet string `json:"snippet"`
	} `json:"search_results"`
	Citations []string `json:"citations"`
}

var think = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)<think>.*?</think>`) })

// Search implements web.SearchProvider. Domain filters go to
// search_domain_filter (blocked ones prefixed with "-", at most 20).
func (p *Provider) Search(ctx context.Context, req web.SearchRequest) (*web.SearchResult, error) {
	var filter []string
	filter = append(filter, req.AllowedDomains...)
	for _, d := range req.BlockedDomains {
		filter = append(filter, "-"+d)
	}
	if len(filter) > maxDomainFilters {
		filter = filter[:maxDomainFilters]
	}
	body, err := json.Marshal(request{
		Model:               p.c.Model,
		MaxTokens:           p.c.MaxTokens,
		Messages:            []message{{Role: "user", Content: req.Query}},
		SearchRecencyFilter: p.c.Recency,
		SearchDomainFilter:  filter,
	})
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequest(http.MethodPost, api.Join(p.c.BaseURL, "chat/completions"), bytes.NewReader(body))
	if err != nil {
		return nil, web.Wrap(web.CodeProviderUnavailable, err, "Perplexity is misconfigured: %v", err)
	}
	hreq.Header.Set("Authorization", "Bearer "+p.c.APIKey)
	hreq.Header.Set("Content-Type", "application/json")
	var resp response
	ep := api.Endpoint{Name: "Perplexity", Credential: "PERPLEXITY_API_KEY", Client: p.c.HTTPClient, Timeout: p.c.Timeout}
	if err := ep.Do(ctx, hreq, &resp); err != nil {
		return nil, err
	}
	out := &web.SearchResult{Provider: ID, Query: req.Query}
	if len(resp.Choices) > 0 {
		out.Answer = strings.TrimSpace(think().ReplaceAllString(resp.Choices[0].Message.Content, ""))
	}
	if resp.SearchResults != nil {
		for _, r := range *resp.SearchResults {
			if u := strings.TrimSpace(r.URL); u != "" {
				out.Sources = append(out.Sources, web.Source{URL: u, Title: api.PlainText(r.Title), Snippet: api.PlainText(r.Snippet), Published: api.Date(r.Date)})
			}
		}
	} else {
		for _, u := range resp.Citations {
			if u = strings.TrimSpace(u); u != "" {
				out.Sources = append(out.Sources, web.Source{URL: u})
			}
		}
	}
	return out, nil
}
