// Package brave is the Brave Search provider
// (https://api.search.brave.com): GET /res/v1/web/search with the
// X-Subscription-Token header.
package brave

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dshq/dsh/web"
	"github.com/dshq/dsh/web/search/internal/api"
)

// Provider id and defaults.
const (
	ID             = "brave"
	DefaultBaseURL = "https://api.search.brave.com/res/v1"
	DefaultCount   = 10
	MaxCount       = 20 // the API's limit
	DefaultTimeout = 30 * time.Second
)

// Config configures the provider.
type Config struct {
	// APIKey is the subscription token (BRAVE_API_KEY); empty makes the
	// provider unavailable.
	APIKey     string
	BaseURL    string // DefaultBaseURL when empty
	HTTPClient *http.Client
	Timeout    time.Duration
}

// Provider searches with Brave.
type Provider struct{ c Config }

var _ web.SearchProvider = (*Provider)(nil)

// New returns a provider.
func New(c Config) *Provider {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
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
		return errors.New("BRAVE_API_KEY is not set")
	}
	return api.CheckBase(p.c.BaseURL)
}

type response struct {
	Web *struct {
		Results []struct {
			Title         string   `json:"title"`
			URL           string   `json:"url"`
			Description   string   `json:"description"`
			PageAge       string   `json:"page_age"`
			Age           string   `json:"age"`
			ExtraSnippets []string `json:"extra_snippets"`
		} `json:"results"`
	} `json:"web"`
}

// Search implements web.SearchProvider. Domain filters become search
// operators (site:, -site:); the service filters the answer again.
func (p *Provider) Search(ctx context.Context, req web.SearchRequest) (*web.SearchResult, error) {
	q := req.Query
	if len(req.AllowedDomains) == 1 {
		q += " site:" + req.AllowedDomains[0]
	}
	for _, d := range req.BlockedDomains {
		q += " -site:" + d
	}
	v := url.Values{"q": {q}, "count": {strconv.Itoa(api.Count(req.Count, DefaultCount, MaxCount))}}
	hreq, err := http.NewRequest(http.MethodGet, api.Join(p.c.BaseURL, "web/search")+"?"+v.Encode(), nil)
	if err != nil {
		return nil, web.Wrap(web.CodeProviderUnavailable, err, "Brave Search is misconfigured: %v", err)
	}
	hreq.Header.Set("X-Subscription-Token", p.c.APIKey)
	var resp response
	if err := p.endpoint().Do(ctx, hreq, &resp); err != nil {
		return nil, err
	}
	out := &web.SearchResult{Provider: ID, Query: req.Query}
	if resp.Web == nil {
		return out, nil
	}
	for _, r := range resp.Web.Results {
		if strings.TrimSpace(r.URL) == "" {
			continue
		}
		src := web.Source{URL: strings.TrimSpace(r.URL), Title: api.PlainText(r.Title), Snippet: api.PlainText(r.Description), Published: api.Date(r.PageAge)}
		if src.Published == "" {
			src.Published = strings.TrimSpace(r.Age)
		}
		out.Sources = append(out.Sources, src)
	}
	return out, nil
}

func (p *Provider) endpoint() api.Endpoint {
	return api.Endpoint{
		Name: "Brave Search", Credential: "BRAVE_API_KEY", Client: p.c.HTTPClient, Timeout: p.c.Timeout,
		Detail: detail,
		// Brave answers an invalid or missing token with 422
		// SUBSCRIPTION_TOKEN_INVALID: that is a rejected credential.
		Rejected: func(status int, body []byte) bool {
			return status == http.StatusUnprocessableEntity && strings.Contains(errorCode(body), "TOKEN")
		},
	}
}

type errorBody struct {
	Error struct {
		Code   string `json:"code"`
		Detail string `json:"detail"`
	} `json:"error"`
}

func errorCode(body []byte) string {
	var e errorBody
	_ = json.Unmarshal(body, &e)
	return e.Error.Code
}

func detail(status int, body []byte) string {
	var e errorBody
	if json.Unmarshal(body, &e) == nil && e.Error.Detail != "" {
		return e.Error.Detail
	}
	return api.ErrorDetail(status, body)
}
