package anthropic

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/dshq/dsh/internal/wiretest"
	"github.com/dshq/dsh/llm"
)

// TestWireCacheByteIdentical: over random histories changing the way an
// agent's do between requests (appends, prunes, summaries, rewrites, clones,
// in-place edits, rewinds, two sessions interleaved), every request body
// built from the wire cache equals the whole request marshalled at once.
func TestWireCacheByteIdentical(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := Config{Provider: "p", BaseURL: DefaultBaseURL, NoAutoCache: rapid.Bool().Draw(t, "noAutoCache")}
		if rapid.Bool().Draw(t, "thinking") {
			cfg.ThinkingBudget = 2048
		}
		a, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		wiretest.Bodies(t, a.RequestBody, a.wholeBody, func(t *rapid.T, req *llm.Request) {
			if rapid.IntRange(0, 4).Draw(t, "prefill") == 0 {
				req.Prefill = []llm.Block{llm.Text("{ "), {Type: llm.BlockImage}, llm.Text("The answer: \n")}
			}
		})
	})
}
