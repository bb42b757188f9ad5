package term

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// sgrOf returns the SGR parameters in force at the first visible
// occurrence of word in s ("38;5;170" for a 256-colour foreground), "" when
// it is not styled, "<missing>" when it is not there.
func sgrOf(s, word string) string {
	var text []byte
	var sgr []string
	cur := ""
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "\x1b[") {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			if j < len(s) && s[j] == 'm' {
				cur = s[i+2 : j]
				if cur == "0" {
					cur = ""
				}
			}
			i = j + 1
			continue
		}
		text = append(text, s[i])
		sgr = append(sgr, cur)
		i++
	}
	k := strings.Index(string(text), word)
	if k < 0 {
		return "<missing>"
	}
	return sgr[k]
}

func TestHighlightGo(t *testing.T) {
	pal := newCodePalette(false)
	h := &highlighter{l: lookupLang("go"), pal: &pal}
	got := h.line(`func main() { s := "hi" // greet`)
	if ansi.Strip(got) != `func main() { s := "hi" // greet` {
		t.Fatalf("highlighting changed the text: %q", ansi.Strip(got))
	}
	for word, want := range map[string]string{"func": "38;5;170", "main": "38;5;81", `"hi"`: "38;5;114", "// greet": "3;38;5;244"} {
		if g := sgrOf(got, word); g != want {
			t.Errorf("%s: SGR %q, want %q in %q", word, g, want, got)
		}
	}
	if g := sgrOf(got, " s "); g != "" {
		t.Errorf("a plain identifier is styled %q", g)
	}
}

func TestHighlightState(t *testing.T) {
	pal := newCodePalette(false)
	h := &highlighter{l: lookupLang("go"), pal: &pal}
	h.line("x := `raw")
	second := h.line("still raw` + 1")
	if g := sgrOf(second, "still raw`"); g != "38;5;114" {
		t.Fatalf("the raw string's second line is not a string: %q (%q)", g, second)
	}
	if g := sgrOf(second, "1"); g != "38;5;209" {
		t.Fatalf("the number after the string: %q", g)
	}
	h = &highlighter{l: lookupLang("c"), pal: &pal}
	h.line("/* open")
	if g := sgrOf(h.line("int x; */ int y;"), "int x; */"); g != "3;38;5;244" {
		t.Fatalf("block comment not carried: %q", g)
	}
	h = &highlighter{l: lookupLang("python"), pal: &pal}
	h.line(`s = """doc`)
	if g := sgrOf(h.line(`end""" if x`), `end"""`); g != "38;5;114" {
		t.Fatalf("triple-quoted string not carried: %q", g)
	}
}

func TestHighlightShapes(t *testing.T) {
	pal := newCodePalette(false)
	cases := []struct {
		lang, line, word, want string
	}{
		{"json", `{"name": "dsh", "n": 1}`, `"name"`, "38;5;75"},
		{"json", `{"name": "dsh", "n": 1}`, `"dsh"`, "38;5;114"},
		{"yaml", `  image: alpine # base`, "image", "38;5;75"},
		{"yaml", `  image: alpine # base`, "# base", "3;38;5;244"},
		{"bash", `echo "$HOME" ${X} $1 # done`, "${X}", "38;5;179"},
		{"bash", `echo "$HOME" ${X} $1 # done`, "# done", "3;38;5;244"},
		{"bash", `echo a#b`, "echo", "38;5;75"},
		{"sql", `SELECT id FROM t WHERE x = 'a'`, "SELECT", "38;5;170"},
		{"html", `<a href="x">link</a>`, "href", "38;5;75"},
		{"html", `<a href="x">link</a>`, "a", "38;5;170"},
		{"python", `@cache`, "@cache", "38;5;179"},
		{"c", `#include <stdio.h>`, "#include", "38;5;170"},
	}
	for _, c := range cases {
		h := &highlighter{l: lookupLang(c.lang), pal: &pal}
		got := h.line(c.line)
		if ansi.Strip(got) != c.line {
			t.Errorf("%s: text changed: %q", c.lang, ansi.Strip(got))
		}
		if g := sgrOf(got, c.word); g != c.want {
			t.Errorf("%s %q: %s styled %q, want %q (%q)", c.lang, c.line, c.word, g, c.want, got)
		}
	}
	// A shell "#" inside a word is not a comment.
	h := &highlighter{l: lookupLang("sh"), pal: &pal}
	if g := sgrOf(h.line("echo a#b"), "#b"); g != "" {
		t.Errorf("a#b read as a comment: %q", g)
	}
}

