package search

import (
	"strings"
	"testing"
)

func TestCompilePattern(t *testing.T) {
	tests := []struct {
		expr       string
		ignoreCase bool
		multiline  bool
		rust       string
		goMatches  []string
		goMisses   []string
	}{
		{expr: "a.b", rust: `a(?-s:.)b`, goMatches: []string{"a-b", "aéb"}, goMisses: []string{"a\nb"}},
		{expr: `^x$`, rust: `(?m:^)x(?m:$)`, goMatches: []string{"y\nx\nz"}},
		{expr: `\bw\b`, rust: `(?-u:\b)w(?-u:\b)`},
		{expr: `\Ax\z`, rust: `(?m:^)x(?m:$)`, goMatches: []string{"a\nx\nb"}},         // line-local
		{expr: `\Ax\z`, multiline: true, rust: `\Ax\z`, goMisses: []string{"a\nx\nb"}}, // whole file
		{expr: `\s`, rust: `[\x{9}\x{c}-\x{d}\x{20}]`, goMisses: []string{"\n"}},       // no line break in line mode
		{expr: `[^a]`, rust: `[\x{0}-\x{9}\x{b}-\x{60}b-\x{10ffff}]`},
		{expr: "k", ignoreCase: true, rust: `[Kk\x{212a}]`, goMatches: []string{"K", "\u212a"}},
		{expr: "(a|bc)+?", rust: `(?:(?:a|bc))+?`, goMatches: []string{"bc"}},
		{expr: "x{2,}", rust: `(?:x){2,}`},
		{expr: "x{2}", rust: `(?:x){2}`},
		{expr: `a\.b-c#d&e~f`, rust: `a\.b\-c\#d\&e\~f`, goMatches: []string{"a.b-c#d&e~f"}},
		{expr: "\u00e9\t", rust: `\x{e9}\x{9}`},
		{expr: "", rust: `(?:)`, goMatches: []string{"anything"}},
		{expr: `[^\x00-\x{10FFFF}]`, rust: `(?:(?-u:\b)(?-u:\B))`, goMisses: []string{"a", ""}},
		{expr: "(?s).", multiline: true, rust: `(?s:.)`, goMatches: []string{"\n"}},
	}
	for _, tt := range tests {
		p, err := compilePattern(tt.expr, tt.ignoreCase, tt.multiline)
		if err != nil {
			t.Errorf("compilePattern(%q): %v", tt.expr, err)
			continue
		}
		if p.rust != tt.rust {
			t.Errorf("compilePattern(%q) rust = %s, want %s", tt.expr, p.rust, tt.rust)
		}
		for _, s := range tt.goMatches {
			if !p.re.MatchString(s) {
				t.Errorf("%q (go %s) does not match %q", tt.expr, p.re, s)
			}
		}
		for _, s := range tt.goMisses {
			if p.re.MatchString(s) {
				t.Errorf("%q (go %s) matches %q", tt.expr, p.re, s)
			}
		}
	}
	for _, bad := range []string{`a\nb`, `[\n]`, "x\n", `(`, `a{1001}`} {
		if _, err := compilePattern(bad, false, false); err == nil || !strings.HasPrefix(err.Error(), "search: invalid pattern") {
			t.Errorf("compilePattern(%q) err = %v", bad, err)
		}
	}
	if _, err := compilePattern(`a\nb`, false, true); err != nil {
		t.Errorf("multiline pattern with a line break: %v", err)
	}
}

func TestRequiredLiteral(t *testing.T) {
	for expr, want := range map[string]string{
		`needle`:        "needle",
		`^func \w+\(`:   "func ",
		`\bfoo\b`:       "foo",
		`a(bcd)+e`:      "bcd",
		`x{2}yy`:        "yy",
		`(?:ab){0,3}c`:  "c",
		`foo|bar`:       "",
		`(?i)needle`:    "",
		`\d+`:           "",
		`colou?r`:       "colo",
		`(?i:a)bc(?i)d`: "bc",
	} {
		p, err := compilePattern(expr, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(p.literal); got != want {
			t.Errorf("requiredLiteral(%q) = %q, want %q", expr, got, want)
		}
	}
	if p, _ := compilePattern("needle", false, true); p.literal != nil {
		t.Error("multiline patterns search the whole file; no literal prefilter")
	}
}
