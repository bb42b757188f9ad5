package searchtool

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dshq/dsh/search"
	"github.com/dshq/dsh/tool"
)

//go:embed ls.md
var lsDescription string

type lsArgs struct {
	Path   string   `json:"path,omitempty" jsonschema:"Directory to list, absolute or relative to the working directory. Defaults to the working directory."`
	Ignore []string `json:"ignore,omitempty" jsonschema:"Glob patterns of names or paths to leave out, e.g. dist or **/*.snap"`
}

func newLS(opts Options) tool.Tool {
	info := tool.Info{
		Name: LSName,
		Description: describe(lsDescription, opts,
			"{depth}", strconv.Itoa(cmp.Or(opts.ListDepth, search.DefaultListDepth)),
			"{entries}", strconv.Itoa(cmp.Or(opts.ListEntries, search.DefaultListEntries)),
			"{denied}", deniedNote(opts, "Entries that permission rules deny reading are left out (a directory with its contents); the output says how many.")),
		Parameters: json.RawMessage(lsSchema),
		Kind:       tool.KindRead,
		ReadOnly:   true,
		Concurrent: true,
	}
	run := func(ctx context.Context, call tool.Call, a lsArgs) (tool.Result, error) {
		base, err := cwd(call)
		if err != nil {
			return tool.Result{}, fmt.Errorf("ls: %w", err)
		}
		denied := opts.denied(ctx, call)
		res, err := opts.engine().List(ctx, resolve(base, a.Path), search.ListOptions{
			MaxDepth: opts.ListDepth, MaxEntries: opts.ListEntries, Hidden: !opts.SkipHidden, Ignore: a.Ignore, Withhold: denied,
		})
		if err != nil {
			return tool.Result{}, err
		}
		withheld := sieveList(res, denied)
		out := tool.TextResult(formatTree(res, base))
		out.Meta = withheldMeta(withheld)
		return out, nil
	}
	return presented{Tool: tool.Func(info, run), present: presentLS}
}

// formatTree renders the listing as an indented tree under its root;
// directories end in "/", symbolic links show their target.
func formatTree(res *search.ListResult, base string) string {
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(res.Dir, "/"))
	b.WriteString("/\n")
	if len(res.Entries) == 0 {
		b.WriteString("  (empty)\n")
	}
	for _, e := range res.Entries {
		b.WriteString(strings.Repeat("  ", e.Depth))
		b.WriteString(e.Name)
		switch {
		case e.Symlink:
			if target, err := os.Readlink(filepath.Join(res.Dir, filepath.FromSlash(e.Path))); err == nil {
				b.WriteString(" -> ")
				b.WriteString(target)
			}
		case e.Dir:
			b.WriteByte('/')
		}
		b.WriteByte('\n')
	}
	if res.Truncated {
		fmt.Fprintf(&b, "(Listing cut at %d entries, upper levels first. List a subdirectory, or use glob, to see more.)\n", len(res.Entries))
	} else if res.DepthLimited {
		b.WriteString("(Deeper directories are not expanded. List a subdirectory to see inside.)\n")
	}
	if res.Withheld > 0 {
		fmt.Fprintf(&b, "(%s withheld: permission rules deny reading %s.)\n", plural(res.Withheld, "entry", "entries"), pronoun(res.Withheld))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func presentLS(args json.RawMessage) *tool.View {
	var a lsArgs
	if json.Unmarshal(args, &a) != nil {
		return nil
	}
	p := a.Path
	if p == "" {
		p = "."
	}
	return &tool.View{Title: "ls " + p, Kind: tool.KindRead, Locations: []tool.Location{{Path: p}}}
}
