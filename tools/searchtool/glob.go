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
	info := tool.Info{
		Name:        GlobName,
		Description: describe(globDescription, opts, "{limit}", strconv.Itoa(cmp.Or(opts.GlobLimit, search.DefaultGlobLimit))),
		Parameters:  schemaFor[globArgs](nil),
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
		res, err := opts.engine().Glob(ctx, root, pattern, search.GlobOptions{Limit: opts.GlobLimit, Hidden: !opts.SkipHidden})
		if err != nil {
			return tool.Result{}, err
		}
		if len(res.Files) == 0 {
			return tool.TextResult(fmt.Sprintf("No files found matching %s in %s", a.Pattern, display(base, res.Dir))), nil
		}
		var b strings.Builder
		for _, f := range res.Files {
			b.WriteString(display(base, filepath.Join(res.Dir, filepath.FromSlash(f.Path))))
			b.WriteByte('\n')
		}
		if res.Truncated {
			fmt.Fprintf(&b, "(Showing the %d most recently modified of %d matching files. Use a more specific pattern or path to see others.)\n",
				len(res.Files), res.Total)
		}
		return tool.TextResult(strings.TrimSuffix(b.String(), "\n")), nil
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
