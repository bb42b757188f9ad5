package search

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func listPaths(r *ListResult) []string {
	out := []string{}
	for _, e := range r.Entries {
		p := e.Path
		if e.Dir {
			p += "/"
		}
		if e.Symlink {
			p += "@"
		}
		out = append(out, fmt.Sprintf("%d %s", e.Depth, p))
	}
	return out
}

func TestListTree(t *testing.T) {
	root := mkTree(t, map[string]string{
		"b.txt":             "",
		"a/":                "",
		"a-b.txt":           "", // sorts before "a/x" bytewise, but the tree keeps a's contents under a
		"a/x.go":            "",
		"a/sub/deep/z.go":   "",
		".hidden":           "",
		".gitignore":        "build/\n",
		"build/out":         "",
		".git/HEAD":         "",
		"link":              "->b.txt",
		"node_modules/m.js": "",
	})
	r, err := (&Searcher{}).List(context.Background(), root, ListOptions{Ignore: []string{"node_modules"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1 a/", "2 a/sub/", "3 a/sub/deep/", "2 a/x.go", "1 a-b.txt", "1 b.txt", "1 link@"}
	if diff := cmp.Diff(want, listPaths(r)); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
	if r.Truncated || !r.DepthLimited || r.Dir != root {
		t.Errorf("Truncated %v DepthLimited %v Dir %q", r.Truncated, r.DepthLimited, r.Dir)
	}

	r, _ = (&Searcher{}).List(context.Background(), root, ListOptions{MaxDepth: -1, Hidden: true, Ignore: []string{"a/sub", "*.txt"}})
	want = []string{"1 .gitignore", "1 .hidden", "1 a/", "2 a/x.go", "1 link@", "1 node_modules/", "2 node_modules/m.js"}
	if diff := cmp.Diff(want, listPaths(r)); diff != "" {
		t.Errorf("hidden, unlimited depth, ignores (-want +got):\n%s", diff)
	}
	if r.DepthLimited {
		t.Error("DepthLimited with no depth limit")
	}
}

func TestListCapKeepsUpperLevels(t *testing.T) {
	files := map[string]string{}
	for i := range 5 {
		files[fmt.Sprintf("d%d/f1", i)] = ""
		files[fmt.Sprintf("d%d/f2", i)] = ""
		files[fmt.Sprintf("top%d", i)] = ""
	}
	root := mkTree(t, files)
	r, err := (&Searcher{}).List(context.Background(), root, ListOptions{MaxEntries: 13})
	if err != nil {
		t.Fatal(err)
	}
	// All 10 top-level entries first, then the first three second-level.
	want := []string{"1 d0/", "2 d0/f1", "2 d0/f2", "1 d1/", "2 d1/f1", "1 d2/", "1 d3/", "1 d4/",
		"1 top0", "1 top1", "1 top2", "1 top3", "1 top4"}
	if diff := cmp.Diff(want, listPaths(r)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !r.Truncated {
		t.Error("Truncated not set")
	}
	if _, err := (&Searcher{}).List(context.Background(), root+"/top0", ListOptions{}); err == nil {
		t.Error("List on a file should fail")
	}
	if _, err := (&Searcher{}).List(context.Background(), root, ListOptions{Ignore: []string{"[x"}}); err == nil {
		t.Error("List accepted an invalid ignore pattern")
	}
}
