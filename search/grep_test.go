package search

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// grepTree is small enough to reason about line by line.
var grepTree = map[string]string{
	"a.go":         "package a\n\nfunc Alpha() {}\n\nfunc beta() {\n\treturn\n}\n",
	"b.go":         "package b\n// TODO: alpha\nfunc Gamma() {}\n",
	"b_test.go":    "package b\nfunc TestAlpha() {}\n",
	"notes.txt":    "ALPHA release\nalpha notes\nnothing here\n",
	"vendor/v.go":  "package v\nfunc Alpha() {}\n",
	"docs/x.md":    "alpha\n",
	".hidden.go":   "package hidden\nfunc Alpha() {}\n",
	"bin.dat":      "alpha\x00binary\n",
	"crlf.txt":     "alpha one\r\nbeta\r\n",
	".gitignore":   "ignored/\n",
	"ignored/i.go": "func Alpha() {}\n",
}

func grep(t *testing.T, s *Searcher, root string, o GrepOptions) *GrepResult {
	t.Helper()
	res, err := s.Grep(context.Background(), root, o)
	if err != nil {
		t.Fatalf("Grep(%+v): %v", o, err)
	}
	return res
}

func paths(r *GrepResult) []string {
	out := []string{}
	for _, f := range r.Files {
		out = append(out, f.Path)
	}
	return out
}

func TestGrepFilesWithMatches(t *testing.T) {
	root := mkTree(t, grepTree)
	forEachBackend(t, func(t *testing.T, s *Searcher) {
		r := grep(t, s, root, GrepOptions{Pattern: "alpha"})
		// bin.dat has a NUL: binary, skipped. ignored/ is in .gitignore;
		// .hidden.go is hidden.
		want := []string{"b.go", "crlf.txt", "docs/x.md", "notes.txt"}
		if diff := cmp.Diff(want, paths(r)); diff != "" {
			t.Errorf("files (-want +got):\n%s", diff)
		}
		if r.Mode != FilesWithMatches || r.TotalFiles != 4 || r.Truncated || r.Backend != s.Backend {
			t.Errorf("result = %+v", r)
		}
		if r.Dir != root {
			t.Errorf("Dir = %q, want %q", r.Dir, root)
		}
	})
}

func TestGrepIgnoreCaseAndHidden(t *testing.T) {
	root := mkTree(t, grepTree)
	forEachBackend(t, func(t *testing.T, s *Searcher) {
		r := grep(t, s, root, GrepOptions{Pattern: "alpha", IgnoreCase: true, Hidden: true})
		want := []string{".hidden.go", "a.go", "b.go", "b_test.go", "crlf.txt", "docs/x.md", "notes.txt", "vendor/v.go"}
		if diff := cmp.Diff(want, paths(r)); diff != "" {
			t.Errorf("files (-want +got):\n%s", diff)
		}
	})
}

func TestGrepCount(t *testing.T) {
	root := mkTree(t, grepTree)
	forEachBackend(t, func(t *testing.T, s *Searcher) {
		r := grep(t, s, root, GrepOptions{Pattern: "(?i)alpha", Mode: Count})
		got := map[string]int{}
		for _, f := range r.Files {
			got[f.Path] = f.Count
			if f.Lines != nil {
				t.Errorf("%s: count mode returned lines", f.Path)
			}
		}
		want := map[string]int{"a.go": 1, "b.go": 1, "b_test.go": 1, "crlf.txt": 1, "docs/x.md": 1, "notes.txt": 2, "vendor/v.go": 1}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("counts (-want +got):\n%s", diff)
		}
		if r.TotalLines != 8 {
			t.Errorf("TotalLines = %d, want 8", r.TotalLines)
		}
	})
}

