package openai

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/dshq/dsh/internal/wiretest"
)

// TestWireCacheByteIdentical: over random histories changing the way an
// agent's do between requests (appends, prunes, summaries, rewrites, clones,
// in-place edits, rewinds, two sessions interleaved), every request body
// built from the wire cache equals the whole request marshalled at once —
// for the OpenAI and DeepSeek presets and the options that change how a
// message is encoded (reasoning replay, no images).
func TestWireCacheByteIdentical(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := rapid.SampledFrom([]Config{OpenAI().Config, DeepSeek().Config}).Draw(t, "preset")
		cfg.ReasoningReplay = rapid.SampledFrom([]ReasoningReplay{cfg.ReasoningReplay, ReplayNone, ReplayCurrentTurn, ReplayToolTurns}).Draw(t, "replay")
		cfg.NoImages = rapid.Bool().Draw(t, "noImages")
		cfg.NoStreamOptions = rapid.Bool().Draw(t, "noStreamOptions")
		a, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		wiretest.Bodies(t, a.RequestBody, a.wholeBody, nil)
	})
}
