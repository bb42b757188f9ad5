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

func TestTableOverrides(t *testing.T) {
	read := 0.5
	tab := NewTable(map[string]Setting{
		"local/qwen3":       {Input: 1, Output: 2},                    // exact reference
		"claude-sonnet-4":   {Input: 2, Output: 10, CacheRead: &read}, // prefix, over the list price
		"Claude-Sonnet-4-5": {Input: 2.5, Output: 12},                 // a longer prefix wins; names fold case
	})
	for _, tc := range []struct {
		model string
		want  Price
		ok    bool
	}{
		{"local/qwen3", Price{Input: 1, Output: 2, CacheRead: 1, CacheWrite: 1}, true},
		{"local/qwen3-coder", Price{}, false}, // exact means exact
		{"anthropic/claude-sonnet-4-20250514", Price{Input: 2, Output: 10, CacheRead: 0.5, CacheWrite: 2}, true},
		{"anthropic/claude-sonnet-4-5-20250929", Price{Input: 2.5, Output: 12, CacheRead: 2.5, CacheWrite: 2.5}, true},
		{"deepseek/deepseek-chat", Price{Input: 0.28, Output: 0.42, CacheRead: 0.028, CacheWrite: 0.28}, true}, // built in
	} {
		p, ok := tab.Lookup(tc.model)
		if ok != tc.ok || p != tc.want {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v, %v", tc.model, p, ok, tc.want, tc.ok)
		}
	}
	// Cache reads and writes are priced apart from plain input.
	u := llm.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000, CacheReadTokens: 2_000_000, CacheWriteTokens: 1_000_000}
	if got, _ := tab.Cost("anthropic/claude-sonnet-4-0", u); math.Abs(got-(2+10+1+2)) > 1e-9 {
		t.Fatalf("cost %v", got)
	}
	var nilTab *Table
	if p, ok := nilTab.Lookup("openai/gpt-4o"); !ok || p.Input != 2.5 {
		t.Fatalf("a nil table is the built-in one: %+v %v", p, ok)
	}
}

func TestTally(t *testing.T) {
	var c Tally
	c.Add(nil, "deepseek/deepseek-chat", llm.Usage{InputTokens: 1_000_000})
	if c.Unpriced || math.Abs(c.USD-0.28) > 1e-9 {
		t.Fatalf("%+v", c)
	}
	c.Add(nil, "local/x", llm.Usage{InputTokens: 5})
	if !c.Unpriced || math.Abs(c.USD-0.28) > 1e-9 {
		t.Fatalf("%+v", c)
	}
	for usd, want := range map[float64]string{0: "$0.00", 0.00123: "$0.0012", 1.5: "$1.50", 240.4: "$240"} {
		if got := Format(usd); got != want {
			t.Errorf("Format(%v) = %q, want %q", usd, got, want)
		}
	}
}

func TestKeyValidates(t *testing.T) {
	neg := -1.0
	for _, bad := range []map[string]Setting{{"x/y": {Input: -1}}, {"x/y": {CacheWrite: &neg}}, {" ": {}}} {
		if err := Key.Validate(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if err := Key.Validate(map[string]Setting{"x/y": {Input: 1, Output: 2}}); err != nil {
		t.Fatal(err)
	}
}

// Builtin is the table Lookup reads: every row's prefix looks up its price.
func TestBuiltinAgreesWithLookup(t *testing.T) {
	rows := Builtin()
	if len(rows) == 0 {
		t.Fatal("empty table")
	}
	for _, r := range rows {
		p, ok := Lookup("provider/" + r.Prefix)
		if !ok || p != r.Price {
			t.Errorf("Lookup(%q) = %v, %v; the table says %v", r.Prefix, p, ok, r.Price)
		}
	}
	rows[0].Prefix = "changed"
	if Builtin()[0].Prefix == "changed" {
		t.Error("Builtin returned the table itself, not a copy")
	}
}
