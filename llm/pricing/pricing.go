// Package pricing estimates what model calls cost in US dollars from their
// token usage. It holds one table of list prices so every front door (the
// headless result's total_cost_usd, the terminal, ACP) shows the same
// figure. Figures are estimates, never a bill: providers discount, tier and
// change prices; a model the table does not know costs nothing and says so.
package pricing

import (
	"fmt"
	"strings"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/settings"
)

// Price is a model's list price in US dollars per million tokens.
type Price struct {
	Input      float64 // uncached input
	Output     float64 // output, reasoning included
	CacheRead  float64 // input served from the prompt cache
	CacheWrite float64 // input written to the prompt cache
}

// Cost is what usage costs at this price.
func (p Price) Cost(u llm.Usage) float64 {
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*p.CacheRead + float64(u.CacheWriteTokens)*p.CacheWrite) / 1e6
}

// entry matches a model id by prefix; the longest matching prefix wins,
// so "claude-opus-4-1" can be priced apart from "claude-opus-4".
type entry struct {
	prefix string
	price  Price
}

// table holds published list prices (USD per million tokens), late 2025.
// Cache writes are Anthropic's 5-minute rate; providers without a separate
// write price charge plain input for it.
var table = []entry{
	// DeepSeek (V3.2 pricing for both chat and reasoner).
	{"deepseek-chat", Price{Input: 0.28, Output: 0.42, CacheRead: 0.028, CacheWrite: 0.28}},
	{"deepseek-reasoner", Price{Input: 0.28, Output: 0.42, CacheRead: 0.028, CacheWrite: 0.28}},
	// Anthropic.
	{"claude-opus-4-5", Price{Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25}},
	{"claude-opus-4", Price{Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75}},
	{"claude-3-opus", Price{Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75}},
	{"claude-sonnet-4", Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}},
	{"claude-3-7-sonnet", Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}},
	{"claude-3-5-sonnet", Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}},
	{"claude-haiku-4-5", Price{Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25}},
	{"claude-3-5-haiku", Price{Input: 0.8, Output: 4, CacheRead: 0.08, CacheWrite: 1}},
	{"claude-3-haiku", Price{Input: 0.25, Output: 1.25, CacheRead: 0.03, CacheWrite: 0.3}},
	// OpenAI.
	{"gpt-5-mini", Price{Input: 0.25, Output: 2, CacheRead: 0.025, CacheWrite: 0.25}},
	{"gpt-5-nano", Price{Input: 0.05, Output: 0.4, CacheRead: 0.005, CacheWrite: 0.05}},
	{"gpt-5", Price{Input: 1.25, Output: 10, CacheRead: 0.125, CacheWrite: 1.25}},
	{"gpt-4.1-mini", Price{Input: 0.4, Output: 1.6, CacheRead: 0.1, CacheWrite: 0.4}},
	{"gpt-4.1-nano", Price{Input: 0.1, Output: 0.4, CacheRead: 0.025, CacheWrite: 0.1}},
	{"gpt-4.1", Price{Input: 2, Output: 8, CacheRead: 0.5, CacheWrite: 2}},
	{"gpt-4o-mini", Price{Input: 0.15, Output: 0.6, CacheRead: 0.075, CacheWrite: 0.15}},
	{"gpt-4o", Price{Input: 2.5, Output: 10, CacheRead: 1.25, CacheWrite: 2.5}},
	{"o4-mini", Price{Input: 1.1, Output: 4.4, CacheRead: 0.275, CacheWrite: 1.1}},
	{"o3", Price{Input: 2, Output: 8, CacheRead: 0.5, CacheWrite: 2}},
}

// Lookup returns the list price of a model. model may be a dsh reference
// ("anthropic/claude-sonnet-4-5") or a provider's id; dated suffixes
// ("-20250929") match their family. ok is false for models the table does
// not know (local models, the demo), whose cost is unknown, not zero.
func Lookup(model string) (Price, bool) {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	model = strings.ToLower(model)
	best := -1
	for i, e := range table {
		if strings.HasPrefix(model, e.prefix) && (best < 0 || len(e.prefix) > len(table[best].prefix)) {
			best = i
		}
	}
	if best < 0 {
		return Price{}, false
	}
	return table[best].price, true
}

// Cost estimates what usage of model costs; ok is false when the model's
// price is unknown (the cost is then reported as 0).
func Cost(model string, u llm.Usage) (usd float64, ok bool) {
	p, ok := Lookup(model)
	if !ok {
		return 0, false
	}
	return p.Cost(u), true
}

// Setting is one entry of the "pricing" settings key: a model's prices in
// US dollars per million tokens. The cache prices default to the input
// price (no discount assumed) when left out.
type Setting struct {
	Input      float64  `json:"input"`
	Output     float64  `json:"output"`
	CacheRead  *float64 `json:"cacheRead,omitempty"`
	CacheWrite *float64 `json:"cacheWrite,omitempty"`
}

