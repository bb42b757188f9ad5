// Package searxng is the SearXNG search provider: GET {base}/search?format=json
// on a self-hosted (or trusted) SearXNG instance. The instance must have
// the json format enabled (search.formats in its settings.yml).
package searxng

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/dshq/dsh/web"
	"github.com/dshq/dsh/web/search/internal/api"
)

// Provider id and defaults.
const (
	ID             = "searxng"
	DefaultTimeout = 30 * time.Second
)

// Config configures the provider.
type Config struct {
	// BaseURL is the instance (SEARXNG_URL, e.g. http://localhost:8888);
	// empty makes the provider unavailable.
	BaseURL string
	// APIKey, when the instance sits behind a proxy that wants one, is
	// sent as a bearer token.
	APIKey     string
	HTTPClient *http.Client
	Timeout    time.Duration
}

// Provider searches with SearXNG.
type Provider struct{ c Config }

var _ web.SearchProvider = (*Provider)(nil)

// New returns a provider.
func New(c Config) *Provider {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	return &Provider{c: c}
}

// ID implements web.SearchProvider.
func (p *Provider) ID() string { return ID }

// Available implements web.SearchProvider.
func (p *Provider) Available() error {
	if strings.TrimSpace(p.c.BaseURL) == "" {
		return errors.New("SEARXNG_URL is not set")
	}
	return api.CheckBase(p.c.BaseURL)
}

type response struct {
	Results []struct {
		URL           string  `json:"url"`
		Title         string  `json:"title"`
		Content       string  `json:"content"`
		PublishedDate *string `json:"publishedDate"`
	} `json:"results"`
}

// Search implements web.SearchProvider. SearXNG returns one page of
// results (about 10–30, fewer per engine); domain filters are applied by
// the service.
func (p *Provider) Search(ctx context.Context, req web.SearchRequest) (*web.SearchResult, error) {
	v := url.Values{"q": {req.Query}, "format": {"json"}}
	hreq, err := http.NewRequest(http.MethodGet, api.Join(p.c.BaseURL, "search")+"?"+v.Encode(), nil)
	if err != nil {
		return nil, web.Wrap(web.CodeProviderUnavailable, err, "SearXNG is misconfigured: %v", err)
	}
	if p.c.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+p.c.APIKey)
	}
	var resp response
	ep := api.Endpoint{Name: "SearXNG", Credential: "SEARXNG_URL and that the instance enables the json format (search.formats)", Client: p.c.HTTPClient, Timeout: p.c.Timeout}
	if err := ep.Do(ctx, hreq, &resp); err != nil {
		return nil, err
	}
	out := &web.SearchResult{Provider: ID, Query: req.Query}
	for _, r := range resp.Results {
		if u := strings.TrimSpace(r.URL); u != "" {
			src := web.Source{URL: u, Title: api.PlainText(r.Title), Snippet: api.PlainText(r.Content)}
			if r.PublishedDate != nil {
				src.Published = api.Date(*r.PublishedDate)
			}
			out.Sources = append(out.Sources, src)
		}
	}
	return out, nil
}
