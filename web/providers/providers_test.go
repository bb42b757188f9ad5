package providers

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/web"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func build(t *testing.T, c Config, env map[string]string) *web.Service {
	t.Helper()
	svc, err := New(c, func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	return svc
}

func selected(svc *web.Service) string {
	p, err := svc.SearchProvider()
	if err != nil {
		return "none"
	}
	return p.ID()
}

func TestSelectionFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		env  map[string]string
		want string
	}{
		{"no keys", Config{}, nil, "none"},
		{"deepseek key only", Config{}, map[string]string{"DEEPSEEK_API_KEY": "k"}, "deepseek"},
		{"exa preferred over deepseek", Config{}, map[string]string{"DEEPSEEK_API_KEY": "k", "EXA_API_KEY": "k"}, "exa"},
		{"brave alternate variable", Config{}, map[string]string{"BRAVE_SEARCH_API_KEY": "k", "PERPLEXITY_API_KEY": "k"}, "brave"},
		{"searxng url", Config{}, map[string]string{"SEARXNG_URL": "http://localhost:8888", "PERPLEXITY_API_KEY": "k"}, "searxng"},
		{"env pin", Config{}, map[string]string{"DSH_WEB_SEARCH_PROVIDER": "perplexity", "PERPLEXITY_API_KEY": "k", "EXA_API_KEY": "k"}, "perplexity"},
		{"config pin beats env pin", Config{SearchProvider: "deepseek"}, map[string]string{"DSH_WEB_SEARCH_PROVIDER": "perplexity", "PERPLEXITY_API_KEY": "k", "DEEPSEEK_API_KEY": "k"}, "deepseek"},
		{"pinned without key", Config{SearchProvider: "exa"}, map[string]string{"DEEPSEEK_API_KEY": "k"}, "none"},
		{"key in config", Config{}.with(func(c *Config) { c.Exa.APIKey = "k" }), nil, "exa"},
		{"search disabled", Config{DisableSearch: true}, map[string]string{"EXA_API_KEY": "k"}, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := selected(build(t, tc.cfg, tc.env)); got != tc.want {
				t.Errorf("selected %s, want %s", got, tc.want)
			}
		})
	}
}

func (c Config) with(f func(*Config)) Config { f(&c); return c }

func TestUnknownPinIsAnError(t *testing.T) {
	_, err := New(Config{}, func(k string) string {
		if k == EnvFetchProvider {
			return "curl"
		}
		return ""
	}, nil)
	if err == nil || !strings.Contains(err.Error(), `unknown fetch provider "curl" (known: local)`) {
		t.Errorf("err = %v", err)
	}
}

func TestSettingsReachTheFetcher(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "dev server")
	}))
	defer srv.Close()
	ctx := context.Background()

	svc := build(t, FromSettings(nil), nil)
	_, err := svc.Fetch(ctx, web.FetchRequest{URL: srv.URL})
	if llm.CodeOf(err) != web.CodeBlocked {
		t.Fatalf("loopback by default: %v", err)
	}
	svc = build(t, FromSettings(&Settings{AllowPrivateNetworks: true, FetchProvider: "local"}), nil)
	r, err := svc.Fetch(ctx, web.FetchRequest{URL: srv.URL})
	if err != nil || r.Content != "dev server" || r.Provider != "local" {
		t.Fatalf("allowed: %+v %v", r, err)
	}
}
