package searchtool

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/dshq/dsh/search"
	"github.com/dshq/dsh/tool"
)

//go:embed glob.md
var globDescription string

type globArgs struct {
	Pattern string `json:"pattern" jsonschema:"Glob pattern for file paths, e.g. **/*.go or src/**/*.{ts,tsx}"`
	Path    string `json:"path,omitempty" jsonschema:"Directory to search in, absolute or relative to the working directory. Defaults to the working directory."`
}

func newGlob(opts Options) tool.Tool {
	desc := describe(globDescription, opts, "{limit}", strconv.Itoa(cmp.Or(opts.GlobLimit, search.DefaultGlobLimit)),
		"{denied}", deniedNote(opts, "Files that permission rules deny reading are left out; the output says how many."))
	info := tool.Info{
		Name:        GlobName,
		Description: desc,
		Parameters:  json.RawMessage(globSchema),
		Kind:        tool.KindSearch,
		ReadOnly:    true,
		Concurrent:  true,
	}
	run := func(ctx context.Context, call tool.Call, a globArgs) (tool.Result, error) {
		base, err := cwd(call)
		if err != nil {
			return tool.Result{}, fmt.Errorf("glob: %w", err)
		}
		root, pattern := splitGlob(resolve(base, a.Path), a.Pattern)
		denied := opts.denied(ctx, call)
		res, err := opts.engine().Glob(ctx, root, pattern, search.GlobOptions{Limit: opts.GlobLimit, Hidden: !opts.SkipHidden, Withhold: denied})
		if err != nil {
			return tool.Result{}, err
		}
		withheld := sieveGlob(res, denied)
		var b strings.Builder
		if len(res.Files) == 0 {
			fmt.Fprintf(&b, "No files found matching %s in %s\n", a.Pattern, display(base, res.Dir))
		}
		for _, f := range res.Files {
			b.WriteString(display(base, filepath.Join(res.Dir, filepath.FromSlash(f.Path))))
			b.WriteByte('\n')
		}
		if res.Truncated {
			fmt.Fprintf(&b, "(Showing the %d most recently modified of %d matching files. Use a more specific pattern or path to see others.)\n",
				len(res.Files), res.Total)
		}
		if withheld > 0 {
			fmt.Fprintf(&b, "(%s withheld: permission rules deny reading %s.)\n", plural(withheld, "matching file", "matching files"), pronoun(withheld))
		}
		out := tool.TextResult(strings.TrimSuffix(b.String(), "\n"))
		out.Meta = withheldMeta(withheld)
		return out, nil
	}
	return presented{Tool: tool.Func(info, run), present: presentGlob}
}

// splitGlob moves the pattern's literal leading directories into the root,
// so "/abs/dir/**/*.go" and "../other/*.md" work as the model means them.
func splitGlob(root, pattern string) (string, string) {
	if strings.HasPrefix(pattern, "~") || pattern == "" {
		return root, pattern
	}
	base, rest := doublestar.SplitPattern(pattern)
	if base == "." || base == "" {
		return root, pattern
	}
	if path.IsAbs(base) {
		return filepath.FromSlash(base), rest
	}
	return filepath.Join(root, filepath.FromSlash(base)), rest
}

func presentGlob(args json.RawMessage) *tool.View {
	var a globArgs
	if json.Unmarshal(args, &a) != nil || a.Pattern == "" {
		return nil
	}
	v := &tool.View{Title: "glob " + a.Pattern, Kind: tool.KindSearch}
	if a.Path != "" {
		v.Title += " in " + a.Path
		v.Locations = []tool.Location{{Path: a.Path}}
	}
	return v
}
