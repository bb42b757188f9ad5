package pricing

import (
	"math"
	"testing"

	"github.com/dshq/dsh/llm"
)

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		model string
		in    float64
		ok    bool
	}{
		{"deepseek/deepseek-chat", 0.28, true},
		{"anthropic/claude-sonnet-4-5-20250929", 3, true},
		{"claude-opus-4-1-20250805", 15, true},
		{"claude-opus-4-5", 5, true},
		{"openai/gpt-4o-mini", 0.15, true},
		{"openai/gpt-4o", 2.5, true},
		{"local/qwen3", 0, false},
		{"demo", 0, false},
	} {
		p, ok := Lookup(tc.model)
		if ok != tc.ok || p.Input != tc.in {
			t.Errorf("Lookup(%q) = %+v, %v; want input %v, %v", tc.model, p, ok, tc.in, tc.ok)
		}
	}
}

func TestCost(t *testing.T) {
	u := llm.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 2_000_000, CacheWriteTokens: 10_000}
	got, ok := Cost("anthropic/claude-sonnet-4-5", u)
	want := 3 + 1.5 + 0.6 + 0.0375
	if !ok || math.Abs(got-want) > 1e-9 {
		t.Fatalf("Cost = %v, %v; want %v", got, ok, want)
	}
	if c, ok := Cost("nobody/knows", u); ok || c != 0 {
		t.Fatalf("unknown model cost %v, %v", c, ok)
	}
}
