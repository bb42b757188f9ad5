package term

import (
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"pgregory.net/rapid"
)

// reference renders like m but parses with goldmark/extension's table,
// strikethrough and task-list extensions, which gfm stands in for. The
// test binary may link goldmark/extension; dsh must not (see
// TestStartPathLeavesOut in cmd/dsh).
func reference(plain bool) *markdown {
	m := newMarkdown(plain, nil)
	m.md = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList)).Parser()
	return m
}

var gfmGolden = []string{
	"| name | size | mid |\n|:-----|-----:|:---:|\n| a | 1 | x |\n| bbbbbb | 12345 | yyyyy |",
	"text before\n| a | b |\n| --- | --- |\n| 1 | 2 |\n\nafter",
	"a | b\n--|--\n1 | 2 | 3\n4",
	"| a |\n| - |\n",
	"| a | b | c |\n|---|---|\n| 1 | 2 |",
	"| `x \\| y` | b \\| c |\n|---|:-|\n| `p\\|q\\|r` | **bold** ~~gone~~ |",
	"| h |\n|-:|\n|   |\n| `code` |",
	"|---|\n| a |",
	"    | indented |\n    |---|",
	"| a |\n   |---|\n| b |",
	"| a |\n|--x|\n| b |",
	"~~struck~~ and ~one~ and ~~~three~~~ and a~~b~~c",
	"- [ ] todo\n- [x] done\n- [X] Done\n- [y] not a box\n- text [ ] mid\n-  [ ]\n\n1. [x] numbered",
	"- [ ]\tdone with tab\n- [ ]no space\n- > [x] in a quote\n- para\n\n  [x] second paragraph",
	"* [x] ~~struck task~~\n  - [ ] nested",
	"| a | b |\n|---|---|\n| [x] | ~~s~~ |",
	"```\n| a |\n|---|\n```",
	"> | q | r |\n> |:-:|---|\n> | 1 | 2 |",
}

// TestGFMMatchesGoldmarkExtension renders every golden input through
// both parsers: the terminal output must be identical.
func TestGFMMatchesGoldmarkExtension(t *testing.T) {
	for _, plain := range []bool{true, false} {
		ours, theirs := newMarkdown(plain, nil), reference(plain)
		for _, src := range gfmGolden {
			if got, want := ours.Render(src, 80), theirs.Render(src, 80); got != want {
				t.Errorf("plain=%v %q:\n got  %q\n want %q", plain, src, got, want)
			}
		}
	}
}

// TestGFMMatchesGoldmarkExtensionRandom does the same on inputs built
// from the characters tables, strikethrough and task lists are made of.
func TestGFMMatchesGoldmarkExtensionRandom(t *testing.T) {
	ours, theirs := newMarkdown(true, nil), reference(true)
	pieces := []string{"|", "|", "-", "--", ":", "~", "~~", "`", "\\", "\\|", "[", "]", "[ ]", "[x]", "x", " ", " ", "\t", "\n", "\n", "a", "bc", "*", "- ", "1. ", "> ", "    "}
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.SampledFrom(pieces), 0, 40).Draw(t, "parts")
		src := strings.Join(parts, "")
		if !parses(theirs, src) {
			t.Skip("goldmark itself panics")
		}
		if got, want := ours.Render(src, 60), theirs.Render(src, 60); got != want {
			t.Fatalf("%q:\n got  %q\n want %q", src, got, want)
		}
	})
}

// TestMarkdownSurvivesParserPanic: goldmark panics on this input; the
// text must still be shown.
func TestMarkdownSurvivesParserPanic(t *testing.T) {
	const src = "> \t~"
	if parses(reference(true), src) {
		t.Fatalf("goldmark no longer panics on %q: pick another input", src)
	}
	out := newMarkdown(true, nil).Render(src, 80)
	if !strings.Contains(out, "> \t~") {
		t.Fatalf("text lost: %q", out)
	}
}

func parses(m *markdown, src string) bool {
	_, ok := m.parse([]byte(src))
	return ok
}