// Price returns the setting as a price.
func (s Setting) Price() Price {
	p := Price{Input: s.Input, Output: s.Output, CacheRead: s.Input, CacheWrite: s.Input}
	if s.CacheRead != nil {
		p.CacheRead = *s.CacheRead
	}
	if s.CacheWrite != nil {
		p.CacheWrite = *s.CacheWrite
	}
	return p
}

// Key is the "pricing" settings key: prices by model, which override the
// built-in list prices (a negotiated rate, a local model that costs
// something, a model the table does not know). A name is a model
// reference ("local/qwen3", matched exactly) or a model id prefix without
// a provider ("claude-sonnet-4", matched like the built-in table, the
// longest prefix winning). Layers merge by name.
var Key = settings.Key[map[string]Setting]{Name: "pricing", Merge: settings.MergeMaps[map[string]Setting], Validate: func(m map[string]Setting) error {
	for name, s := range m {
		if strings.TrimSpace(name) == "" {
			return settings.Invalid(name, "an empty model name")
		}
		neg := s.Input < 0 || s.Output < 0 || (s.CacheRead != nil && *s.CacheRead < 0) || (s.CacheWrite != nil && *s.CacheWrite < 0)
		if neg {
			return settings.Invalid(name, "prices must not be negative")
		}
	}
	return nil
}}

// Table is the price table in force: the built-in list prices under the
// settings' overrides. Every front door reads cost from the one table the
// models capability provides, so the terminal, the headless result and ACP
// usage updates agree. The zero value (or nil) is the built-in table.
type Table struct {
	exact    map[string]Price // by full reference, lower case
	prefixes []entry          // bare id prefixes, lower case
}

// NewTable returns the built-in table under overrides (the "pricing" key).
func NewTable(overrides map[string]Setting) *Table {
	t := &Table{exact: map[string]Price{}}
	for name, s := range overrides {
		name = strings.ToLower(strings.TrimSpace(name))
		if strings.Contains(name, "/") {
			t.exact[name] = s.Price()
			continue
		}
		t.prefixes = append(t.prefixes, entry{prefix: name, price: s.Price()})
	}
	return t
}

// Lookup returns a model's price: an override for its exact reference,
// else the longest overriding prefix, else the built-in list price. ok is
// false when nothing prices the model.
func (t *Table) Lookup(model string) (Price, bool) {
	if t != nil {
		m := strings.ToLower(model)
		if p, ok := t.exact[m]; ok {
			return p, true
		}
		if i := strings.LastIndexByte(m, '/'); i >= 0 {
			m = m[i+1:]
		}
		best := -1
		for i, e := range t.prefixes {
			if strings.HasPrefix(m, e.prefix) && (best < 0 || len(e.prefix) > len(t.prefixes[best].prefix)) {
				best = i
			}
		}
		if best >= 0 {
			return t.prefixes[best].price, true
		}
	}
	return Lookup(model)
}

// Cost estimates what usage of model costs; ok is false when the model's
// price is unknown (the cost is then 0).
func (t *Table) Cost(model string, u llm.Usage) (usd float64, ok bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	return p.Cost(u), true
}

// Tally sums the cost of usage over models, remembering whether any of
// it was unpriced (then the total is a lower bound).
type Tally struct {
	USD float64
	// Unpriced says some usage had no price.
	Unpriced bool
}

// Add prices usage of model with t and adds it.
func (c *Tally) Add(t *Table, model string, u llm.Usage) {
	usd, ok := t.Cost(model, u)
	c.USD += usd
	if !ok && u != (llm.Usage{}) {
		c.Unpriced = true
	}
}

// Format prints a cost for people: "$0.0042", "$1.23", "$240".
func Format(usd float64) string {
	switch {
	case usd == 0:
		return "$0.00"
	case usd < 0.01:
		return fmt.Sprintf("$%.4f", usd)
	case usd < 100:
		return fmt.Sprintf("$%.2f", usd)
	}
	return fmt.Sprintf("$%.0f", usd)
}

// Entry is one row of the built-in price table: models whose id starts
// with Prefix (after the provider and in lower case, as [Lookup] reads
// them) cost Price.
type Entry struct {
	Prefix string
	Price  Price
}

// Builtin returns a copy of the built-in list prices, for front-ends that
// price usage themselves (the static trace prices each turn in the
// browser) and must agree with [Lookup].
func Builtin() []Entry {
	out := make([]Entry, len(table))
	for i, e := range table {
		out[i] = Entry{Prefix: e.prefix, Price: e.price}
	}
	return out
}