func TestGrepContent(t *testing.T) {
	root := mkTree(t, grepTree)
	forEachBackend(t, func(t *testing.T, s *Searcher) {
		r := grep(t, s, root, GrepOptions{Pattern: `^func \w+\(`, Mode: Content})
		want := []FileMatches{
			{Path: "a.go", Count: 2, Lines: []Line{{Number: 3, Text: "func Alpha() {}"}, {Number: 5, Text: "func beta() {"}}},
			{Path: "b.go", Count: 1, Lines: []Line{{Number: 3, Text: "func Gamma() {}"}}},
			{Path: "b_test.go", Count: 1, Lines: []Line{{Number: 2, Text: "func TestAlpha() {}"}}},
			{Path: "vendor/v.go", Count: 1, Lines: []Line{{Number: 2, Text: "func Alpha() {}"}}},
		}
		if diff := cmp.Diff(want, r.Files); diff != "" {
			t.Errorf("content (-want +got):\n%s", diff)
		}
		// A CRLF line is reported without its "\r".
		r = grep(t, s, root, GrepOptions{Pattern: "one", Mode: Content})
		if diff := cmp.Diff([]Line{{Number: 1, Text: "alpha one"}}, r.Files[0].Lines); diff != "" {
			t.Errorf("crlf line (-want +got):\n%s", diff)
		}
	})
}

func TestGrepContextLines(t *testing.T) {
	root := mkTree(t, map[string]string{
		"f.txt": "1\n2\nhit 3\n4\n5\n6\n7\nhit 8\nhit 9\n10\n11\n12\n",
	})
	forEachBackend(t, func(t *testing.T, s *Searcher) {
		r := grep(t, s, root, GrepOptions{Pattern: "hit", Mode: Content, Before: 1, After: 2})
		want := []Line{
			{Number: 2, Text: "2", Context: true},
			{Number: 3, Text: "hit 3"},
			{Number: 4, Text: "4", Context: true},
			{Number: 5, Text: "5", Context: true},
			{Number: 7, Text: "7", Context: true},
			{Number: 8, Text: "hit 8"},
			{Number: 9, Text: "hit 9"},
			{Number: 10, Text: "10", Context: true},
			{Number: 11, Text: "11", Context: true},
		}
		if diff := cmp.Diff(want, r.Files[0].Lines); diff != "" {
			t.Errorf("lines (-want +got):\n%s", diff)
		}
		if r.Files[0].Count != 3 {
			t.Errorf("Count = %d, want 3", r.Files[0].Count)
		}
		// Context at the edges of the file is clipped.
		r = grep(t, s, root, GrepOptions{Pattern: "^(1|12)$", Mode: Content, Before: 3, After: 3})
		var nums []int
		for _, l := range r.Files[0].Lines {
			nums = append(nums, l.Number)
		}
		if diff := cmp.Diff([]int{1, 2, 3, 4, 9, 10, 11, 12}, nums); diff != "" {
			t.Errorf("edge context (-want +got):\n%s", diff)
		}
		// Context applies to content mode only.
		r = grep(t, s, root, GrepOptions{Pattern: "hit", Mode: Count, Before: 5, After: 5})
		if r.Files[0].Count != 3 || r.Files[0].Lines != nil {
			t.Errorf("count with context = %+v", r.Files[0])
		}
	})
}

