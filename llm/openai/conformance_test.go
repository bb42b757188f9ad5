package openai

import (
	"testing"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/conformance"
)

func TestConformance(t *testing.T) {
	for _, provider := range []string{"deepseek", "openai"} {
		t.Run(provider, func(t *testing.T) {
			conformance.Run(t, conformance.Factory{
				Dialect:  "openai",
				Provider: provider,
				New: func(t testing.TB, baseURL string, opts conformance.Options) llm.Adapter {
					a, err := New(Config{Provider: provider, BaseURL: baseURL, APIKey: "sk-test",
						HTTPClient: opts.HTTPClient, Transport: opts.Transport})
					if err != nil {
						t.Fatal(err)
					}
					return a
				},
			})
		})
	}
}
