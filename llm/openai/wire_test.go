package openai

import (
	"bytes"
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
		sessions := []*wiretest.History{{}, {}}
		for range rapid.IntRange(1, 16).Draw(t, "requests") {
			s := rapid.IntRange(0, 1).Draw(t, "session")
			h := sessions[s]
			h.Change(t)
			req := wiretest.Request(t, []string{"s1", "s2"}[s], h.Msgs)
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
