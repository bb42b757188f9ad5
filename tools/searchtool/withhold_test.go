package searchtool

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/search"
	"github.com/dshq/dsh/tool"
)

// deniedTree holds a secret in .env and under secrets/; the denied files
// sort first and are the newest, so a cap applied before the filter would
// spend its places on them.
var deniedTree = map[string]string{
	".env":                 "SECRET=hunter2\n",
	"a.txt":                "SECRET a\n",
	"b.txt":                "SECRET b\n",
	"main.go":              "package main\n\n// SECRET comes from the environment.\n",
	"secrets/key.txt":      "SECRET key-material\n",
	"secrets/sub/more.txt": "SECRET more-material\n",
}

// leaks are what no output may contain when the filter is on.
var leaks = []string{".env", "secrets", "hunter2", "key-material", "more-material", "key.txt", "more.txt"}

// fakeDenied denies .env and secrets/ (with everything under it) in the
// calling host's working directory, and records what it was asked.
type fakeDenied struct {
	mu    sync.Mutex
	calls int      // Denied calls (one per tool call)
	asked []string // paths checked
}

func (f *fakeDenied) denied(_ context.Context, call tool.Call) func(string) bool {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	root := call.Host.Cwd()
	return func(p string) bool {
		f.mu.Lock()
		f.asked = append(f.asked, p)
		f.mu.Unlock()
		rel, err := filepath.Rel(root, p)
		if err != nil || !filepath.IsAbs(p) {
			panic("denied check got " + p)
		}
		rel = filepath.ToSlash(rel)
		return rel == ".env" || rel == "secrets" || strings.HasPrefix(rel, "secrets/")
	}
}

