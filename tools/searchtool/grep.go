package searchtool

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dshq/dsh/search"
	"github.com/dshq/dsh/tool"
)

//go:embed grep.md
var grepDescription string

type grepArgs struct {
	Pattern    string `json:"pattern" jsonschema:"Regular expression (Go RE2 syntax) to search file contents for"`
	Path       string `json:"path,omitempty" jsonschema:"File or directory to search, absolute or relative to the working directory. Defaults to the working directory."`
	Glob       string `json:"glob,omitempty" jsonschema:"Only search files matching this glob, e.g. *.go or *.{ts,tsx} or src/**/*.py; a leading ! excludes instead"`
	OutputMode string `json:"output_mode,omitempty" jsonschema:"files_with_matches (default): paths of matching files; content: matching lines as path:line:text; count: matching lines per file"`
	IgnoreCase bool   `json:"-i,omitempty" jsonschema:"Case-insensitive search"`
	LineNumber *bool  `json:"-n,omitempty" jsonschema:"Show line numbers in content mode (default true)"`
	After      *int   `json:"-A,omitempty" jsonschema:"Lines of context after each match (content mode)"`
	Before     *int   `json:"-B,omitempty" jsonschema:"Lines of context before each match (content mode)"`
	Context    *int   `json:"-C,omitempty" jsonschema:"Lines of context before and after each match (content mode); -A and -B override it"`
	HeadLimit  *int   `json:"head_limit,omitempty" jsonschema:"Report at most this many entries: files, or lines in content mode"`
	Multiline  bool   `json:"multiline,omitempty" jsonschema:"Let matches span lines; . then also matches a line break"`
	// Include is an unadvertised alias of Glob: other harnesses call the
	// parameter "include", and a model that sends it should get a filtered
	// search rather than an unknown key quietly ignored.
	Include string `json:"include,omitempty"`
}

func newGrep(opts Options) tool.Tool {
	limit := opts.GrepLimit
	if limit <= 0 {
		limit = DefaultGrepLimit
	}
	desc := describe(grepDescription, opts, "{limit}", strconv.Itoa(limit),
		"{denied}", deniedNote(opts, "Files that permission rules deny reading are left out: no output mode shows their lines, names or counts."))
	info := tool.Info{
		Name:        GrepName,
		Description: desc,
		Parameters:  json.RawMessage(strings.Replace(grepSchema, "{limit}", strconv.Itoa(limit), 1)),
		Kind:        tool.KindSearch,
		ReadOnly:    true,
		Concurrent:  true,
	}
	run := func(ctx context.Context, call tool.Call, a grepArgs) (tool.Result, error) {
		o, err := a.options(limit, !opts.SkipHidden)
		if err != nil {
			return tool.Result{}, err
		}
		base, err := cwd(call)
		if err != nil {
			return tool.Result{}, fmt.Errorf("grep: %w", err)
		}
		denied := opts.denied(ctx, call)
		o.Withhold = denied
		res, err := opts.engine().Grep(ctx, resolve(base, a.Path), o)
		if err != nil {
			return tool.Result{}, err
		}
		// No word on withheld files to the model: see withhold.go.
		withheld := sieveGrep(res, denied)
		out := tool.TextResult(formatGrep(res, base, a.LineNumber == nil || *a.LineNumber, o.Before+o.After > 0))
		out.Meta = withheldMeta(withheld)
		return out, nil
	}
	return presented{Tool: tool.Func(info, run), present: presentGrep}
}