func TestGrepIncludeExclude(t *testing.T) {
	root := mkTree(t, grepTree)
	forEachBackend(t, func(t *testing.T, s *Searcher) {
		tests := []struct {
			include, exclude []string
			want             []string
		}{
			// A file an include glob names is let through even when hidden
			// (rg's precedence: globs, then ignore files, then the hidden
			// rule); a hidden directory is still not entered.
			{include: []string{"*.go"}, want: []string{".hidden.go", "a.go", "b.go", "b_test.go", "vendor/v.go"}},
			{include: []string{"*.go", "!*_test.go", "!.*"}, want: []string{"a.go", "b.go", "vendor/v.go"}},
			{include: []string{"*.go"}, exclude: []string{"vendor", "*_test.go", ".*"}, want: []string{"a.go", "b.go"}},
			{include: []string{"*.{md,txt}"}, want: []string{"crlf.txt", "docs/x.md", "notes.txt"}},
			{include: []string{"vendor/**"}, want: []string{"vendor/v.go"}},
			{exclude: []string{"*.txt"}, want: []string{"a.go", "b.go", "b_test.go", "docs/x.md", "vendor/v.go"}},
			// An include glob outranks .gitignore for a file, but a
			// directory .gitignore hides is still not entered unless an
			// include names the directory itself.
			{include: []string{"*.go", "!.*"}, want: []string{"a.go", "b.go", "b_test.go", "vendor/v.go"}},
			{include: []string{"*.go", "ignored", "!.*"}, want: []string{"a.go", "b.go", "b_test.go", "ignored/i.go", "vendor/v.go"}},
		}
		for _, tt := range tests {
			r := grep(t, s, root, GrepOptions{Pattern: "(?i)alpha|func", Include: tt.include, Exclude: tt.exclude})
			if diff := cmp.Diff(tt.want, paths(r)); diff != "" {
				t.Errorf("include %q exclude %q (-want +got):\n%s", tt.include, tt.exclude, diff)
			}
		}
	})
}

func TestGrepBinaryFiles(t *testing.T) {
	// rg stops reading a file at its first NUL wherever it is; both
	// backends skip such files whole, including a NUL far past the first
	// 64 KiB buffer, after matches.
	late := strings.Repeat("needle\n", 20000) + "\x00" + "needle\n"
	root := mkTree(t, map[string]string{
		"text.txt":   "needle\n",
		"early.bin":  "\x00needle\n",
		"mid.bin":    strings.Repeat("x", 10<<10) + "\x00needle\n",
		"late.bin":   late,
		"utf16.txt":  "\xff\xfen\x00e\x00e\x00d\x00l\x00e\x00\n\x00", // UTF-16LE with BOM: text
		"utf16z.txt": "\xff\xfen\x00\x00\x00e\x00e\x00d\x00l\x00e\x00\n\x00",
	})
	forEachBackend(t, func(t *testing.T, s *Searcher) {
		for _, mode := range []OutputMode{FilesWithMatches, Count, Content} {
			r := grep(t, s, root, GrepOptions{Pattern: "needle", Mode: mode})
			if diff := cmp.Diff([]string{"text.txt", "utf16.txt"}, paths(r)); diff != "" {
				t.Errorf("%s: files (-want +got):\n%s", mode, diff)
			}
		}
	})
}

