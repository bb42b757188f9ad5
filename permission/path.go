package permission

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	dshfs "github.com/dshq/dsh/fs"
)

// pathPattern is a compiled path specifier. Relative patterns are kept
// relative and matched against a path made relative to the project root at
// decision time, so one checker serves sessions in different directories.
type pathPattern struct {
	rel bool
	pat string // cleaned, forward slashes; relative or absolute
	// real is the absolute pattern with its literal prefix resolved through
	// symlinks ("" when the same), so a deny on ~/.ssh/** also holds when
	// the model names the file through the resolved home directory.
	real string
	// base is the literal (meta-free) directory prefix of an absolute
	// pattern, used to see whether a directory search could reach it.
	base string
	// patAll and realAll are pat and real with "/**" appended: what is
	// inside a path the pattern names (built once, not per match).
	patAll, realAll string
}

// compilePathPattern turns a rule's path specifier into a pattern:
// "//abs" (Claude's absolute form) and "/abs" are absolute, "~/x" is under
// home, "./x" and "x" are relative to the project root (the session cwd).
func compilePathPattern(spec, home string) (pathPattern, error) {
	s := strings.TrimSpace(spec)
	var p pathPattern
	switch {
	case s == "~" || strings.HasPrefix(s, "~/"):
		if home == "" {
			return p, errors.New("~ needs a home directory, and none is known")
		}
		s = escapeGlob(filepath.ToSlash(home)) + s[1:]
	case strings.HasPrefix(s, "~"):
		return p, errors.New("~user paths are not supported; write the absolute path")
	case strings.HasPrefix(s, "//"):
		s = s[1:]
	case strings.HasPrefix(s, "/"):
	default:
		p.rel = true
	}
	trailing := strings.HasSuffix(s, "/") && len(s) > 1
	s = path.Clean(s)
	if trailing {
		// "docs/" means the directory and everything in it, like "docs".
		s = strings.TrimSuffix(s, "/")
	}
	if !doublestar.ValidatePattern(s) {
		return p, fmt.Errorf("%q is not a valid glob pattern", spec)
	}
	p.pat = s
	if !p.rel {
		base, _ := doublestar.SplitPattern(s)
		p.base = base
		if real, err := realpath(base); err == nil && real != base {
			rest := strings.TrimPrefix(s, escapeGlob(base))
			p.real = escapeGlob(real) + rest
			p.realAll = p.real + "/**"
		}
	}
	p.patAll = p.pat + "/**"
	return p, nil
}

// matches reports whether the pattern covers p (absolute, cleaned) when the
// project root is root. A pattern naming a directory covers what is inside
// it: Read(~/.ssh) denies ~/.ssh/id_rsa.
func (pp *pathPattern) matches(p, root string) bool {
	if pp.rel {
		if root == "" {
			return false
		}
		r, err := filepath.Rel(root, p)
		if err != nil {
			return false
		}
		return globMatch(pp.pat, pp.patAll, filepath.ToSlash(r))
	}
	if globMatch(pp.pat, pp.patAll, p) {
		return true
	}
	return pp.real != "" && globMatch(pp.real, pp.realAll, p)
}

// under reports whether a search rooted at dir (absolute, cleaned) can reach
// paths the pattern covers: the pattern's literal base lies inside dir.
func (pp *pathPattern) under(dir, root string) bool {
	base := pp.base
	if pp.rel {
		if root == "" {
			return false
		}
		b, _ := doublestar.SplitPattern(pp.pat)
		base = filepath.Join(root, b)
	}
	return base != "" && within(base, dir)
}

func globMatch(pat, patAll, name string) bool {
	return doublestar.MatchUnvalidated(pat, name) || doublestar.MatchUnvalidated(patAll, name)
}

// escapeGlob escapes the glob metacharacters of a literal path.
func escapeGlob(s string) string {
	if !strings.ContainsAny(s, `*?[]{}\`) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// within reports whether p is dir or inside it (both absolute and clean).
func within(p, dir string) bool {
	if p == dir || dir == "/" {
		return true
	}
	return strings.HasPrefix(p, dir) && p[len(dir)] == filepath.Separator
}

// absPath makes raw absolute against base and cleans it. Tilde is not
// expanded: the file tools do not expand it either, and the check must be
// about the file the tool will touch.
func absPath(raw, base string) string {
	if !filepath.IsAbs(raw) {
		return filepath.Join(base, raw) // cleaned
	}
	return filepath.Clean(raw)
}

// realpath is fs.RealPath: the provider and the permission layer must
// resolve paths identically.
func realpath(p string) (string, error) { return dshfs.RealPath(p) }

// resolve returns realpath(p), or p itself when it cannot be resolved (a
// symlink loop, a permission error): the caller still checks the lexical
// path, and an unresolvable path is never inside the workspace by accident
// because the workspace roots are resolved the same way.
func resolve(p string) string {
	if r, err := realpath(p); err == nil {
		return r
	}
	return p
}
