package searchtool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dshq/dsh/search"
	"github.com/dshq/dsh/tool"
)

// Tool names.
const (
	GlobName = "glob"
	GrepName = "grep"
	LSName   = "ls"
)

// DefaultGrepLimit is grep's head_limit when the model sets none: enough
// lines to act on, few enough to keep the context window for the work.
const DefaultGrepLimit = 250

// Options configure the search tools. The zero value is ready to use.
type Options struct {
	// Engine runs the searches; nil means search.Default (ripgrep when
	// installed, the Go walker otherwise).
	Engine search.Engine
	// GlobLimit caps glob's results; 0 means search.DefaultGlobLimit.
	GlobLimit int
	// GrepLimit is grep's default head_limit; 0 means DefaultGrepLimit.
	GrepLimit int
	// ListDepth and ListEntries bound ls; 0 means the search package's
	// defaults.
	ListDepth, ListEntries int
	// SkipHidden leaves out files and directories whose names start with
	// ".". By default they are searched (.github, .env.example, .eslintrc
	// are often what a model looks for); version-control directories such
	// as .git never are.
	SkipHidden bool
	// Denied, when set, keeps files that permission rules deny reading out
	// of results: the decision on a search sees only the directory it
	// names, not the files the search opens. It is called once per call
	// (before the search runs) and returns that call's check, which
	// reports whether an absolute path must not be shown; nil means
	// nothing is denied. The check may be called concurrently and should
	// be cheap: it runs for every file with a match (grep), every
	// matching file (glob) and every entry (ls), before the caps. The app
	// sets it to the permission checker's (permission.Checker.SearchFilter).
	Denied func(ctx context.Context, call tool.Call) func(path string) bool
}

func (o Options) engine() search.Engine {
	if o.Engine != nil {
		return o.Engine
	}
	return search.Default
}

// Tools returns glob, grep and ls, in that order.
func Tools(opts Options) []tool.Tool {
	return []tool.Tool{newGlob(opts), newGrep(opts), newLS(opts)}
}

// presented adds a pure call presenter to a tool built with tool.Func.
type presented struct {
	tool.Tool
	present func(args json.RawMessage) *tool.View
}

// PresentCall implements tool.CallPresenter.
func (p presented) PresentCall(args json.RawMessage) *tool.View { return p.present(args) }

// The tools' parameter schemas are written out rather than inferred
// from the argument types at start-up: reflecting and marshalling them
// cost about 0.8 ms of every dsh start (perf, issue 25), and the schemas
// never change at run time. TestSchemasMatchTheArgumentTypes infers them
// from globArgs, grepArgs and lsArgs (schemaFor) and fails when a type and
// its literal part ways. Extra properties are allowed: the tool layer
// ignores keys it does not declare rather than failing a call over them.
const (
	globSchema = `{"type":"object","properties":{"pattern":{"type":"string","description":"Glob pattern for file paths, e.g. **/*.go or src/**/*.{ts,tsx}"},"path":{"type":"string","description":"Directory to search in, absolute or relative to the working directory. Defaults to the working directory."}},"required":["pattern"]}`
	// grepSchema's {limit} is the head_limit default.
	grepSchema = `{"type":"object","properties":{"pattern":{"type":"string","description":"Regular expression (Go RE2 syntax) to search file contents for"},"path":{"type":"string","description":"File or directory to search, absolute or relative to the working directory. Defaults to the working directory."},"glob":{"type":"string","description":"Only search files matching this glob, e.g. *.go or *.{ts,tsx} or src/**/*.py; a leading ! excludes instead"},"output_mode":{"type":"string","description":"files_with_matches (default): paths of matching files; content: matching lines as path:line:text; count: matching lines per file","enum":["files_with_matches","content","count"]},"-i":{"type":"boolean","description":"Case-insensitive search"},"-n":{"type":"boolean","description":"Show line numbers in content mode (default true)"},"-A":{"type":"integer","description":"Lines of context after each match (content mode)","minimum":0},"-B":{"type":"integer","description":"Lines of context before each match (content mode)","minimum":0},"-C":{"type":"integer","description":"Lines of context before and after each match (content mode); -A and -B override it","minimum":0},"head_limit":{"type":"integer","description":"Report at most this many entries: files, or lines in content mode (default {limit})","minimum":0},"multiline":{"type":"boolean","description":"Let matches span lines; . then also matches a line break"}},"required":["pattern"]}`
	lsSchema   = `{"type":"object","properties":{"path":{"type":"string","description":"Directory to list, absolute or relative to the working directory. Defaults to the working directory."},"ignore":{"type":"array","items":{"type":"string"},"description":"Glob patterns of names or paths to leave out, e.g. dist or **/*.snap"}}}`
)

// cwd is the directory relative paths resolve against: the session's
// working directory, or the process's for calls made outside an agent.
func cwd(call tool.Call) (string, error) {
	if call.Host != nil && call.Host.Cwd() != "" {
		return call.Host.Cwd(), nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("no working directory to resolve paths against: %w", err)
	}
	return dir, nil
}

// resolve makes p absolute against base; empty means base itself.
func resolve(base, p string) string {
	switch {
	case p == "":
		return base
	case filepath.IsAbs(p):
		return filepath.Clean(p)
	default:
		return filepath.Join(base, p)
	}
}

// display renders an absolute path for the model: relative to the working
// directory when inside it (shorter, and what the file tools resolve
// against), absolute otherwise.
func display(base, abs string) string {
	if rel, err := filepath.Rel(base, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel) {
		return filepath.ToSlash(rel)
	}
	return abs
}

// describe fills a description's placeholders: the given pairs, and
// {hidden}, which says whether hidden files are searched.
func describe(text string, opts Options, pairs ...string) string {
	hidden := "Hidden files and directories (names starting with `.`) are included."
	if opts.SkipHidden {
		hidden = "Hidden files and directories (names starting with `.`) are skipped."
	}
	return strings.NewReplacer(append(pairs, "{hidden}", hidden)...).Replace(text)
}

// pronoun is "it" or "them" for n things.
func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
