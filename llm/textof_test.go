package llm_test

import (
	"strings"
	"testing"

	"github.com/dshq/dsh/llm"
)

// TextOf joins the text blocks in order and skips the others.
func TestTextOf(t *testing.T) {
	for _, c := range []struct {
		name    string
		content []llm.Block
		want    string
	}{
		{"none", nil, ""},
		{"no text", []llm.Block{{Type: llm.BlockImage, URL: "u"}}, ""},
		{"one", []llm.Block{{Type: llm.BlockText, Text: "out"}}, "out"},
		{"one among others", []llm.Block{{Type: llm.BlockImage, URL: "u"}, {Type: llm.BlockText, Text: "out"}, {Type: llm.BlockImage}}, "out"},
		{"several", []llm.Block{{Type: llm.BlockText, Text: "a"}, {Type: llm.BlockImage}, {Type: llm.BlockText, Text: "b"}, {Type: llm.BlockText, Text: "c"}}, "abc"},
		{"empty texts", []llm.Block{{Type: llm.BlockText}, {Type: llm.BlockText}}, ""},
	} {
		if got := llm.TextOf(c.content); got != c.want {
			t.Errorf("%s: TextOf = %q, want %q", c.name, got, c.want)
		}
	}
}

// A tool result's one text block (the whole output) is handed back without
// a copy: hooks, compaction and the adapters each ask for it every step, and
// with 20 KB outputs those copies were a fifth of a long run's allocation.
// Several blocks cost one allocation, the result itself.
func TestTextOfAllocations(t *testing.T) {
	out := strings.Repeat("x", 20000)
	one := []llm.Block{{Type: llm.BlockText, Text: out}}
	if n := testing.AllocsPerRun(100, func() { _ = llm.TextOf(one) }); n != 0 {
		t.Errorf("TextOf of one text block: %v allocations, want 0", n)
	}
	two := []llm.Block{{Type: llm.BlockText, Text: out}, {Type: llm.BlockText, Text: out}}
	if n := testing.AllocsPerRun(100, func() { _ = llm.TextOf(two) }); n != 1 {
		t.Errorf("TextOf of two text blocks: %v allocations, want 1", n)
	}
}
