package anthropic

import (
	"testing"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/conformance"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Factory{
		Dialect:  "anthropic",
		Provider: "anthropic",
		New: func(t testing.TB, baseURL string, opts conformance.Options) llm.Adapter {
			a, err := New(Config{Provider: "anthropic", BaseURL: baseURL, APIKey: "sk-ant-test",
				HTTPClient: opts.HTTPClient, Transport: opts.Transport})
			if err != nil {
				t.Fatal(err)
			}
			return a
		},
	})
}
