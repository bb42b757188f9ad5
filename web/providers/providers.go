// Package providers builds dsh's default web service: the local fetcher
// and every search provider, configured from settings and the environment.
// A search provider without its credential is registered but unavailable,
// so selection (and the web_search tool's presence) follows the keys the
// user has.
package providers

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/web"
	"github.com/dshq/dsh/web/fetch"
	"github.com/dshq/dsh/web/search/brave"
	"github.com/dshq/dsh/web/search/deepseek"
	"github.com/dshq/dsh/web/search/exa"
	"github.com/dshq/dsh/web/search/perplexity"
	"github.com/dshq/dsh/web/search/searxng"
)

// Environment variables read by [New].
const (
	EnvSearchProvider = "DSH_WEB_SEARCH_PROVIDER"
	EnvFetchProvider  = "DSH_WEB_FETCH_PROVIDER"
	EnvExaKey         = "EXA_API_KEY"
	EnvPerplexityKey  = "PERPLEXITY_API_KEY"
	EnvDeepSeekKey    = "DEEPSEEK_API_KEY"
	EnvBraveKey       = "BRAVE_API_KEY"
	EnvBraveKeyAlt    = "BRAVE_SEARCH_API_KEY"
	EnvSearXNGURL     = "SEARXNG_URL"
)

// Config is the web section of the settings plus what tests and embedders
// override. Zero values take the defaults; keys and base URLs left empty
// come from the environment.
type Config struct {
	// SearchProvider / FetchProvider pin a provider by id; empty lets the
	// service choose (DSH_WEB_SEARCH_PROVIDER / DSH_WEB_FETCH_PROVIDER
	// are read when empty).
	SearchProvider string
	FetchProvider  string
	// AllowPrivateNetworks lets web_fetch reach loopback and private
	// addresses.
	AllowPrivateNetworks bool
	// Fetch tunes the local fetcher (its AllowPrivateNetworks is ORed with
	// the field above).
	Fetch fetch.Options
	// Per-provider settings.
	Exa        exa.Config
	Perplexity perplexity.Config
	DeepSeek   deepseek.Config
	Brave      brave.Config
	SearXNG    searxng.Config
	// DisableSearch registers no search provider (web_search is then
	// absent).
	DisableSearch bool
	// Service tunes selection and the fetch cache (its pins are
	// overwritten by SearchProvider and FetchProvider).
	Service web.Options
}

// Settings is the "web" key of the settings files. A higher layer that
// sets it replaces a lower one's whole value.
type Settings struct {
	AllowPrivateNetworks bool   `json:"allowPrivateNetworks,omitempty"`
	SearchProvider       string `json:"searchProvider,omitempty"`
	FetchProvider        string `json:"fetchProvider,omitempty"`
}

// Key is the web capability's settings key.
var Key = settings.Key[*Settings]{Name: "web"}

// FromSettings returns the Config of a settings web section (nil: the
// defaults).
func FromSettings(w *Settings) Config {
	if w == nil {
		return Config{}
	}
	return Config{SearchProvider: w.SearchProvider, FetchProvider: w.FetchProvider, AllowPrivateNetworks: w.AllowPrivateNetworks}
}

// New builds the service: the local fetcher plus the Exa, Brave, SearXNG,
// Perplexity and DeepSeek search providers. env reads the environment
// (nil: nothing is read); client is used for the search APIs (nil:
// http.DefaultClient) — the fetcher always uses its own guarded transport.
// A pinned provider id that names no provider is an error (a typo in the
// settings); a pinned provider without its credential is not — it is
// reported when selected. Close the service to release the fetcher's
// connections.
func New(c Config, env func(string) string, client *http.Client) (*web.Service, error) {
	if env == nil {
		env = func(string) string { return "" }
	}
	get := func(v string, names ...string) string {
		if strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
		for _, n := range names {
			if s := strings.TrimSpace(env(n)); s != "" {
				return s
			}
		}
		return ""
	}
	so := c.Service
	so.SearchProvider = get(c.SearchProvider, EnvSearchProvider)
	so.FetchProvider = get(c.FetchProvider, EnvFetchProvider)
	svc := web.NewService(so)

	fo := c.Fetch
	fo.AllowPrivateNetworks = fo.AllowPrivateNetworks || c.AllowPrivateNetworks
	f := fetch.New(fo)
	mustRegister(svc.RegisterFetch(f))

	if !c.DisableSearch {
		ex := c.Exa
		ex.APIKey = get(ex.APIKey, EnvExaKey)
		pp := c.Perplexity
		pp.APIKey = get(pp.APIKey, EnvPerplexityKey)
		ds := c.DeepSeek
		ds.APIKey = get(ds.APIKey, EnvDeepSeekKey)
		br := c.Brave
		br.APIKey = get(br.APIKey, EnvBraveKey, EnvBraveKeyAlt)
		sx := c.SearXNG
		sx.BaseURL = get(sx.BaseURL, EnvSearXNGURL)
		for _, cl := range []**http.Client{&ex.HTTPClient, &pp.HTTPClient, &ds.HTTPClient, &br.HTTPClient, &sx.HTTPClient} {
			if *cl == nil {
				*cl = client
			}
		}
		for _, p := range []web.SearchProvider{exa.New(ex), brave.New(br), searxng.New(sx), perplexity.New(pp), deepseek.New(ds)} {
			mustRegister(svc.RegisterSearch(p))
		}
	}
	for _, pin := range []struct {
		kind, id string
		ids      []string
	}{
		{"search", so.SearchProvider, svc.SearchProviders()},
		{"fetch", so.FetchProvider, svc.FetchProviders()},
	} {
		if pin.id != "" && !slices.Contains(pin.ids, pin.id) {
			_ = svc.Close()
			return nil, fmt.Errorf("web: unknown %s provider %q (known: %s)", pin.kind, pin.id, strings.Join(pin.ids, ", "))
		}
	}
	return svc, nil
}

// mustRegister: the ids above are distinct, so registration cannot fail.
func mustRegister(_ func(), err error) {
	if err != nil {
		panic(err)
	}
}