func deniedRoot(t *testing.T) string {
	t.Helper()
	root := mkTree(t, deniedTree)
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for i, n := range []string{"main.go", "a.txt", "b.txt", "secrets/sub/more.txt", "secrets/key.txt", ".env"} {
		ts := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(root, filepath.FromSlash(n)), ts, ts); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// runResult calls a tool and returns its whole result.
func runResult(t *testing.T, tl tool.Tool, cwd, args string) tool.Result {
	t.Helper()
	call := tool.Call{ID: "c1", Name: tl.Info().Name, Args: json.RawMessage(args), Raw: args, Host: fakeHost{cwd: cwd}}
	res, err := tl.Run(context.Background(), call)
	if err != nil || res.IsError {
		t.Fatalf("%s %s: %v %v", tl.Info().Name, args, err, res.Content)
	}
	return res
}

func noLeaks(t *testing.T, what, out string) {
	t.Helper()
	for _, l := range leaks {
		if strings.Contains(out, l) {
			t.Errorf("%s leaks %q:\n%s", what, l, out)
		}
	}
}

func withheldOf(t *testing.T, res tool.Result) int {
	t.Helper()
	if len(res.Meta) == 0 {
		return 0
	}
	var m struct{ Withheld int }
	if err := json.Unmarshal(res.Meta, &m); err != nil {
		t.Fatalf("meta %s: %v", res.Meta, err)
	}
	return m.Withheld
}

func TestGrepWithholdsDenied(t *testing.T) {
	root := deniedRoot(t)
	for _, backend := range []search.Backend{search.Native, search.Ripgrep} {
		t.Run(string(backend), func(t *testing.T) {
			if backend == search.Ripgrep {
				if _, err := exec.LookPath("rg"); err != nil {
					t.Skip("ripgrep (rg) is not installed")
				}
			}
			f := &fakeDenied{}
			grep := byName(t, Tools(Options{Engine: &search.Searcher{Backend: backend}, Denied: f.denied}), "grep")
			tests := []struct{ args, want string }{
				{`{"pattern":"SECRET"}`, "Found 3 files\na.txt\nb.txt\nmain.go"},
				{`{"pattern":"SECRET","output_mode":"content"}`, "a.txt:1:SECRET a\nb.txt:1:SECRET b\nmain.go:3:// SECRET comes from the environment."},
				{`{"pattern":"SECRET","output_mode":"content","-C":1}`, "a.txt:1:SECRET a\n--\nb.txt:1:SECRET b\n--\nmain.go-2-\nmain.go:3:// SECRET comes from the environment."},
				{`{"pattern":"SECRET","output_mode":"count"}`, "a.txt:1\nb.txt:1\nmain.go:1\nFound 3 matching lines across 3 files"},
				{`{"pattern":"hunter2|material"}`, "No matches found"},
				// head_limit counts shown files only: .env sorts first.
				{`{"pattern":"SECRET","head_limit":2}`,
					"Found 3 files\na.txt\nb.txt\n(Showing the first 2 of 3 files, in path order. Narrow the pattern, path or glob, or raise head_limit, to see more.)"},
				{`{"pattern":"SECRET","output_mode":"content","head_limit":1}`,
					"a.txt:1:SECRET a\n(Showing the first 1 of 3 lines, in path order. Narrow the pattern, path or glob, or raise head_limit, to see more.)"},
				// A glob naming the file does not reach it either.
				{`{"pattern":"SECRET","glob":".env"}`, "No matches found"},
				{`{"pattern":"SECRET","path":"secrets"}`, "No matches found"},
			}
			for _, tt := range tests {
				res := runResult(t, grep, root, tt.args)
				out := llm.TextOf(res.Content)
				if diff := cmp.Diff(tt.want, out); diff != "" {
					t.Errorf("grep %s (-want +got):\n%s", tt.args, diff)
				}
				noLeaks(t, "grep "+tt.args, out)
			}
			res := runResult(t, grep, root, `{"pattern":"SECRET"}`)
			if n := withheldOf(t, res); n != 3 {
				t.Errorf("meta withheld = %d (%s), want 3", n, res.Meta)
			}
			if f.calls != len(tests)+1 {
				t.Errorf("Denied called %d times for %d calls", f.calls, len(tests)+1)
			}
		})
	}
}

func TestGlobWithholdsDenied(t *testing.T) {
	root := deniedRoot(t)
	f := &fakeDenied{}
	glob := byName(t, Tools(Options{Denied: f.denied}), "glob")
	res := runResult(t, glob, root, `{"pattern":"**/*"}`)
	out := llm.TextOf(res.Content)
	if diff := cmp.Diff("b.txt\na.txt\nmain.go\n(3 matching files withheld: permission rules deny reading them.)", out); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	noLeaks(t, "glob", out)
	if n := withheldOf(t, res); n != 3 {
		t.Errorf("meta withheld = %d", n)
	}
	// The cap counts shown files only: the denied ones are the newest.
	capped := byName(t, Tools(Options{GlobLimit: 2, Denied: f.denied}), "glob")
	out = mustRun(t, capped, root, `{"pattern":"**/*"}`)
	want := "b.txt\na.txt\n(Showing the 2 most recently modified of 3 matching files. Use a more specific pattern or path to see others.)\n(3 matching files withheld: permission rules deny reading them.)"
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("capped (-want +got):\n%s", diff)
	}
	out = mustRun(t, glob, root, `{"pattern":"secrets/**/*.txt"}`)
	if want := "No files found matching secrets/**/*.txt in secrets\n(2 matching files withheld: permission rules deny reading them.)"; out != want {
		t.Errorf("only denied files: %q, want %q", out, want)
	}
	out = mustRun(t, glob, root, `{"pattern":".env"}`)
	if want := "No files found matching .env in .\n(1 matching file withheld: permission rules deny reading it.)"; out != want {
		t.Errorf("one denied file: %q, want %q", out, want)
	}
}

