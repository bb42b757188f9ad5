package openai

import (
	"testing"

	"github.com/dshq/dsh/internal/wiretest"
)

// BenchmarkRequestBody: "whole" marshals the whole request (the encoder
// before the wire cache), "cached" is RequestBody (see wiretest.Bench);
// the DeepSeek preset, whose reasoning replay makes encodings positional.
func BenchmarkRequestBody(b *testing.B) {
	wiretest.Bench(b, "deepseek/deepseek-chat", func() map[string]wiretest.Encoder {
		a, err := New(DeepSeek().Config)
		if err != nil {
			b.Fatal(err)
		}
		return map[string]wiretest.Encoder{"whole": a.wholeBody, "cached": a.RequestBody}
	})
}
