package search

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// withholdTree has files a deny rule would cover (.env, everything under
// secrets/) that sort and date before the others, so a cap applied before
// the filter would spend its places on them.
var withholdTree = map[string]string{
	".env":                 "SECRET=hunter2\n",
	"a.txt":                "SECRET a\n",
	"b.txt":                "SECRET b\nSECRET b2\n",
	"c.txt":                "SECRET c\n",
	"secrets/key.txt":      "SECRET key\n",
	"secrets/sub/more.txt": "SECRET more\n",
}

// withholder denies .env and secrets/ (the directory and what it holds)
// under root, and records every path it was asked about.
type withholder struct {
	root  string
	mu    sync.Mutex
	asked []string
}

func (w *withholder) withhold(p string) bool {
	w.mu.Lock()
	w.asked = append(w.asked, p)
	w.mu.Unlock()
	rel, err := filepath.Rel(w.root, p)
	if err != nil || !filepath.IsAbs(p) {
		panic("withhold got " + p) // paths are absolute and under the root
	}
	rel = filepath.ToSlash(rel)
	return rel == ".env" || rel == "secrets" || strings.HasPrefix(rel, "secrets/")
}

func TestGrepWithhold(t *testing.T) {
	root := mkTree(t, withholdTree)
	forEachBackend(t, func(t *testing.T, s *Searcher) {
		for _, mode := range []OutputMode{FilesWithMatches, Count, Content} {
			w := &withholder{root: root}
			r := grep(t, s, root, GrepOptions{Pattern: "SECRET", Mode: mode, Hidden: true, Withhold: w.withhold})
			if diff := cmp.Diff([]string{"a.txt", "b.txt", "c.txt"}, paths(r)); diff != "" {
				t.Errorf("%s: files (-want +got):\n%s", mode, diff)
			}
			wantEntries := 3
			if mode == Content {
				wantEntries = 4
			}
			if r.Withheld != 3 || r.TotalFiles != 3 || r.TotalLines != 4 || r.TotalEntries != wantEntries || r.Truncated {
				t.Errorf("%s: Withheld %d TotalFiles %d TotalLines %d TotalEntries %d Truncated %v",
					mode, r.Withheld, r.TotalFiles, r.TotalLines, r.TotalEntries, r.Truncated)
			}
			slices.Sort(w.asked)
			want := []string{filepath.Join(root, ".env"), filepath.Join(root, "a.txt"), filepath.Join(root, "b.txt"), filepath.Join(root, "c.txt"),
				filepath.Join(root, "secrets", "key.txt"), filepath.Join(root, "secrets", "sub", "more.txt")}
			if diff := cmp.Diff(want, w.asked); diff != "" {
				t.Errorf("%s: asked about (-want +got):\n%s", mode, diff)
			}
		}

		// The cap counts only what is shown: .env sorts first, and would
		// otherwise take the only place.
		w := &withholder{root: root}
		r := grep(t, s, root, GrepOptions{Pattern: "SECRET", Hidden: true, Limit: 1, Withhold: w.withhold})
		if diff := cmp.Diff([]string{"a.txt"}, paths(r)); diff != "" || r.TotalEntries != 3 || !r.Truncated {
			t.Errorf("capped: %v TotalEntries %d Truncated %v %s", paths(r), r.TotalEntries, r.Truncated, diff)
		}
		r = grep(t, s, root, GrepOptions{Pattern: "SECRET", Mode: Content, Hidden: true, Limit: 2, Withhold: w.withhold})
		if len(r.Files) != 2 || r.Files[0].Path != "a.txt" || r.Files[1].Path != "b.txt" || len(r.Files[1].Lines) != 1 || r.TotalEntries != 4 {
			t.Errorf("content capped: %+v", r)
		}

		// A search of the denied file itself (the permission layer denies
		// the call before it gets here; the filter still holds).
		r = grep(t, s, filepath.Join(root, ".env"), GrepOptions{Pattern: "SECRET", Withhold: w.withhold})
		if len(r.Files) != 0 || r.Withheld != 1 || r.TotalFiles != 0 {
			t.Errorf("single denied file: %+v", r)
		}
	})
}

func TestGlobWithhold(t *testing.T) {
	root := mkTree(t, withholdTree)
	// The denied files are the newest, so they would lead the list.
	setMtime(t, root, "a.txt", "b.txt", "c.txt", "secrets/sub/more.txt", "secrets/key.txt", ".env")
	w := &withholder{root: root}
	r, err := (&Searcher{}).Glob(context.Background(), root, "**/*", GlobOptions{Hidden: true, Limit: 2, Withhold: w.withhold})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c.txt", "b.txt"}, globPaths(r)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if r.Withheld != 3 || r.Total != 3 || !r.Truncated {
		t.Errorf("Withheld %d Total %d Truncated %v", r.Withheld, r.Total, r.Truncated)
	}
	// A literal base directory: paths passed on include it.
	w = &withholder{root: root}
	r, err = (&Searcher{}).Glob(context.Background(), root, "secrets/**/*.txt", GlobOptions{Withhold: w.withhold})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Files) != 0 || r.Withheld != 2 || r.Total != 0 {
		t.Errorf("secrets/: %+v", r)
	}
}

func TestListWithhold(t *testing.T) {
	root := mkTree(t, withholdTree)
	w := &withholder{root: root}
	r, err := (&Searcher{}).List(context.Background(), root, ListOptions{Hidden: true, MaxDepth: -1, Withhold: w.withhold})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"1 a.txt", "1 b.txt", "1 c.txt"}, listPaths(r)); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if r.Withheld != 2 || r.Truncated {
		t.Errorf("Withheld %d Truncated %v", r.Withheld, r.Truncated)
	}
	// A withheld directory is not entered.
	for _, p := range w.asked {
		if strings.HasPrefix(p, filepath.Join(root, "secrets")+string(filepath.Separator)) {
			t.Errorf("asked about %s inside a withheld directory", p)
		}
	}
	// Withheld entries take no place under the cap, and do not make a
	// listing that shows everything else look cut.
	r, err = (&Searcher{}).List(context.Background(), root, ListOptions{Hidden: true, MaxEntries: 3, Withhold: w.withhold})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"1 a.txt", "1 b.txt", "1 c.txt"}, listPaths(r)); diff != "" || r.Truncated {
		t.Errorf("capped at 3: Truncated %v (-want +got):\n%s", r.Truncated, diff)
	}
	r, err = (&Searcher{}).List(context.Background(), root, ListOptions{Hidden: true, MaxEntries: 2, Withhold: w.withhold})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"1 a.txt", "1 b.txt"}, listPaths(r)); diff != "" || !r.Truncated {
		t.Errorf("capped at 2: Truncated %v (-want +got):\n%s", r.Truncated, diff)
	}
}
