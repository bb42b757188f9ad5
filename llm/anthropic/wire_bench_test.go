package anthropic

import (
	"testing"

	"github.com/dshq/dsh/internal/wiretest"
)

// BenchmarkRequestBody: "whole" marshals the whole request (the encoder
// before the wire cache), "cached" is RequestBody (see wiretest.Bench).
func BenchmarkRequestBody(b *testing.B) {
	wiretest.Bench(b, "anthropic/claude-sonnet-4-5", func() map[string]wiretest.Encoder {
		a, err := New(Config{Provider: "anthropic", BaseURL: DefaultBaseURL})
		if err != nil {
			b.Fatal(err)
		}
		return map[string]wiretest.Encoder{"whole": a.wholeBody, "cached": a.RequestBody}
	})
}