func TestLSWithholdsDenied(t *testing.T) {
	root := deniedRoot(t)
	f := &fakeDenied{}
	ls := byName(t, Tools(Options{Denied: f.denied}), "ls")
	res := runResult(t, ls, root, `{}`)
	out := llm.TextOf(res.Content)
	want := root + "/\n  a.txt\n  b.txt\n  main.go\n(2 entries withheld: permission rules deny reading them.)"
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	noLeaks(t, "ls", strings.TrimPrefix(out, root))
	if n := withheldOf(t, res); n != 2 {
		t.Errorf("meta withheld = %d", n)
	}
	// The denied directory was not read.
	for _, p := range f.asked {
		if strings.HasPrefix(p, filepath.Join(root, "secrets")+string(filepath.Separator)) {
			t.Errorf("asked about %s, inside a withheld directory", p)
		}
	}
	// The cap counts shown entries only.
	small := byName(t, Tools(Options{ListEntries: 2, Denied: f.denied}), "ls")
	want = root + "/\n  a.txt\n  b.txt\n(Listing cut at 2 entries, upper levels first. List a subdirectory, or use glob, to see more.)\n(1 entry withheld: permission rules deny reading it.)"
	if diff := cmp.Diff(want, mustRun(t, small, root, `{}`)); diff != "" {
		t.Errorf("capped (-want +got):\n%s", diff)
	}
}

// leakyEngine ignores the Withhold options, as an Engine written without
// them would: the tools' own check must still keep denied files out.
type leakyEngine struct{ search.Searcher }

func (e *leakyEngine) Grep(ctx context.Context, root string, o search.GrepOptions) (*search.GrepResult, error) {
	o.Withhold = nil
	return e.Searcher.Grep(ctx, root, o)
}

func (e *leakyEngine) Glob(ctx context.Context, root, pattern string, o search.GlobOptions) (*search.GlobResult, error) {
	o.Withhold = nil
	return e.Searcher.Glob(ctx, root, pattern, o)
}

func (e *leakyEngine) List(ctx context.Context, root string, o search.ListOptions) (*search.ListResult, error) {
	o.Withhold = nil
	return e.Searcher.List(ctx, root, o)
}

func TestWithholdWithoutEngineSupport(t *testing.T) {
	root := deniedRoot(t)
	f := &fakeDenied{}
	tools := Tools(Options{Engine: &leakyEngine{search.Searcher{Backend: search.Native}}, Denied: f.denied})
	for _, c := range []struct{ name, args, want string }{
		{"grep", `{"pattern":"SECRET","output_mode":"content"}`, "a.txt:1:SECRET a\nb.txt:1:SECRET b\nmain.go:3:// SECRET comes from the environment."},
		{"grep", `{"pattern":"SECRET","output_mode":"count"}`, "a.txt:1\nb.txt:1\nmain.go:1\nFound 3 matching lines across 3 files"},
		{"glob", `{"pattern":"**/*"}`, "b.txt\na.txt\nmain.go\n(3 matching files withheld: permission rules deny reading them.)"},
		{"ls", `{}`, root + "/\n  a.txt\n  b.txt\n  main.go\n(2 entries withheld: permission rules deny reading them.)"},
	} {
		if diff := cmp.Diff(c.want, mustRun(t, byName(t, tools, c.name), root, c.args)); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", c.name, c.args, diff)
		}
	}
}

func TestDeniedNilCheck(t *testing.T) {
	root := deniedRoot(t)
	none := func(context.Context, tool.Call) func(string) bool { return nil }
	grep := byName(t, Tools(Options{Denied: none}), "grep")
	if out := mustRun(t, grep, root, `{"pattern":"hunter2"}`); out != "Found 1 file\n.env" {
		t.Errorf("nothing denied: %q", out)
	}
}

func TestDeniedDescriptions(t *testing.T) {
	f := &fakeDenied{}
	for i, tl := range Tools(Options{Denied: f.denied}) {
		d, plain := tl.Info().Description, Tools(Options{})[i].Info().Description
		if !strings.Contains(d, "permission rules deny reading") || strings.Contains(plain, "permission rules") {
			t.Errorf("%s: description with a filter %q, without %q", tl.Info().Name, d, plain)
		}
		if strings.Contains(d, "{denied}") || strings.Contains(plain, "{denied}") {
			t.Errorf("%s: unfilled placeholder", tl.Info().Name)
		}
	}
}