func TestMarkdownCodeBlockHighlighted(t *testing.T) {
	m := newMarkdown(false, nil)
	out := m.Render("Look:\n\n```go\nfunc main() {\n\treturn\n}\n```\n", 80)
	if g := sgrOf(out, "func"); g != "38;5;170" {
		t.Fatalf("the go block is not highlighted (%q):\n%q", g, out)
	}
	if !strings.Contains(ansi.Strip(out), "      return") {
		t.Fatalf("tab not expanded inside the block:\n%s", ansi.Strip(out))
	}
	// An unknown language is printed as is.
	out = m.Render("```brainfuck\n+++.\n```", 80)
	if strings.Contains(out, "+++.\x1b") || !strings.Contains(out, "+++.") {
		t.Fatalf("unknown language styled:\n%q", out)
	}
}

func TestMarkdownDiffBlockColoured(t *testing.T) {
	m := newMarkdown(false, nil)
	st := NewStyles(false)
	out := m.Render("```diff\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old line\n+new line\n same\n```", 80)
	for _, want := range []string{st.Del("-old line"), st.Add("+new line"), st.Hunk("@@ -1 +1 @@"), st.Bold("+++ b/x")} {
		if !strings.Contains(out, want) {
			t.Fatalf("diff block lacks %q:\n%q", want, out)
		}
	}
}

func TestMarkdownInlineStyles(t *testing.T) {
	m := newMarkdown(false, nil)
	out := m.Render("# Title\n\n## Part\n\nSome `code` and **bold** and *slanted*.", 80)
	code, h1, h2 := sgrOf(out, "code"), sgrOf(out, "Title"), sgrOf(out, "Part")
	bold, it := sgrOf(out, "bold"), sgrOf(out, "slanted")
	seen := map[string]string{}
	for name, g := range map[string]string{"inline code": code, "h1": h1, "h2": h2, "bold": bold, "italic": it} {
		if g == "" {
			t.Errorf("%s is not styled:\n%q", name, out)
		}
		if other, dup := seen[g]; dup {
			t.Errorf("%s and %s look the same (%q):\n%q", name, other, g, out)
		}
		seen[g] = name
	}
	// Without colours, headings keep their marks.
	plain := newMarkdown(true, nil).Render("## Part\n\ntext `x`", 80)
	if !strings.Contains(plain, "## Part") || !strings.Contains(plain, "`x`") {
		t.Fatalf("plain rendering:\n%s", plain)
	}
}

func TestMarkdownTableAlignment(t *testing.T) {
	m := newMarkdown(true, nil)
	out := m.Render("| name | size | mid |\n|:-----|-----:|:---:|\n| a | 1 | x |\n| bbbbbb | 12345 | yyyyy |", 80)
	lines := strings.Split(out, "\n")
	var rows []string
	for _, l := range lines {
		if strings.Contains(l, "│") {
			rows = append(rows, l)
		}
	}
	if len(rows) != 3 {
		t.Fatalf("want 3 table rows:\n%s", out)
	}
	// The right-aligned column ends at the same column in every row.
	end := func(row, cell string) int { return strings.Index(row, cell) + len(cell) }
	if end(rows[1], " 1 ") != end(rows[2], "12345 ") || end(rows[0], "size ") != end(rows[2], "12345 ") {
		t.Fatalf("size column not right-aligned:\n%s", out)
	}
	if !strings.Contains(rows[1], "│   x") {
		t.Fatalf("mid column not centred:\n%s", out)
	}
	if !strings.Contains(out, "─┼─") {
		t.Fatalf("no rule under the header:\n%s", out)
	}
}