func TestGrepEncodings(t *testing.T) {
	root := mkTree(t, map[string]string{
		"bom8.txt":    "\xef\xbb\xbfstart here\n",
		"utf16le.txt": "\xff\xfes\x00t\x00a\x00r\x00t\x00 \x00\xe9\x00\n\x00",
		"utf16be.txt": "\xfe\xff\x00s\x00t\x00a\x00r\x00t\x00!\x00\n",
	})
	forEachBackend(t, func(t *testing.T, s *Searcher) {
		r := grep(t, s, root, GrepOptions{Pattern: "^start", Mode: Content})
		want := []FileMatches{
			{Path: "bom8.txt", Count: 1, Lines: []Line{{Number: 1, Text: "start here"}}},
			{Path: "utf16be.txt", Count: 1, Lines: []Line{{Number: 1, Text: "start!"}}},
			{Path: "utf16le.txt", Count: 1, Lines: []Line{{Number: 1, Text: "start é"}}},
		}
		if diff := cmp.Diff(want, r.Files); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func TestGrepUnicodeSemantics(t *testing.T) {
	root := mkTree(t, map[string]string{
		"u.txt": "Straße\nSTRASSE\ncafé au lait\nΣίσυφος\nσ\nK kelvin\n",
	})
	forEachBackend(t, func(t *testing.T, s *Searcher) {
		tests := []struct {
			pattern    string
			ignoreCase bool
			want       []int
		}{
			{pattern: "straße", ignoreCase: true, want: []int{1}}, // simple folding: ß does not fold to ss
			{pattern: "σ", ignoreCase: true, want: []int{4, 5}},   // Σ σ ς form one fold orbit
			{pattern: "k", ignoreCase: true, want: []int{6}},      // includes the Kelvin sign
			{pattern: `caf\w`, want: nil},                         // \w is ASCII: é is not a word character
			{pattern: `\bau\b`, want: []int{3}},
			{pattern: `é\b`, want: nil}, // ASCII \b: no boundary between é and a space
			{pattern: `\pL+ au`, want: []int{3}},
			{pattern: `^.{6}$`, want: []int{1}}, // "." is a character, not a byte
		}
		for _, tt := range tests {
			r := grep(t, s, root, GrepOptions{Pattern: tt.pattern, IgnoreCase: tt.ignoreCase, Mode: Content})
			var got []int
			for _, f := range r.Files {
				for _, l := range f.Lines {
					got = append(got, l.Number)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("pattern %q (-i=%v) lines (-want +got):\n%s", tt.pattern, tt.ignoreCase, diff)
			}
		}
	})
}

func TestGrepLimit(t *testing.T) {
	files := map[string]string{}
	for _, n := range []string{"e", "a", "d", "c", "b"} {
		files[n+".txt"] = "hit 1\nmiss\nhit 2\n"
	}
	root := mkTree(t, files)
	forEachBackend(t, func(t *testing.T, s *Searcher) {
		r := grep(t, s, root, GrepOptions{Pattern: "hit", Limit: 2})
		if diff := cmp.Diff([]string{"a.txt", "b.txt"}, paths(r)); diff != "" {
			t.Errorf("files (-want +got):\n%s", diff)
		}
		if !r.Truncated || r.TotalFiles != 5 || r.TotalEntries != 5 || r.TotalLines != 10 {
			t.Errorf("totals = %+v", r)
		}
		// Content: the limit counts lines, context lines included; the cut
		// may fall inside a file.
		r = grep(t, s, root, GrepOptions{Pattern: "hit", Mode: Content, Limit: 3, After: 1})
		want := []FileMatches{
			{Path: "a.txt", Count: 2, Lines: []Line{{Number: 1, Text: "hit 1"}, {Number: 2, Text: "miss", Context: true}, {Number: 3, Text: "hit 2"}}},
		}
		if diff := cmp.Diff(want, r.Files); diff != "" {
			t.Errorf("content (-want +got):\n%s", diff)
		}
		r = grep(t, s, root, GrepOptions{Pattern: "hit", Mode: Content, Limit: 4})
		if len(r.Files) != 2 || len(r.Files[1].Lines) != 2 || r.Files[1].Path != "b.txt" || !r.Truncated || r.TotalEntries != 10 {
			t.Errorf("content limit 4 = %+v", r.Files)
		}
		// Exactly at the limit is not truncated; negative means no limit.
		if r := grep(t, s, root, GrepOptions{Pattern: "hit", Limit: 5}); r.Truncated || len(r.Files) != 5 {
			t.Errorf("limit 5: truncated=%v files=%d", r.Truncated, len(r.Files))
		}
		if r := grep(t, s, root, GrepOptions{Pattern: "hit", Mode: Content, Limit: -1}); r.Truncated || r.TotalEntries != 10 {
			t.Errorf("no limit: %+v", r)
		}
	})
}

func TestGrepMultiline(t *testing.T) {
	root := mkTree(t, map[string]string{
		"f.go": "func a() {\n\treturn 1\n}\nfunc b() {\n\tx()\n}\n",
	})
	forEachBackend(t, func(t *testing.T, s *Searcher) {
		r := grep(t, s, root, GrepOptions{Pattern: `\{\n\s+return`, Multiline: true, Mode: Content})
		want := []Line{{Number: 1, Text: "func a() {"}, {Number: 2, Text: "\treturn 1"}}
		if diff := cmp.Diff(want, r.Files[0].Lines); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		// "." crosses lines in multiline mode; counts are matching lines.
		r = grep(t, s, root, GrepOptions{Pattern: `a\(\).*b\(\)`, Multiline: true, Mode: Count})
		if r.Files[0].Count != 4 {
			t.Errorf("multiline count = %d, want 4", r.Files[0].Count)
		}
		// Without multiline the same pattern is an error, not a silent miss.
		if _, err := s.Grep(context.Background(), root, GrepOptions{Pattern: `\{\n`}); err == nil {
			t.Error("a line break in a line pattern should be an error")
		}
	})
}

func TestGrepLineLengthAndFileSize(t *testing.T) {
	long := strings.Repeat("é", 400) + "needle"
	root := mkTree(t, map[string]string{
		"long.txt": long + "\n",
		"big.txt":  "needle\n" + strings.Repeat("x", 2000) + "\n",
		"latin1":   "caf\xe9 needle\n",
	})
	forEachBackend(t, func(t *testing.T, s *Searcher) {
		r := grep(t, s, root, GrepOptions{Pattern: "needle", Mode: Content, MaxLineLength: 11, MaxFileSize: 1000})
		want := []FileMatches{
			{Path: "latin1", Count: 1, Lines: []Line{{Number: 1, Text: "caf\uFFFD need…"}}},
			{Path: "long.txt", Count: 1, Lines: []Line{{Number: 1, Text: "ééééé…"}}},
		}
		if diff := cmp.Diff(want, r.Files); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		r = grep(t, s, root, GrepOptions{Pattern: "needle", MaxFileSize: 2008})
		if diff := cmp.Diff([]string{"big.txt", "latin1", "long.txt"}, paths(r)); diff != "" {
			t.Errorf("a file of exactly MaxFileSize is searched (-want +got):\n%s", diff)
		}
	})
}

func TestGrepSingleFileAndErrors(t *testing.T) {
	root := mkTree(t, grepTree)
	s := &Searcher{}
	r := grep(t, s, filepath.Join(root, "notes.txt"), GrepOptions{Pattern: "alpha", IgnoreCase: true, Mode: Count})
	if r.Dir != root || len(r.Files) != 1 || r.Files[0].Path != "notes.txt" || r.Files[0].Count != 2 {
		t.Errorf("single file = %+v", r)
	}
	// A file named explicitly is searched even if .gitignore hides it.
	if r := grep(t, s, filepath.Join(root, "ignored", "i.go"), GrepOptions{Pattern: "Alpha"}); len(r.Files) != 1 {
		t.Errorf("explicit ignored file: %+v", r)
	}
	for _, tt := range []struct {
		root string
		o    GrepOptions
		want string
	}{
		{root, GrepOptions{Pattern: "("}, "invalid pattern"},
		{root, GrepOptions{Pattern: "a\nb"}, "line break"},
		{root, GrepOptions{Pattern: "a", Mode: "lines"}, "unknown output mode"},
		{root, GrepOptions{Pattern: "a", Include: []string{"[x"}}, "invalid glob"},
		{root, GrepOptions{Pattern: "a", Before: -1, Mode: Content}, "negative"},
		{filepath.Join(root, "missing"), GrepOptions{Pattern: "a"}, "no such file"},
	} {
		_, err := s.Grep(context.Background(), tt.root, tt.o)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "search: ") {
			t.Errorf("Grep(%+v) error = %v, want it to mention %q", tt.o, err, tt.want)
		}
	}
}

func TestGrepBackendSelection(t *testing.T) {
	root := mkTree(t, grepTree)
	s := &Searcher{Backend: Ripgrep, RipgrepPath: "dsh-no-such-rg"}
	if _, err := s.Grep(context.Background(), root, GrepOptions{Pattern: "a"}); !errors.Is(err, ErrNoRipgrep) {
		t.Errorf("forced ripgrep without rg: err = %v", err)
	}
	s = &Searcher{RipgrepPath: "dsh-no-such-rg"}
	if r := grep(t, s, root, GrepOptions{Pattern: "alpha"}); r.Backend != Native {
		t.Errorf("auto without rg used %q", r.Backend)
	}
	// Auto falls back to the Go walker when rg fails on its own.
	fake := filepath.Join(t.TempDir(), "rg")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho boom >&2\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s = &Searcher{RipgrepPath: fake}
	if r := grep(t, s, root, GrepOptions{Pattern: "alpha"}); r.Backend != Native || len(r.Files) != 4 {
		t.Errorf("fallback: backend %q files %v", r.Backend, paths(r))
	}
	s = &Searcher{Backend: Ripgrep, RipgrepPath: fake}
	if _, err := s.Grep(context.Background(), root, GrepOptions{Pattern: "alpha"}); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("forced failing rg: err = %v", err)
	}
}

func TestGrepCancelled(t *testing.T) {
	root := mkTree(t, grepTree)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	forEachBackend(t, func(t *testing.T, s *Searcher) {
		if _, err := s.Grep(ctx, root, GrepOptions{Pattern: "alpha"}); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
}

func TestGrepLargeFiles(t *testing.T) {
	// Files past mmapThreshold are memory-mapped by the Go walker.
	var b strings.Builder
	for b.Len() < mmapThreshold+1000 {
		b.WriteString("filler line of text\n")
	}
	body := "needle first\n" + b.String() + "needle last"
	root := mkTree(t, map[string]string{
		"big.txt":     body,
		"bigbin.txt":  body + "\x00",
		"bigbom.txt":  "\xef\xbb\xbf" + body,
		"small.txt":   "needle\n",
		"exact64k":    strings.Repeat("x", readChunk-7) + "needle",
		"over64k.txt": strings.Repeat("y\n", readChunk) + "needle\n",
	})
	lines := strings.Count(body, "\n") + 1
	forEachBackend(t, func(t *testing.T, s *Searcher) {
		r := grep(t, s, root, GrepOptions{Pattern: "^needle", Mode: Content})
		want := []FileMatches{
			{Path: "big.txt", Count: 2, Lines: []Line{{Number: 1, Text: "needle first"}, {Number: lines, Text: "needle last"}}},
			{Path: "bigbom.txt", Count: 2, Lines: []Line{{Number: 1, Text: "needle first"}, {Number: lines, Text: "needle last"}}},
			{Path: "over64k.txt", Count: 1, Lines: []Line{{Number: readChunk + 1, Text: "needle"}}},
			{Path: "small.txt", Count: 1, Lines: []Line{{Number: 1, Text: "needle"}}},
		}
		if diff := cmp.Diff(want, r.Files); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if r := grep(t, s, root, GrepOptions{Pattern: "needle", Mode: Count}); r.TotalFiles != 5 || r.TotalLines != 7 {
			t.Errorf("count: %d files %d lines, want 5 and 7", r.TotalFiles, r.TotalLines)
		}
	})
}

// A mapped file that shrinks under the search must not crash the process.
func TestSearchMappedFileTruncated(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(strings.Repeat("x", mmapThreshold)+"needle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := openFile(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, unmap, err := mapFile(f, mmapThreshold+7)
	if err != nil {
		t.Skipf("mmap unavailable: %v", err)
	}
	defer unmap()
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	pat, _ := compilePattern("needle", false, false)
	if fm, ok := searchMapped("f", data, pat, &GrepOptions{Mode: Count}); ok {
		t.Errorf("search of a truncated mapping reported %+v", fm)
	}
}
