package anthropic

import (
	"bytes"
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
		sessions := []*wiretest.History{{}, {}}
		for range rapid.IntRange(1, 16).Draw(t, "requests") {
			s := rapid.IntRange(0, 1).Draw(t, "session")
			h := sessions[s]
			h.Change(t)
			req := wiretest.Request(t, []string{"s1", "s2"}[s], h.Msgs)
			if rapid.IntRange(0, 4).Draw(t, "prefill") == 0 {
				req.Prefill = []llm.Block{llm.Text("{ "), {Type: llm.BlockImage}, llm.Text("The answer: \n")}
			}
			want, werr := a.wholeBody(req)
			got, gerr := a.RequestBody(req)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("errors differ: whole %v, cached %v", werr, gerr)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("cached body differs from a whole re-encode\n got: %s\nwant: %s", got, want)
			}
		}
	})
}
