package searchtool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/search"
	"github.com/dshq/dsh/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeHost is the agent a call runs for; only Cwd matters to these tools.
type fakeHost struct{ cwd string }

func (h fakeHost) AgentID() string                                       { return "agent-1" }
func (h fakeHost) SessionID() string                                     { return "session-1" }
func (h fakeHost) Cwd() string                                           { return h.cwd }
func (h fakeHost) Append(context.Context, string, any) error             { return nil }
func (h fakeHost) Inject(context.Context, []llm.Block, llm.Source) error { return nil }
func (h fakeHost) Scope() *kernel.Scope                                  { return kernel.NewScope("test") }

func mkTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(body, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func byName(t *testing.T, tools []tool.Tool, name string) tool.Tool {
	t.Helper()
	for _, tl := range tools {
		if tl.Info().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %q", name)
	return nil
}

// run calls a tool as the registry would, returning its text or error.
func run(t *testing.T, tl tool.Tool, cwd string, args string) (string, error) {
	t.Helper()
	call := tool.Call{ID: "c1", Name: tl.Info().Name, Args: json.RawMessage(args), Raw: args}
	if cwd != "" {
		call.Host = fakeHost{cwd: cwd}
	}
	res, err := tl.Run(context.Background(), call)
	if err != nil {
		return "", err
	}
	if res.IsError {
		t.Fatalf("unexpected error result: %v", res.Content)
	}
	return llm.TextOf(res.Content), nil
}

func mustRun(t *testing.T, tl tool.Tool, cwd, args string) string {
	t.Helper()
	out, err := run(t, tl, cwd, args)
	if err != nil {
		t.Fatalf("%s %s: %v", tl.Info().Name, args, err)
	}
	return out
}

func TestToolsInfo(t *testing.T) {
	tools := Tools(Options{})
	var names []string
	for _, tl := range tools {
		info := tl.Info()
		names = append(names, info.Name)
		if !info.ReadOnly || !info.Concurrent {
			t.Errorf("%s: ReadOnly %v Concurrent %v", info.Name, info.ReadOnly, info.Concurrent)
		}
		for _, ph := range []string{"{limit}", "{hidden}", "{depth}", "{entries}", "{denied}"} {
			if strings.Contains(info.Description, ph) {
				t.Errorf("%s: unfilled placeholder %s in description", info.Name, ph)
			}
		}
		if len(info.Description) < 200 {
			t.Errorf("%s: description too short: %q", info.Name, info.Description)
		}
		var schema struct {
			Type                 string                     `json:"type"`
			Required             []string                   `json:"required"`
			Properties           map[string]json.RawMessage `json:"properties"`
			AdditionalProperties any                        `json:"additionalProperties"`
		}
		if err := json.Unmarshal(info.Parameters, &schema); err != nil {
			t.Fatalf("%s: schema: %v", info.Name, err)
		}
		if schema.Type != "object" || schema.AdditionalProperties != nil {
			t.Errorf("%s: schema %s", info.Name, info.Parameters)
		}
		if _, ok := tl.(tool.CallPresenter); !ok {
			t.Errorf("%s: no call presenter", info.Name)
		}
	}
	if diff := cmp.Diff([]string{"glob", "grep", "ls"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	kinds := []tool.Kind{tools[0].Info().Kind, tools[1].Info().Kind, tools[2].Info().Kind}
	if diff := cmp.Diff([]tool.Kind{tool.KindSearch, tool.KindSearch, tool.KindRead}, kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}

	grep := string(tools[1].Info().Parameters)
	for _, want := range []string{`"required":["pattern"]`, `"enum":["files_with_matches","content","count"]`,
		`"-A":{"type":"integer"`, `"minimum":0`, `(default 250)`} {
		if !strings.Contains(grep, want) {
			t.Errorf("grep schema lacks %s: %s", want, grep)
		}
	}
	if strings.Contains(grep, `"include"`) {
		t.Errorf("grep schema advertises the include alias: %s", grep)
	}
	if strings.Contains(grep, `"null"`) {
		t.Errorf("grep schema allows null: %s", grep)
	}
	if d := Tools(Options{SkipHidden: true, GrepLimit: 40})[1].Info().Description; !strings.Contains(d, "are skipped") || !strings.Contains(d, "Default 40.") {
		t.Errorf("description does not follow options: %s", d)
	}
}

func TestGlobTool(t *testing.T) {
	root := mkTree(t, map[string]string{
		"a.go": "", "sub/b.go": "", "sub/c.go": "", "sub/d.txt": "", ".gitignore": "gen/\n", "gen/x.go": "",
		".github/w.go": "",
	})
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for i, n := range []string{"a.go", "sub/b.go", ".github/w.go", "sub/c.go"} {
		ts := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(root, n), ts, ts); err != nil {
			t.Fatal(err)
		}
	}
	glob := byName(t, Tools(Options{}), "glob")

	// Newest first, relative to the working directory.
	if diff := cmp.Diff("sub/c.go\n.github/w.go\nsub/b.go\na.go", mustRun(t, glob, root, `{"pattern":"**/*.go"}`)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// path is resolved against the working directory; output paths stay
	// relative to it.
	if diff := cmp.Diff("sub/c.go\nsub/b.go", mustRun(t, glob, root, `{"pattern":"*.go","path":"sub"}`)); diff != "" {
		t.Errorf("path arg (-want +got):\n%s", diff)
	}
	// An absolute pattern, from a working directory it is outside of.
	other := t.TempDir()
	abs := filepath.Join(root, "sub")
	want := filepath.Join(root, "sub", "c.go") + "\n" + filepath.Join(root, "sub", "b.go")
	if diff := cmp.Diff(want, mustRun(t, glob, other, `{"pattern":"`+abs+`/*.go"}`)); diff != "" {
		t.Errorf("absolute pattern (-want +got):\n%s", diff)
	}
	// Patterns reaching up work too; results outside the working
	// directory print absolute.
	if diff := cmp.Diff(filepath.Join(root, "a.go"), mustRun(t, glob, filepath.Join(root, "sub"), `{"pattern":"../*.go"}`)); diff != "" {
		t.Errorf("../ pattern (-want +got):\n%s", diff)
	}
	// Cap and footer.
	out := mustRun(t, byName(t, Tools(Options{GlobLimit: 2}), "glob"), root, `{"pattern":"**/*.go"}`)
	if diff := cmp.Diff("sub/c.go\n.github/w.go\n(Showing the 2 most recently modified of 4 matching files. Use a more specific pattern or path to see others.)", out); diff != "" {
		t.Errorf("capped (-want +got):\n%s", diff)
	}
	// Hidden files can be left out.
	if out := mustRun(t, byName(t, Tools(Options{SkipHidden: true}), "glob"), root, `{"pattern":"**/w.go"}`); !strings.HasPrefix(out, "No files found matching **/w.go in ") {
		t.Errorf("skip hidden: %q", out)
	}
	if _, err := run(t, glob, root, `{"pattern":"[oops"}`); err == nil || !strings.Contains(err.Error(), "invalid glob pattern") {
		t.Errorf("bad pattern: %v", err)
	}
	if _, err := run(t, glob, root, `{"pattern":"*.go","path":"missing"}`); err == nil {
		t.Error("missing directory: no error")
	}
}

var grepFiles = map[string]string{
	"main.go":      "package main\n\nfunc main() {\n\trun()\n}\n\nfunc run() {}\n",
	"lib/util.go":  "package lib\n\nfunc Helper() int {\n\treturn 1\n}\n",
	"lib/util.txt": "func in a text file\n",
	"README.md":    "# Func docs\n",
}

func TestGrepToolModes(t *testing.T) {
	root := mkTree(t, grepFiles)
	grep := byName(t, Tools(Options{Engine: &search.Searcher{Backend: search.Native}}), "grep")
	tests := []struct {
		args, want string
	}{
		{`{"pattern":"func"}`, "Found 3 files\nlib/util.go\nlib/util.txt\nmain.go"},
		{`{"pattern":"func","-i":true,"glob":"*.md"}`, "Found 1 file\nREADME.md"},
		{`{"pattern":"func","glob":"!*.txt"}`, "Found 2 files\nlib/util.go\nmain.go"},
		{`{"pattern":"func","include":"*.txt"}`, "Found 1 file\nlib/util.txt"}, // the unadvertised alias
		{`{"pattern":"func","output_mode":"count"}`, "lib/util.go:1\nlib/util.txt:1\nmain.go:2\nFound 4 matching lines across 3 files"},
		{`{"pattern":"^func \\w+\\(","output_mode":"content"}`, "lib/util.go:3:func Helper() int {\nmain.go:3:func main() {\nmain.go:7:func run() {}"},
		{`{"pattern":"^func \\w+\\(","output_mode":"content","-n":false,"path":"lib"}`, "lib/util.go:func Helper() int {"},
		{`{"pattern":"run\\(\\)","output_mode":"content","-C":1}`,
			"main.go-3-func main() {\nmain.go:4:\trun()\nmain.go-5-}\nmain.go-6-\nmain.go:7:func run() {}"},
		{`{"pattern":"return|package main","output_mode":"content","-A":1,"-B":0,"-C":5}`,
			"lib/util.go:4:\treturn 1\nlib/util.go-5-}\n--\nmain.go:1:package main\nmain.go-2-"},
		{`{"pattern":"func","output_mode":"content","head_limit":2}`,
			"lib/util.go:3:func Helper() int {\nlib/util.txt:1:func in a text file\n(Showing the first 2 of 4 lines, in path order. Narrow the pattern, path or glob, or raise head_limit, to see more.)"},
		{`{"pattern":"func","head_limit":1}`,
			"Found 3 files\nlib/util.go\n(Showing the first 1 of 3 files, in path order. Narrow the pattern, path or glob, or raise head_limit, to see more.)"},
		{`{"pattern":"func \\w+\\(\\) \\{\\n\\trun","multiline":true,"output_mode":"content"}`, "main.go:3:func main() {\nmain.go:4:\trun()"},
		{`{"pattern":"nothing-matches-this"}`, "No matches found"},
		{`{"pattern":"Helper","path":"lib/util.go","output_mode":"content"}`, "lib/util.go:3:func Helper() int {"},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, mustRun(t, grep, root, tt.args)); diff != "" {
			t.Errorf("grep %s (-want +got):\n%s", tt.args, diff)
		}
	}
	// Without a host, relative paths resolve against the process's
	// directory; absolute ones work anywhere and print absolute.
	out := mustRun(t, grep, "", `{"pattern":"Helper","path":"`+root+`"}`)
	if want := "Found 1 file\n" + filepath.Join(root, "lib", "util.go"); out != want {
		t.Errorf("no host: %q, want %q", out, want)
	}
}

func TestGrepToolErrors(t *testing.T) {
	root := mkTree(t, grepFiles)
	grep := byName(t, Tools(Options{}), "grep")
	for args, want := range map[string]string{
		`{"pattern":"("}`:                        "search: invalid pattern",
		`{"pattern":"a\\nb"}`:                    "line break",
		`{"pattern":"a","output_mode":"lines"}`:  "grep: output_mode must be",
		`{"pattern":"a","-A":-1}`:                "grep: -A must not be negative",
		`{"pattern":"a","head_limit":-5}`:        "grep: head_limit must not be negative",
		`{"pattern":"a","path":"no/such/dir"}`:   "no such file",
		`{"pattern":"a","glob":"a**"}`:           "invalid glob",
		`{"pattern":"a","output_mode":"content"`: "invalid arguments", // not JSON: Func's decode error
	} {
		if _, err := run(t, grep, root, args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("grep %s: err = %v, want %q", args, err, want)
		}
	}
}

func TestLSTool(t *testing.T) {
	root := mkTree(t, map[string]string{
		"cmd/dsh/main.go": "", "go.mod": "", "README.md": "", ".gitignore": "bin/\n", "bin/dsh": "",
		"docs/a.md": "", "docs/b.snap": "", "link": "->go.mod", ".env": "",
	})
	ls := byName(t, Tools(Options{}), "ls")
	want := root + "/\n  .env\n  .gitignore\n  README.md\n  cmd/\n    dsh/\n      main.go\n  docs/\n    a.md\n    b.snap\n  go.mod\n  link -> go.mod"
	if diff := cmp.Diff(want, mustRun(t, ls, root, `{}`)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	want = filepath.Join(root, "docs") + "/\n  a.md"
	if diff := cmp.Diff(want, mustRun(t, ls, root, `{"path":"docs","ignore":["*.snap"]}`)); diff != "" {
		t.Errorf("ignore (-want +got):\n%s", diff)
	}
	small := byName(t, Tools(Options{ListDepth: 1, ListEntries: 3, SkipHidden: true}), "ls")
	want = root + "/\n  README.md\n  cmd/\n  docs/\n(Listing cut at 3 entries, upper levels first. List a subdirectory, or use glob, to see more.)"
	if diff := cmp.Diff(want, mustRun(t, small, root, `{}`)); diff != "" {
		t.Errorf("capped (-want +got):\n%s", diff)
	}
	shallow := byName(t, Tools(Options{ListDepth: 1}), "ls")
	if out := mustRun(t, shallow, root, `{"path":"cmd"}`); out != filepath.Join(root, "cmd")+"/\n  dsh/\n(Deeper directories are not expanded. List a subdirectory to see inside.)" {
		t.Errorf("depth limited: %q", out)
	}
	if out := mustRun(t, ls, root, `{"path":"bin"}`); out != filepath.Join(root, "bin")+"/\n  dsh" {
		t.Errorf("an ignored directory named explicitly is listed: %q", out)
	}
	if _, err := run(t, ls, root, `{"path":"go.mod"}`); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("ls on a file: %v", err)
	}
}

func TestPresenters(t *testing.T) {
	tools := Tools(Options{})
	tests := []struct {
		name, args string
		want       *tool.View
	}{
		{"glob", `{"pattern":"**/*.go"}`, &tool.View{Title: "glob **/*.go", Kind: tool.KindSearch}},
		{"glob", `{"pattern":"*.md","path":"docs"}`, &tool.View{Title: "glob *.md in docs", Kind: tool.KindSearch, Locations: []tool.Location{{Path: "docs"}}}},
		{"glob", `{"path":"docs"}`, nil},
		{"glob", `not json`, nil},
		{"grep", `{"pattern":"TODO","path":"src","glob":"*.ts"}`, &tool.View{Title: `grep "TODO" in src (*.ts)`, Kind: tool.KindSearch, Locations: []tool.Location{{Path: "src"}}}},
		{"grep", `{"pattern":42}`, nil},
		{"ls", `{}`, &tool.View{Title: "ls .", Kind: tool.KindRead, Locations: []tool.Location{{Path: "."}}}},
		{"ls", `{"path":"/tmp"}`, &tool.View{Title: "ls /tmp", Kind: tool.KindRead, Locations: []tool.Location{{Path: "/tmp"}}}},
		{"ls", `[1]`, nil},
	}
	for _, tt := range tests {
		got := byName(t, tools, tt.name).(tool.CallPresenter).PresentCall(json.RawMessage(tt.args))
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tt.name, tt.args, diff)
		}
	}
}

// Through the registry, the schema rejects what the model gets wrong
// before the engine runs.
func TestThroughRegistry(t *testing.T) {
	root := mkTree(t, grepFiles)
	r := tool.NewRegistry()
	for _, tl := range Tools(Options{}) {
		if _, err := r.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	exec := func(name, args string) tool.Outcome {
		return r.Execute(context.Background(), tool.NewCall("c1", name, args, fakeHost{cwd: root}), tool.ExecOptions{})
	}
	if out := exec("grep", `{"pattern":"Helper","output_mode":"content"}`); out.Result.IsError || llm.TextOf(out.Result.Content) != "lib/util.go:3:func Helper() int {" {
		t.Errorf("grep: %+v", out.Result)
	}
	for _, c := range []struct{ name, args string }{
		{"grep", `{"output_mode":"content"}`},
		{"grep", `{"pattern":"a","output_mode":"lines"}`},
		{"grep", `{"pattern":"a","-A":-2}`},
		{"glob", `{"pattern":7}`},
		{"ls", `{"ignore":"dist"}`},
	} {
		if out := exec(c.name, c.args); !out.Result.IsError || out.Error == nil || out.Error.Code != "INVALID_ARGS" {
			t.Errorf("%s %s: outcome = %+v", c.name, c.args, out)
		}
	}
	if out := exec("glob", `{"pattern":"**/*.md"}`); out.Result.IsError || llm.TextOf(out.Result.Content) != "README.md" {
		t.Errorf("glob: %+v", out.Result)
	}
}