// options checks the arguments the schema cannot and maps them to the
// engine's options.
func (a grepArgs) options(defaultLimit int, hidden bool) (search.GrepOptions, error) {
	o := search.GrepOptions{
		Pattern:    a.Pattern,
		Mode:       search.OutputMode(a.OutputMode),
		IgnoreCase: a.IgnoreCase,
		Multiline:  a.Multiline,
		Limit:      defaultLimit,
		Hidden:     hidden,
	}
	switch o.Mode {
	case "":
		o.Mode = search.FilesWithMatches
	case search.FilesWithMatches, search.Content, search.Count:
	default:
		return o, fmt.Errorf("grep: output_mode must be files_with_matches, content or count, not %q", a.OutputMode)
	}
	for _, n := range []struct {
		name string
		v    *int
	}{{"-A", a.After}, {"-B", a.Before}, {"-C", a.Context}, {"head_limit", a.HeadLimit}} {
		if n.v != nil && *n.v < 0 {
			return o, fmt.Errorf("grep: %s must not be negative", n.name)
		}
	}
	if a.Context != nil {
		o.Before, o.After = *a.Context, *a.Context
	}
	if a.Before != nil {
		o.Before = *a.Before
	}
	if a.After != nil {
		o.After = *a.After
	}
	if o.Mode != search.Content {
		o.Before, o.After = 0, 0
	}
	if a.HeadLimit != nil && *a.HeadLimit > 0 {
		o.Limit = *a.HeadLimit
	}
	for _, g := range []string{a.Glob, a.Include} {
		if g = strings.TrimSpace(g); g != "" {
			o.Include = append(o.Include, g)
		}
	}
	return o, nil
}

// formatGrep renders a result the way grep and rg print it, paths relative
// to the working directory.
func formatGrep(res *search.GrepResult, base string, lineNumbers, context bool) string {
	if len(res.Files) == 0 {
		return "No matches found"
	}
	pathOf := func(f search.FileMatches) string {
		return display(base, filepath.Join(res.Dir, filepath.FromSlash(f.Path)))
	}
	var b strings.Builder
	switch res.Mode {
	case search.FilesWithMatches:
		fmt.Fprintf(&b, "Found %s\n", plural(res.TotalFiles, "file", "files"))
		for _, f := range res.Files {
			b.WriteString(pathOf(f))
			b.WriteByte('\n')
		}
	case search.Count:
		for _, f := range res.Files {
			fmt.Fprintf(&b, "%s:%d\n", pathOf(f), f.Count)
		}
		fmt.Fprintf(&b, "Found %s across %s\n", plural(res.TotalLines, "matching line", "matching lines"), plural(res.TotalFiles, "file", "files"))
	case search.Content:
		for i, f := range res.Files {
			p := pathOf(f)
			prev := 0
			for j, l := range f.Lines {
				// "--" separates groups that are not adjacent, as grep -C.
				if context && (j > 0 && l.Number != prev+1 || j == 0 && i > 0) {
					b.WriteString("--\n")
				}
				prev = l.Number
				sep := ":"
				if l.Context {
					sep = "-"
				}
				b.WriteString(p)
				b.WriteString(sep)
				if lineNumbers {
					b.WriteString(strconv.Itoa(l.Number))
					b.WriteString(sep)
				}
				b.WriteString(l.Text)
				b.WriteByte('\n')
			}
		}
	}
	if res.Truncated {
		unit := "files"
		if res.Mode == search.Content {
			unit = "lines"
		}
		fmt.Fprintf(&b, "(Showing the first %d of %d %s, in path order. Narrow the pattern, path or glob, or raise head_limit, to see more.)\n",
			shown(res), res.TotalEntries, unit)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func shown(res *search.GrepResult) int {
	if res.Mode != search.Content {
		return len(res.Files)
	}
	n := 0
	for _, f := range res.Files {
		n += len(f.Lines)
	}
	return n
}

func presentGrep(args json.RawMessage) *tool.View {
	var a grepArgs
	if json.Unmarshal(args, &a) != nil || a.Pattern == "" {
		return nil
	}
	v := &tool.View{Title: "grep " + strconv.Quote(a.Pattern), Kind: tool.KindSearch}
	if a.Path != "" {
		v.Title += " in " + a.Path
		v.Locations = []tool.Location{{Path: a.Path}}
	}
	if a.Glob != "" {
		v.Title += " (" + a.Glob + ")"
	}
	return v
}
