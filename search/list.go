package search

import (
	"context"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Defaults for [ListOptions].
const (
	DefaultListDepth   = 3
	DefaultListEntries = 500
)

// ListOptions configure [Searcher.List].
type ListOptions struct {
	// MaxDepth is how many levels below the root are listed; 0 means
	// DefaultListDepth, negative means no limit.
	MaxDepth int
	// MaxEntries caps the entries listed; 0 means DefaultListEntries,
	// negative means no cap. Shallower entries are kept first, so a capped
	// listing still shows the top of the tree.
	MaxEntries int
	// Hidden includes entries whose names start with ".".
	Hidden bool
	// Ignore skips entries (and directories' contents) whose name or
	// root-relative path matches one of these doublestar patterns.
	Ignore []string
	// Withhold, when set, is asked about every entry (files and
	// directories) before it counts toward MaxEntries, with the entry's
	// path made absolute (ListResult.Dir joined with its Path). An entry
	// it reports true for is left out, a directory with its contents,
	// which are not read; each is counted once in ListResult.Withheld.
	Withhold func(path string) bool
}

// ListResult is a directory tree.
type ListResult struct {
	Dir string // the root; paths are relative to it
	// Entries are in tree order: depth-first, siblings sorted by name, a
	// directory's contents right after it.
	Entries []ListEntry
	// Truncated reports entries left out because of MaxEntries.
	Truncated bool
	// DepthLimited reports directories at MaxDepth whose contents were not
	// listed.
	DepthLimited bool
	// Withheld counts the entries ListOptions.Withhold kept out (a
	// directory counts once, whatever it holds).
	Withheld int
}

// ListEntry is one file or directory.
type ListEntry struct {
	Path    string // slash-separated, relative to ListResult.Dir
	Name    string
	Depth   int // 1 for the root's children
	Dir     bool
	Symlink bool
}

// List returns a bounded tree of the directory root, with the same ignore
// and hidden rules as [Searcher.Grep]. The tree is read breadth-first, so
// when the entry cap cuts it short the upper levels are complete.
func (s *Searcher) List(ctx context.Context, root string, opts ListOptions) (*ListResult, error) {
	for _, p := range opts.Ignore {
		if !doublestar.ValidatePattern(p) {
			return nil, errorf("invalid ignore pattern %q", p)
		}
	}
	canon, info, err := resolveRoot(root)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, errorf("%s is not a directory", root)
	}
	if opts.MaxDepth == 0 {
		opts.MaxDepth = DefaultListDepth
	}
	if opts.MaxEntries == 0 {
		opts.MaxEntries = DefaultListEntries
	}
	dir, _ := filepath.Abs(root)
	res := &ListResult{Dir: dir}
	skip := func(c child) bool {
		for _, p := range opts.Ignore {
			if doublestar.MatchUnvalidated(p, c.name) || doublestar.MatchUnvalidated(p, c.rel) {
				return true
			}
		}
		return false
	}

	type pending struct {
		node     *dirNode
		abs, rel string
	}
	t := newTree(canon, opts.Hidden, nil)
	children := map[string][]ListEntry{} // by parent path ("" for the root)
	level := []pending{{node: t.top, abs: canon, rel: ""}}
	count := 0
	for depth := 1; len(level) > 0; depth++ {
		var next []pending
		for _, d := range level {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			node, kids := t.readDir(d.node, d.abs, d.rel)
			slices.SortFunc(kids, func(a, b child) int { return strings.Compare(a.name, b.name) })
			for _, c := range kids {
				if skip(c) {
					continue
				}
				if opts.Withhold != nil && opts.Withhold(filepath.Join(dir, filepath.FromSlash(c.rel))) {
					// Before the cap, so that a withheld entry neither
					// takes a place nor marks the listing as cut.
					res.Withheld++
					continue
				}
				if opts.MaxEntries > 0 && count == opts.MaxEntries {
					res.Truncated = true
					break
				}
				count++
				e := ListEntry{Path: c.rel, Name: c.name, Depth: depth, Dir: c.typ.IsDir(), Symlink: c.typ&fs.ModeSymlink != 0}
				children[d.rel] = append(children[d.rel], e)
				if e.Dir {
					if opts.MaxDepth < 0 || depth < opts.MaxDepth {
						next = append(next, pending{node: node, abs: c.abs, rel: c.rel})
					} else {
						res.DepthLimited = true
					}
				}
			}
			if res.Truncated {
				break
			}
		}
		if res.Truncated {
			break
		}
		level = next
	}

	var emit func(parent string)
	emit = func(parent string) {
		for _, e := range children[parent] {
			res.Entries = append(res.Entries, e)
			if e.Dir {
				emit(e.Path)
			}
		}
	}
	emit("")
	if res.Entries == nil {
		res.Entries = []ListEntry{}
	}
	return res, nil
}
