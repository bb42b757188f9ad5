package search

// IgnoreRules is the compiled text of one .gitignore-format file, read
// exactly as the search tools read it (see [parseRule]). Other capabilities
// that must agree with the search tools on what a .gitignore line means
// (checkpoints leave ignored files out) match with it rather than keeping a
// second parser.
type IgnoreRules struct{ set *ruleSet }

// ParseIgnore compiles the text of a .gitignore-format file; lines that are
// not valid patterns are dropped, as git does. It returns nil when the text
// holds no rule.
func ParseIgnore(data []byte) *IgnoreRules {
	s := parseIgnore(data)
	if len(s.rules) == 0 {
		return nil
	}
	return &IgnoreRules{set: s}
}

// Match gives the verdict of the last rule matching rel, a slash-separated
// path relative to the directory of the file the rules came from: ignored
// (excluded: the rule excludes it) and decided (some rule matched; a negation
// re-includes). A nil set decides nothing.
func (r *IgnoreRules) Match(rel string, isDir bool) (excluded, decided bool) {
	if r == nil {
		return false, false
	}
	switch r.set.match(rel, isDir) {
	case ignored:
		return true, true
	case allowed:
		return false, true
	}
	return false, false
}
