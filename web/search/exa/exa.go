// Package exa is the Exa search provider (https://exa.ai): POST /search
// with the x-api-key header, asking for highlights as snippets.
package exa

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
	ID             = "exa"
	DefaultBaseURL = "https://api.exa.ai"
	DefaultType    = "auto"
	DefaultCount   = 10
	MaxCount       = 100
	DefaultTimeout = 30 * time.Second
)

// Config configures the provider.
type Config struct {
	// APIKey is the Exa key (EXA_API_KEY); empty makes the provider
	// unavailable.
	APIKey  string
	BaseURL string // DefaultBaseURL when empty
	// Type is Exa's search type: auto, neural, keyword, fast (DefaultType
	// when empty).
	Type       string
	HTTPClient *http.Client
	Timeout    time.Duration
}

// Provider searches with Exa.
type Provider struct{ c Config }

var _ web.SearchProvider = (*Provider)(nil)

// New returns a provider.
func New(c Config) *Provider {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.Type == "" {
		c.Type = DefaultType
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
		return errors.New("EXA_API_KEY is not set")
	}
	return api.CheckBase(p.c.BaseURL)
}

type request struct {
	Query          string   `json:"query"`
	Type           string   `json:"type"`
	NumResults     int      `json:"numResults"`
	IncludeDomains []string `json:"includeDomains,omitempty"`
	ExcludeDomains []string `json:"excludeDomains,omitempty"`
	Contents       contents `json:"contents"`
}

type contents struct {
	Highlights highlights `json:"highlights"`
}

type highlights struct {
	NumSentences     int `json:"numSentences"`
	HighlightsPerURL int `json:"highlightsPerUrl"`
}

type response struct {
	Results []struct {
		URL           string   `json:"url"`
		Title         *string  `json:"title"`
		PublishedDate *string  `json:"publishedDate"`
		Author        *string  `json:"author"`
		Highlights    []string `json:"highlights"`
		Summary       string   `json:"summary"`
		Text          string   `json:"text"`
	} `json:"results"`
}

// Search implements web.SearchProvider.
func (p *Provider) Search(ctx context.Context, req web.SearchRequest) (*web.SearchResult, error) {
	body, err := json.Marshal(request{
		Query:          req.Query,
		Type:           p.c.Type,
		NumResults:     api.Count(req.Count, DefaultCount, MaxCount),
		IncludeDomains: req.AllowedDomains,
		ExcludeDomains: req.BlockedDomains,
		Contents:       contents{Highlights: highlights{NumSentences: 3, HighlightsPerURL: 1}},
	})
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequest(http.MethodPost, api.Join(p.c.BaseURL, "search"), bytes.NewReader(body))
	if err != nil {
		return nil, web.Wrap(web.CodeProviderUnavailable, err, "Exa is misconfigured: %v", err)
	}
	hreq.Header.Set("x-api-key", p.c.APIKey)
	hreq.Header.Set("Content-Type", "application/json")
	var resp response
	if err := p.endpoint().Do(ctx, hreq, &resp); err != nil {
		return nil, err
	}
	out := &web.SearchResult{Provider: ID, Query: req.Query}
	for _, r := range resp.Results {
		if strings.TrimSpace(r.URL) == "" {
			continue
		}
		src := web.Source{URL: strings.TrimSpace(r.URL), Title: api.PlainText(deref(r.Title)), Published: api.Date(deref(r.PublishedDate))}
		for _, h := range r.Highlights {
			if s := api.PlainText(h); s != "" {
				src.Snippet = s
				break
			}
		}
		if src.Snippet == "" {
			src.Snippet = api.PlainText(r.Summary)
		}
		out.Sources = append(out.Sources, src)
	}
	return out, nil
}

func (p *Provider) endpoint() api.Endpoint {
	return api.Endpoint{Name: "Exa", Credential: "EXA_API_KEY", Client: p.c.HTTPClient, Timeout: p.c.Timeout}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
