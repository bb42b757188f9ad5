package search

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// agreementTree mixes the ignore and grep fixtures with generated source-like
// files and every awkward kind of file the backends must treat alike.
func agreementTree() map[string]string {
	files := map[string]string{}
	for k, v := range ignoreTree {
		files["ign/"+k] = v
	}
	for k, v := range grepTree {
		files[k] = v
	}
	maps.Copy(files, map[string]string{
		"enc/bom8.txt":       "\xef\xbb\xbfalpha first line\nsecond\n",
		"enc/utf16le.txt":    "\xff\xfea\x00l\x00p\x00h\x00a\x00\n\x00z\x00\n\x00",
		"enc/utf16be.txt":    "\xfe\xff\x00a\x00l\x00p\x00h\x00a\x00\n",
		"enc/crlf.txt":       "alpha\r\nfunc x()\r\n\r\nend\r\n",
		"enc/nonl.txt":       "no newline at end alpha",
		"enc/empty.txt":      "",
		"enc/blank.txt":      "\n\n\n",
		"enc/unicode.txt":    "Straße STRASSE\nΣίσυφος σ ς\nK kelvin k\ncafé au lait\nnaïve résumé\n",
		"bin/early.bin":      "\x00alpha\n",
		"bin/mid.bin":        strings.Repeat("alpha filler\n", 1000) + "\x00\n",
		"bin/late.bin":       strings.Repeat("alpha filler\n", 8000) + "\x00alpha\n",
		"bin/utf16nul.txt":   "\xff\xfea\x00\x00\x00\n\x00",
		"long/line.txt":      strings.Repeat("word ", 400) + "alpha\n",
		"multi/block.go":     "func a() {\n\treturn 1\n}\n\nfunc b() {\n\tx := 2\n\treturn x\n}\n",
		"links/file.txt":     "->../a.go",
		"links/dir":          "->../vendor",
		".github/ci.yml":     "name: alpha\non: push\n",
		"deep/a/b/c/d/e.txt": "alpha deep\n",
		"odd/new\nline.txt":  "alpha in a file whose name has a line break\n",
		"odd/-- dash.txt":    "alpha\n",
		"odd/colon:1:x.txt":  "alpha\nfunc x()\n",
	})
	words := strings.Fields("alpha beta gamma delta func return TODO FIXME error nil x1 42 3.14 foo_bar Foo CamelCase é ü")
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 60 {
		var b strings.Builder
		for l := range 3 + r.IntN(30) {
			if l%7 == 6 {
				b.WriteString("\n")
				continue
			}
			for w := range 1 + r.IntN(8) {
				if w > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(words[r.IntN(len(words))])
			}
			b.WriteByte('\n')
		}
		ext := []string{".go", ".txt", ".md", ".py"}[i%4]
		files[fmt.Sprintf("gen/d%d/f%02d%s", i%5, i, ext)] = b.String()
	}
	return files
}

// TestBackendsAgree runs both backends over the same tree with many
// patterns and options and requires identical results.
func TestBackendsAgree(t *testing.T) {
	rgPath(t)
	root := mkTree(t, agreementTree())
	native := &Searcher{Backend: Native}
	rg := &Searcher{Backend: Ripgrep}

	patterns := []string{
		"alpha", `\balpha\b`, "^func", `^func \w+\(`, `return$`, `\d+`, `\d{2,}`, `[A-Z][a-z]+[A-Z]`,
		`TODO|FIXME`, `colou?r`, `^$`, `^\s*$`, `x*`, `.`, `\S+\s\S+`, `[^a-z ]{3}`, `\pL{6,}`,
		`é`, `ü\b`, `\w+é`, `Stra(ss|ß)e`, `σ`, `k`, `\Aalpha`, `alpha\z`, `(?s)a.b`, `\x{1F600}`,
		`a{0}`, `foo_bar|Foo`, `(?U)a+`, `[[:upper:]]{2}`, `\Qx1\E`, `(alpha)+\s(beta)?`,
	}
	var cases []GrepOptions
	// (FilesWithMatches runs the same searches as Count in both backends
	// and only drops the counts; the variants below cover it.)
	for _, p := range patterns {
		for _, mode := range []OutputMode{Count, Content} {
			cases = append(cases, GrepOptions{Pattern: p, Mode: mode, Limit: -1, Hidden: true})
		}
		cases = append(cases, GrepOptions{Pattern: p, IgnoreCase: true, Mode: Content, Limit: -1, Hidden: true})
	}

	variants := []GrepOptions{
		{Mode: FilesWithMatches},
		{Mode: Content, Before: 2, After: 1},
		{Mode: Content, After: 3},
		{Mode: Content, Before: 4},
		{Hidden: false},
		{Include: []string{"*.go"}},
		{Include: []string{"*.{txt,md}", "!gen/**"}},
		{Include: []string{"gen/**/*.py"}, Mode: Count},
		{Exclude: []string{"gen", "*.md"}, Mode: Count},
		{Include: []string{"*.go", "!*_test.go"}, Exclude: []string{"vendor"}, Hidden: true},
		{Limit: 3},
		{Limit: 7, Mode: Content, After: 1},
		{Limit: 5, Mode: Count},
		{MaxFileSize: 100},
		{MaxLineLength: 20, Mode: Content},
		{MaxLineLength: -1, Mode: Content},
	}
	for _, p := range []string{"alpha", "(?i)func|return", `\w+\(`} {
		for _, v := range variants {
			v.Pattern = p
			cases = append(cases, v)
		}
	}

	for _, p := range []string{`\{\n\s+return`, `(?s)func a.*?\}`, `1\n\}\n\nfunc`, `alpha\r?\n`, `^\s*\n`, `x*`} {
		for _, mode := range []OutputMode{FilesWithMatches, Count, Content} {
			cases = append(cases, GrepOptions{Pattern: p, Multiline: true, Mode: mode, Limit: -1, Hidden: true})
		}
		cases = append(cases, GrepOptions{Pattern: p, Multiline: true, Mode: Content, Before: 1, After: 1})
	}

	// Run the cases a few at a time: most of the time is spent waiting for
	// rg processes.
	var matched atomic.Int64
	next := make(chan GrepOptions)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range next {
				matched.Add(int64(compare(t, native, rg, root, o)))
			}
		}()
	}
	for _, o := range cases {
		next <- o
	}
	close(next)
	wg.Wait()
	// Agreement on empty results would prove nothing.
	if matched := matched.Load(); matched < 1000 {
		t.Errorf("only %d matching lines over all comparisons; the fixture is not exercising the backends", matched)
	}
}

// compare runs o on both searchers, reports any difference, and returns
// the number of matching lines found. It may run on any goroutine.
func compare(t *testing.T, a, b *Searcher, root string, o GrepOptions) int {
	t.Helper()
	ra, errA := a.Grep(context.Background(), root, o)
	rb, errB := b.Grep(context.Background(), root, o)
	if errA != nil || errB != nil {
		t.Errorf("%+v: native error %v, ripgrep error %v", o, errA, errB)
		return 0
	}
	if ra.Backend != Native || rb.Backend != Ripgrep {
		t.Errorf("backends used: %q, %q", ra.Backend, rb.Backend)
		return 0
	}
	ra.Backend, rb.Backend = "", ""
	if !reflect.DeepEqual(ra, rb) {
		t.Errorf("%+v: native vs ripgrep (-native +rg):\n%s", o, cmp.Diff(ra, rb))
	}
	return ra.TotalLines
}
