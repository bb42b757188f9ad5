package search

import (
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// DefaultGlobLimit is the number of paths Glob reports unless told otherwise.
const DefaultGlobLimit = 100

// GlobOptions configure [Searcher.Glob].
type GlobOptions struct {
	// Limit caps the paths reported; 0 means DefaultGlobLimit, negative
	// means no cap.
	Limit int
	// Hidden includes files and directories whose names start with ".".
	Hidden bool
	// Withhold, when set, is asked about every matching file before it
	// counts toward Total or the cap, with the file's path made absolute
	// (GlobResult.Dir joined with its Path); a file it reports true for is
	// left out and only counted in GlobResult.Withheld.
	Withhold func(path string) bool
}

// GlobResult lists the files matching a pattern.
type GlobResult struct {
	Dir   string     // the root; paths are relative to it
	Files []GlobFile // newest first (then by path); capped by Limit
	// Total counts every match; Truncated is Total > len(Files).
	Total     int
	Truncated bool
	// Withheld counts the matching files GlobOptions.Withhold kept out;
	// they are not in Total.
	Withheld int
}

// GlobFile is one matching file.
type GlobFile struct {
	Path    string // slash-separated, relative to GlobResult.Dir
	ModTime time.Time
}

// Glob finds the files under root whose root-relative path matches pattern,
// a doublestar pattern: "*" and "?" stay within one path element, "**"
// spans any number of directories, "{a,b}" and "[a-z]" as in the shell.
// "*.go" matches only at the top of root; "**/*.go" at any depth.
//
// Ignore rules and the hidden rule apply as for [Searcher.Grep], except to
// the directories the pattern names literally before its first wildcard:
// "node_modules/react/**/*.js" looks inside node_modules even though
// .gitignore hides it, because the caller asked for it by name. Files are
// regular files and symbolic links to them; directories are not reported.
// The newest files come first, since those are usually the ones that
// matter.
func (s *Searcher) Glob(ctx context.Context, root, pattern string, opts GlobOptions) (*GlobResult, error) {
	for strings.HasPrefix(pattern, "./") {
		pattern = pattern[2:]
	}
	if pattern == "" {
		return nil, errorf("empty glob pattern")
	}
	if !doublestar.ValidatePattern(pattern) {
		return nil, errorf("invalid glob pattern %q", pattern)
	}
	base, rest := doublestar.SplitPattern(pattern)
	if path.IsAbs(pattern) || base == ".." || strings.HasPrefix(base, "../") || strings.Contains(base, "/../") {
		return nil, errorf("glob pattern %q must stay inside the search directory; pass the directory as the path instead", pattern)
	}
	canon, info, err := resolveRoot(root)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, errorf("%s is not a directory", root)
	}
	dir, _ := filepath.Abs(root)
	if opts.Limit == 0 {
		opts.Limit = DefaultGlobLimit
	}
	res := &GlobResult{Dir: dir, Files: []GlobFile{}}

	prefix := "" // base as a root-relative prefix
	start := canon
	if base != "." {
		prefix = base + "/"
		start, err = filepath.EvalSymlinks(filepath.Join(canon, filepath.FromSlash(base)))
		if err != nil {
			return res, nil // the literal directory does not exist: no match
		}
		if fi, err := os.Stat(start); err != nil || !fi.IsDir() {
			return res, nil
		}
	}
	comps := strings.Split(rest, "/")
	prune := !strings.ContainsAny(rest, "{\\")
	enter := func(c child) bool { return !prune || couldContain(comps, c.rel) }

	var found []GlobFile
	t := newTree(start, opts.Hidden, nil)
	err = t.walk(ctx, enter, func(c child) bool {
		if !doublestar.MatchUnvalidated(rest, c.rel) {
			return true
		}
		var fi fs.FileInfo
		var err error
		switch {
		case c.typ.IsRegular():
			fi, err = os.Lstat(c.abs)
		case c.typ&fs.ModeSymlink != 0:
			fi, err = os.Stat(c.abs)
		default:
			return true
		}
		if err != nil || !fi.Mode().IsRegular() {
			return true
		}
		p := prefix + c.rel
		if opts.Withhold != nil && opts.Withhold(filepath.Join(dir, filepath.FromSlash(p))) {
			res.Withheld++
			return true
		}
		found = append(found, GlobFile{Path: p, ModTime: fi.ModTime()})
		return true
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(found, func(a, b GlobFile) int {
		if c := b.ModTime.Compare(a.ModTime); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	res.Total = len(found)
	if opts.Limit > 0 && len(found) > opts.Limit {
		found = found[:opts.Limit]
		res.Truncated = true
	}
	res.Files = append(res.Files, found...)
	return res, nil
}

// couldContain reports whether a file below directory rel (relative to the
// walk's start) could match the pattern elements comps, so a walk can skip
// subtrees the pattern cannot reach. Patterns with braces are not split
// (an alternative may contain "/"), so callers do not prune those.
func couldContain(comps []string, rel string) bool {
	for i, part := range strings.Split(rel, "/") {
		if i < len(comps) && comps[i] == "**" {
			return true
		}
		if i >= len(comps)-1 {
			return false // deeper than any directory the pattern names
		}
		if !doublestar.MatchUnvalidated(comps[i], part) {
			return false
		}
	}
	return true
}
