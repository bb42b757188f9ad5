package search

import (
	"bytes"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// verdict is what one set of rules says about a path.
type verdict uint8

const (
	noVerdict verdict = iota // no rule matched
	ignored                  // the last matching rule excludes the path
	allowed                  // the last matching rule is a negation ("!x")
)

// matchKind selects a rule's matcher. Most ignore lines are a bare name
// ("node_modules") or an extension ("*.log"); checking those with string
// comparisons instead of a glob engine keeps a walk of a large tree cheap.
type matchKind uint8

const (
	matchGlob     matchKind = iota // doublestar match on the whole relative path
	matchBaseGlob                  // doublestar match on the last element
	matchBase                      // last element equals lit
	matchSuffix                    // last element ends with lit ("*.log")
	matchPrefix                    // last element starts with lit ("build*")
	matchPath                      // whole relative path equals lit
	matchUnder                     // path is strictly inside directory lit ("dir/**")
)

// rule is one compiled gitignore line.
type rule struct {
	glob    string // doublestar pattern relative to the ignore file's directory
	lit     string
	kind    matchKind
	negate  bool // "!pattern": re-includes what earlier lines excluded
	dirOnly bool // "pattern/": applies to directories only
}

func (r *rule) match(rel, base string) bool {
	switch r.kind {
	case matchBase:
		return base == r.lit
	case matchSuffix:
		return strings.HasSuffix(base, r.lit)
	case matchPrefix:
		return strings.HasPrefix(base, r.lit)
	case matchPath:
		return rel == r.lit
	case matchUnder:
		return len(rel) > len(r.lit)+1 && rel[len(r.lit)] == '/' && strings.HasPrefix(rel, r.lit)
	case matchBaseGlob:
		return doublestar.MatchUnvalidated(r.glob, base)
	default:
		return doublestar.MatchUnvalidated(r.glob, rel)
	}
}

// ruleSet is the ordered rules of one ignore file (or of a list of include /
// exclude globs). Later rules override earlier ones, as in git.
type ruleSet struct {
	rules []rule
	// excludes counts non-negated rules; for override globs these are the
	// includes (see overrides.match).
	excludes int
}

// parseIgnore compiles the text of a .gitignore-format file. Lines that are
// not valid patterns are dropped, as git and rg do, rather than failing the
// whole file.
func parseIgnore(data []byte) *ruleSet {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	s := &ruleSet{}
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		if r, ok := parseRule(string(line)); ok {
			s.add(r)
		}
	}
	return s
}

func (s *ruleSet) add(r rule) {
	s.rules = append(s.rules, r)
	if !r.negate {
		s.excludes++
	}
}

