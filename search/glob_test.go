package search

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func globPaths(r *GlobResult) []string {
	out := []string{}
	for _, f := range r.Files {
		out = append(out, f.Path)
	}
	return out
}

func TestGlobNewestFirst(t *testing.T) {
	root := mkTree(t, map[string]string{
		"old.go": "", "mid.go": "", "new.go": "", "sub/deep.go": "", "sub/x.txt": "", "same1.go": "", "same2.go": "",
	})
	setMtime(t, root, "old.go", "mid.go", "sub/deep.go", "new.go") // 0h, 1h, 2h, 3h
	same := time.Date(2024, 1, 1, 1, 30, 0, 0, time.UTC)
	for _, n := range []string{"same2.go", "same1.go"} {
		if err := os.Chtimes(filepath.Join(root, n), same, same); err != nil {
			t.Fatal(err)
		}
	}
	r, err := (&Searcher{}).Glob(context.Background(), root, "**/*.go", GlobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Equal times are ordered by path.
	want := []string{"new.go", "sub/deep.go", "same1.go", "same2.go", "mid.go", "old.go"}
	if diff := cmp.Diff(want, globPaths(r)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if r.Total != 6 || r.Truncated {
		t.Errorf("Total %d Truncated %v", r.Total, r.Truncated)
	}
	if !r.Files[0].ModTime.Equal(time.Date(2024, 1, 1, 3, 0, 0, 0, time.UTC)) {
		t.Errorf("ModTime of new.go = %v", r.Files[0].ModTime)
	}
}

func TestGlobCap(t *testing.T) {
	files := map[string]string{}
	var order []string
	for i := range 150 {
		name := "f" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".txt"
		files[name] = ""
		order = append(order, name)
	}
	root := mkTree(t, files)
	setMtime(t, root, order...)
	r, err := (&Searcher{}).Glob(context.Background(), root, "*.txt", GlobOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Files) != DefaultGlobLimit || r.Total != 150 || !r.Truncated {
		t.Fatalf("files %d total %d truncated %v", len(r.Files), r.Total, r.Truncated)
	}
	if r.Files[0].Path != order[149] || r.Files[99].Path != order[50] {
		t.Errorf("cap kept the wrong files: first %s last %s", r.Files[0].Path, r.Files[99].Path)
	}
	r, _ = (&Searcher{}).Glob(context.Background(), root, "*.txt", GlobOptions{Limit: 150})
	if len(r.Files) != 150 || r.Truncated {
		t.Errorf("limit 150: files %d truncated %v", len(r.Files), r.Truncated)
	}
	r, _ = (&Searcher{}).Glob(context.Background(), root, "*.txt", GlobOptions{Limit: -1})
	if len(r.Files) != 150 || r.Truncated {
		t.Errorf("no limit: files %d truncated %v", len(r.Files), r.Truncated)
	}
}

func TestGlobPatterns(t *testing.T) {
	root := mkTree(t, map[string]string{
		"main.go":                   "",
		"README.md":                 "",
		"cmd/dsh/main.go":           "",
		"cmd/dsh/main_test.go":      "",
		"internal/x/y.go":           "",
		"web/app.ts":                "",
		"web/app.tsx":               "",
		"web/node_modules/r/i.js":   "",
		".gitignore":                "node_modules/\n*.gen.go\n",
		"z.gen.go":                  "",
		".github/workflows/ci.yml":  "",
		"link.go":                   "->main.go",
		"linkdir":                   "->cmd",
		"dangling.go":               "->nowhere.go",
		"weird/a[1].go":             "",
		"vendor/github.com/a/b.go":  "",
		"vendor/github.com/a/b.txt": "",
	})
	tests := []struct {
		pattern string
		hidden  bool
		want    []string
	}{
		{pattern: "*.go", want: []string{"link.go", "main.go"}}, // top level only; links to files count; ignored z.gen.go does not
		{pattern: "**/*.go", want: []string{"cmd/dsh/main.go", "cmd/dsh/main_test.go", "internal/x/y.go", "link.go", "main.go", "vendor/github.com/a/b.go", "weird/a[1].go"}},
		{pattern: "cmd/**/*_test.go", want: []string{"cmd/dsh/main_test.go"}},
		{pattern: "./cmd/*/main.go", want: []string{"cmd/dsh/main.go"}},
		{pattern: "web/*.{ts,tsx}", want: []string{"web/app.ts", "web/app.tsx"}},
		{pattern: "**/*.js", want: []string{}},                                           // node_modules is ignored
		{pattern: "web/node_modules/**/*.js", want: []string{"web/node_modules/r/i.js"}}, // ...unless named
		{pattern: "**/*.yml", want: []string{}},                                          // hidden directory
		{pattern: "**/*.yml", hidden: true, want: []string{".github/workflows/ci.yml"}},
		{pattern: "weird/a\\[1\\].go", want: []string{"weird/a[1].go"}},
		{pattern: "vendor/*/a/*", want: []string{"vendor/github.com/a/b.go", "vendor/github.com/a/b.txt"}},
		{pattern: "missing/**/*.go", want: []string{}},
		{pattern: "README.md", want: []string{"README.md"}},
		{pattern: "**", want: []string{"README.md", "cmd/dsh/main.go", "cmd/dsh/main_test.go", "internal/x/y.go", "link.go", "main.go",
			"vendor/github.com/a/b.go", "vendor/github.com/a/b.txt", "web/app.ts", "web/app.tsx", "weird/a[1].go"}},
	}
	for _, tt := range tests {
		r, err := (&Searcher{}).Glob(context.Background(), root, tt.pattern, GlobOptions{Hidden: tt.hidden})
		if err != nil {
			t.Errorf("Glob(%q): %v", tt.pattern, err)
			continue
		}
		got := globPaths(r)
		slices.Sort(got)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Glob(%q, hidden=%v) (-want +got):\n%s", tt.pattern, tt.hidden, diff)
		}
	}
	for _, bad := range []string{"", "/etc/*", "../*.go", "a/../../b", "[x"} {
		if _, err := (&Searcher{}).Glob(context.Background(), root, bad, GlobOptions{}); err == nil || !strings.HasPrefix(err.Error(), "search: ") {
			t.Errorf("Glob(%q) err = %v, want a search error", bad, err)
		}
	}
	if _, err := (&Searcher{}).Glob(context.Background(), root+"/main.go", "*", GlobOptions{}); err == nil {
		t.Error("Glob on a file should fail")
	}
}

func TestCouldContain(t *testing.T) {
	comps := strings.Split("src/*/lib/*.go", "/")
	for rel, want := range map[string]bool{
		"src": true, "src/a": true, "src/a/lib": true, "src/a/lib/deeper": false, "docs": false, "src/a/other": false,
	} {
		if got := couldContain(comps, rel); got != want {
			t.Errorf("couldContain(%q) = %v, want %v", rel, got, want)
		}
	}
	comps = strings.Split("src/**/x.go", "/")
	for rel, want := range map[string]bool{"src": true, "src/a/b/c": true, "lib": false} {
		if got := couldContain(comps, rel); got != want {
			t.Errorf("couldContain(** %q) = %v, want %v", rel, got, want)
		}
	}
}
