package search

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		line    string
		ok      bool
		glob    string
		kind    matchKind
		lit     string
		negate  bool
		dirOnly bool
	}{
		{line: "", ok: false},
		{line: "   ", ok: false},
		{line: "# comment", ok: false},
		{line: "/", ok: false},
		{line: "node_modules", ok: true, glob: "**/node_modules", kind: matchBase, lit: "node_modules"},
		{line: "*.log", ok: true, glob: "**/*.log", kind: matchSuffix, lit: ".log"},
		{line: "build*", ok: true, glob: "**/build*", kind: matchPrefix, lit: "build"},
		{line: "*.py[co]", ok: true, glob: "*.py[co]", kind: matchBaseGlob},
		{line: "build/", ok: true, glob: "**/build", kind: matchBase, lit: "build", dirOnly: true},
		{line: "/root.txt", ok: true, glob: "root.txt", kind: matchPath, lit: "root.txt"},
		{line: "a/b", ok: true, glob: "a/b", kind: matchPath, lit: "a/b"},
		{line: "docs/**", ok: true, glob: "docs/**/*", kind: matchUnder, lit: "docs"},
		{line: "docs/**/*.tmp", ok: true, glob: "docs/**/*.tmp", kind: matchGlob},
		{line: "**/gen", ok: true, glob: "**/gen", kind: matchBase, lit: "gen"},
		{line: "!keep.log", ok: true, glob: "**/keep.log", kind: matchBase, lit: "keep.log", negate: true},
		{line: "!/dist/", ok: true, glob: "dist", kind: matchPath, lit: "dist", negate: true, dirOnly: true},
		{line: `\#hash`, ok: true, glob: "**/#hash", kind: matchBase, lit: "#hash"},
		{line: `\!bang`, ok: true, glob: "**/!bang", kind: matchBase, lit: "!bang"},
		{line: "trail.txt  \t", ok: true, glob: "**/trail.txt", kind: matchBase, lit: "trail.txt"},
		{line: `space\ `, ok: true, glob: `**/space\ `, kind: matchBaseGlob},
		{line: "crlf.txt\r", ok: true, glob: "**/crlf.txt", kind: matchBase, lit: "crlf.txt"},
		{line: "a**b", ok: false},      // "**" must be a whole path element (rg rejects the line)
		{line: "[unclosed", ok: false}, // invalid glob: dropped, not fatal
		{line: "**", ok: true, glob: "**", kind: matchGlob},
	}
	for _, tt := range tests {
		r, ok := parseRule(tt.line)
		if ok != tt.ok {
			t.Errorf("parseRule(%q) ok = %v, want %v", tt.line, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		want := rule{glob: tt.glob, kind: tt.kind, lit: tt.lit, negate: tt.negate, dirOnly: tt.dirOnly}
		if r.kind == matchBaseGlob {
			want.glob = strings.TrimPrefix(tt.glob, "**/")
		}
		if r != want {
			t.Errorf("parseRule(%q) = %+v, want %+v", tt.line, r, want)
		}
	}
}

// Each fast path must agree with the doublestar match it replaces.
func TestRuleFastPathsAgreeWithGlob(t *testing.T) {
	lines := []string{"node_modules", "*.log", "build*", "/root.txt", "a/b", "docs/**", "*.py[co]", "x/*/y"}
	paths := []string{"node_modules", "a/node_modules", "node_modules.txt", "x.log", "a/b/.log", "log",
		"buildx", "a/build", "xbuild", "root.txt", "a/root.txt", "a/b", "c/a/b", "docs", "docs/x", "docs/x/y",
		"mydocs/x", "f.pyc", "a/f.pyo", "f.py", "x/z/y", "x/y", "x/z/w/y"}
	for _, line := range lines {
		r, ok := parseRule(line)
		if !ok {
			t.Fatalf("parseRule(%q) failed", line)
		}
		slow := r
		slow.kind = matchGlob
		if r.kind == matchBaseGlob {
			slow.glob = "**/" + r.glob
		}
		for _, p := range paths {
			base := p[strings.LastIndexByte(p, '/')+1:]
			if got, want := r.match(p, base), slow.match(p, base); got != want {
				t.Errorf("rule %q on %q: fast path %v, glob %v", line, p, got, want)
			}
		}
	}
}

func TestRuleSetLastMatchWins(t *testing.T) {
	s := parseIgnore([]byte("*.log\n!keep.log\nkeep.log/\nout/\n"))
	tests := []struct {
		path  string
		isDir bool
		want  verdict
	}{
		{"a.log", false, ignored},
		{"keep.log", false, allowed}, // negation after the exclusion
		{"keep.log", true, ignored},  // the dir-only line comes last and applies to directories
		{"sub/keep.log", false, allowed},
		{"out", true, ignored},
		{"out", false, noVerdict}, // dir-only does not apply to a file
		{"main.go", false, noVerdict},
	}
	for _, tt := range tests {
		if got := s.match(tt.path, tt.isDir); got != tt.want {
			t.Errorf("match(%q, dir=%v) = %v, want %v", tt.path, tt.isDir, got, tt.want)
		}
	}
}

// ignoreTree is a repository inside a directory whose own .gitignore must
// not reach into it (the repository root stops .gitignore inheritance),
// with nested ignore files, negations, directory-only and anchored rules,
// "**", .ignore / .rgignore precedence, hidden entries and a nested
// repository.
var ignoreTree = map[string]string{
	"outer/.gitignore":     "*.secret\n",
	"outer/repo/.git/HEAD": "ref: refs/heads/main\n",
	"outer/repo/.gitignore": "# comment\n*.log\n!keep.log\nbuild/\n/anchored.txt\ndocs/**/*.tmp\n**/gen/*.go\n" +
		"node_modules\n\\#literal\ntrailing.txt   \n!.env\n",
	"outer/repo/.ignore":                  "dot_ignored\n",
	"outer/repo/.rgignore":                "!keep_rg.log\n",
	"outer/repo/main.go":                  "package main\n",
	"outer/repo/a.log":                    "x\n",
	"outer/repo/keep.log":                 "x\n",
	"outer/repo/keep_rg.log":              "x\n",
	"outer/repo/build/out.txt":            "x\n",
	"outer/repo/anchored.txt":             "x\n",
	"outer/repo/docs/c.tmp":               "x\n",
	"outer/repo/docs/a/b/c.tmp":           "x\n",
	"outer/repo/docs/readme.txt":          "x\n",
	"outer/repo/other/c.tmp":              "x\n",
	"outer/repo/gen/y.go":                 "x\n",
	"outer/repo/x/gen/y.go":               "x\n",
	"outer/repo/x/gen/y.txt":              "x\n",
	"outer/repo/node_modules/m.js":        "x\n",
	"outer/repo/#literal":                 "x\n",
	"outer/repo/trailing.txt":             "x\n",
	"outer/repo/z.secret":                 "x\n",
	"outer/repo/dot_ignored":              "x\n",
	"outer/repo/.env":                     "x\n",
	"outer/repo/.hidden":                  "x\n",
	"outer/repo/.config/settings":         "x\n",
	"outer/repo/sub/.gitignore":           "!x.log\n/only_here.txt\n*.md\n!README.md\n",
	"outer/repo/sub/keep.log":             "x\n",
	"outer/repo/sub/x.log":                "x\n",
	"outer/repo/sub/y.log":                "x\n",
	"outer/repo/sub/build":                "a file, not a directory\n",
	"outer/repo/sub/anchored.txt":         "x\n",
	"outer/repo/sub/only_here.txt":        "x\n",
	"outer/repo/sub/deeper/only_here.txt": "x\n",
	"outer/repo/sub/notes.md":             "x\n",
	"outer/repo/sub/README.md":            "x\n",
	"outer/repo/nested/.git":              "gitdir: ../.git/modules/nested\n",
	"outer/repo/nested/a.log":             "x\n",
	"outer/repo/nested/.gitignore":        "*.tmp\n",
	"outer/repo/nested/b.tmp":             "x\n",
	"outer/repo/link.txt":                 "->main.go",
	"outer/repo/linkdir":                  "->sub",
	"outer/noparent/.gitignore":           "*.out\n",
	"outer/noparent/ws/a.out":             "x\n",
	"outer/noparent/ws/a.txt":             "x\n",
}

func globAll(t *testing.T, root string, hidden bool) []string {
	t.Helper()
	res, err := (&Searcher{}).Glob(context.Background(), root, "**", GlobOptions{Limit: -1, Hidden: hidden})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range res.Files {
		out = append(out, f.Path)
	}
	slices.Sort(out)
	return out
}

func TestIgnoreSemantics(t *testing.T) {
	dir := mkTree(t, ignoreTree)
	repo := filepath.Join(dir, "outer", "repo")

	want := []string{
		".env", // hidden, but a negated .gitignore rule lets it through
		"docs/readme.txt",
		"keep.log",    // "!keep.log" re-includes it
		"keep_rg.log", // .rgignore outranks .gitignore
		"link.txt",    // a symbolic link to a file is a file
		"main.go",
		"nested/a.log", // nested repository: the outer *.log does not reach in
		"other/c.tmp",  // docs/**/*.tmp is anchored to docs
		"sub/README.md",
		"sub/anchored.txt", // /anchored.txt only matches at the repository root
		"sub/build",        // build/ only matches directories
		"sub/deeper/only_here.txt",
		"sub/keep.log",
		"sub/x.log", // the nearer .gitignore's negation wins
		"x/gen/y.txt",
		"z.secret", // outer/.gitignore lies beyond the repository root
	}
	if diff := cmp.Diff(want, globAll(t, repo, false)); diff != "" {
		t.Errorf("visible files (-want +got):\n%s", diff)
	}

	wantHidden := append(slices.Clone(want), ".config/settings", ".gitignore", ".hidden", ".ignore", ".rgignore",
		"nested/.gitignore", "sub/.gitignore")
	slices.Sort(wantHidden)
	if diff := cmp.Diff(wantHidden, globAll(t, repo, true)); diff != "" {
		t.Errorf("visible files with hidden (-want +got):\n%s", diff)
	}

	// Searching from a subdirectory still applies the repository's rules.
	wantSub := []string{"README.md", "anchored.txt", "build", "deeper/only_here.txt", "keep.log", "x.log"}
	if diff := cmp.Diff(wantSub, globAll(t, filepath.Join(repo, "sub"), false)); diff != "" {
		t.Errorf("visible files from sub (-want +got):\n%s", diff)
	}

	// Outside any repository, every .gitignore up to the filesystem root
	// applies (rg --no-require-git).
	if diff := cmp.Diff([]string{"a.txt"}, globAll(t, filepath.Join(dir, "outer", "noparent", "ws"), false)); diff != "" {
		t.Errorf("visible files below a parent .gitignore (-want +got):\n%s", diff)
	}
}

// The Go ignore implementation must agree with rg's own: list every file rg
// would search and compare with the walker's view of the same tree.
func TestIgnoreAgreesWithRipgrep(t *testing.T) {
	rg := rgPath(t)
	dir := mkTree(t, ignoreTree)
	for _, root := range []string{"outer/repo", "outer/repo/sub", "outer/repo/nested", "outer/noparent/ws"} {
		for _, hidden := range []bool{false, true} {
			abs := filepath.Join(dir, filepath.FromSlash(root))
			canon, err := filepath.EvalSymlinks(abs)
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"--files", "--no-config", "--no-require-git", "--no-ignore-exclude", "--no-ignore-global"}
			if hidden {
				args = append(args, "--hidden")
			}
			for _, n := range sortedVCSDirs() {
				args = append(args, "--glob=!"+n)
			}
			cmd := exec.Command(rg, append(args, "--", canon)...)
			cmd.Dir = canon
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("rg --files: %v", err)
			}
			var fromRg []string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				fromRg = append(fromRg, strings.TrimPrefix(l, canon+"/"))
			}
			slices.Sort(fromRg)
			// rg --files leaves out symbolic links (it does not follow
			// them); Glob reports links to files.
			ours := slices.DeleteFunc(globAll(t, abs, hidden), func(p string) bool { return strings.HasPrefix(p, "link") })
			if diff := cmp.Diff(fromRg, ours); diff != "" {
				t.Errorf("root %s hidden=%v: rg vs Go walker (-rg +go):\n%s", root, hidden, diff)
			}
		}
	}
}

func TestOverrides(t *testing.T) {
	ov, err := compileOverrides([]string{"*.go", "!*_test.go"}, []string{"vendor"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path  string
		isDir bool
		want  verdict
	}{
		{"main.go", false, allowed},
		{"a/b/main.go", false, allowed},
		{"main_test.go", false, ignored},
		{"README.md", false, ignored}, // an include exists and does not match
		{"docs", true, noVerdict},     // directories are still entered
		{"vendor", true, ignored},
		{"vendor/x.go", false, allowed}, // (the walk never gets here: vendor is pruned)
	}
	for _, tt := range tests {
		if got := ov.match(tt.path, tt.isDir); got != tt.want {
			t.Errorf("match(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
	if _, err := compileOverrides([]string{"a**"}, nil); err == nil {
		t.Error("compileOverrides accepted an invalid glob")
	}
	if ov, _ := compileOverrides(nil, nil); ov != nil {
		t.Error("no globs should give no overrides")
	}
}