// parseRule compiles one gitignore line the way ripgrep's ignore crate does:
//
//   - "#" starts a comment; "\#" and "\!" escape a literal first character;
//   - trailing whitespace is dropped unless escaped ("\ ");
//   - "!" negates; a leading "/" anchors the pattern to the file's directory;
//   - a trailing "/" restricts it to directories;
//   - a pattern with no "/" (after the above) matches at any depth ("**/" is
//     prepended); one with a "/" is relative to the file's directory;
//   - a trailing "/**" matches everything inside, not the directory itself.
func parseRule(line string) (rule, bool) {
	var r rule
	if strings.HasPrefix(line, "#") {
		return r, false
	}
	line = strings.TrimSuffix(line, "\r")
	if !strings.HasSuffix(line, "\\ ") {
		line = strings.TrimRight(line, " \t\r\n\v\f")
	}
	if line == "" {
		return r, false
	}
	anchored := false
	if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
	} else {
		if strings.HasPrefix(line, "!") {
			r.negate = true
			line = line[1:]
		}
		if strings.HasPrefix(line, "/") {
			anchored = true
			line = line[1:]
		}
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimSuffix(line, "/")
		line = strings.TrimSuffix(line, `\`)
	}
	if line == "" {
		return r, false
	}
	glob := line
	if !anchored && !strings.Contains(line, "/") && !strings.HasPrefix(glob, "**/") && glob != "**" {
		glob = "**/" + glob
	}
	if strings.HasSuffix(glob, "/**") {
		glob += "/*"
	}
	if !validGlob(glob) {
		return r, false
	}
	r.glob = glob
	r.kind, r.lit = classify(glob)
	if r.kind == matchBaseGlob {
		r.glob = strings.TrimPrefix(glob, "**/")
	}
	return r, true
}

// validGlob reports whether rg would accept glob: doublestar's own syntax,
// plus globset's rule that "**" must be a whole path element (doublestar
// would quietly read "a**" as "a*"; rg rejects it, and so do we, so the two
// backends skip the same lines).
func validGlob(glob string) bool {
	if !doublestar.ValidatePattern(glob) {
		return false
	}
	for i := 0; i+1 < len(glob); i++ {
		switch glob[i] {
		case '\\':
			i++
		case '*':
			if glob[i+1] != '*' {
				continue
			}
			before := i == 0 || glob[i-1] == '/'
			after := i+2 == len(glob) || glob[i+2] == '/'
			if !before || !after {
				return false
			}
			i++
		}
	}
	return true
}

const globMeta = `*?[{\`

// classify picks the cheapest exact matcher for glob.
func classify(glob string) (matchKind, string) {
	if rest, ok := strings.CutPrefix(glob, "**/"); ok && !strings.Contains(rest, "/") {
		switch {
		case !strings.ContainsAny(rest, globMeta):
			return matchBase, rest
		case rest[0] == '*' && !strings.ContainsAny(rest[1:], globMeta):
			return matchSuffix, rest[1:]
		case rest[len(rest)-1] == '*' && !strings.ContainsAny(rest[:len(rest)-1], globMeta):
			return matchPrefix, rest[:len(rest)-1]
		}
		return matchBaseGlob, ""
	}
	if !strings.ContainsAny(glob, globMeta) {
		return matchPath, glob
	}
	if dir, ok := strings.CutSuffix(glob, "/**/*"); ok && !strings.ContainsAny(dir, globMeta) {
		return matchUnder, dir
	}
	return matchGlob, ""
}

// match returns the verdict of the last rule matching rel (slash-separated,
// relative to the rules' directory).
func (s *ruleSet) match(rel string, isDir bool) verdict {
	if s == nil {
		return noVerdict
	}
	base := rel[strings.LastIndexByte(rel, '/')+1:]
	for i := len(s.rules) - 1; i >= 0; i-- {
		r := &s.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		if r.match(rel, base) {
			if r.negate {
				return allowed
			}
			return ignored
		}
	}
	return noVerdict
}

// overrides are include/exclude globs (rg's -g). They are gitignore lines
// read the other way round: a plain glob includes, "!glob" excludes. They
// rank above every ignore file, and once there is at least one include, a
// file no glob matches is excluded (directories are still entered, so
// "*.go" finds Go files at any depth).
type overrides struct{ set *ruleSet }

// compileOverrides builds the override set from include globs (each may
// start with "!" to exclude, as with rg -g) followed by exclude globs; a
// later glob wins over an earlier one.
func compileOverrides(include, exclude []string) (*overrides, error) {
	if len(include) == 0 && len(exclude) == 0 {
		return nil, nil
	}
	set := &ruleSet{}
	add := func(g string) error {
		r, ok := parseRule(g)
		if !ok {
			return errorf("invalid glob %q", g)
		}
		set.add(r)
		return nil
	}
	for _, g := range include {
		if err := add(g); err != nil {
			return nil, err
		}
	}
	for _, g := range exclude {
		if strings.HasPrefix(g, "!") {
			// "!x" in an exclude list would read as an include; excluding
			// an exclusion is not a thing, so take it literally.
			g = `\` + g
		}
		if err := add("!" + g); err != nil {
			return nil, err
		}
	}
	return &overrides{set: set}, nil
}

// match inverts the rule set's reading: an "ignored" verdict from a plain
// glob means the path is included.
func (o *overrides) match(rel string, isDir bool) verdict {
	if o == nil {
		return noVerdict
	}
	switch o.set.match(rel, isDir) {
	case ignored:
		return allowed
	case allowed:
		return ignored
	}
	if o.set.excludes > 0 && !isDir {
		return ignored
	}
	return noVerdict
}

// rgGlobs returns the globs as rg -g arguments, in the same order.
func rgGlobs(include, exclude []string) []string {
	out := make([]string, 0, len(include)+len(exclude))
	out = append(out, include...)
	for _, g := range exclude {
		if strings.HasPrefix(g, "!") {
			g = `\` + g
		}
		out = append(out, "!"+g)
	}
	return out
}
