// Package search finds files and text in a workspace: [Glob] (paths by
// pattern), [Grep] (lines by regular expression) and [List] (a bounded
// directory tree). The model-facing glob, grep and ls tools are thin layers
// over it.
//
// # Seam and implementation in one package
//
// Other capabilities split a seam package from its implementations (fs and
// fs/local). Search does not, on purpose: what callers depend on is not an
// interface shape but a set of semantics — which files are visible (.gitignore
// rules, hidden files, binary files), how patterns read, how results are
// ordered and capped — and those semantics are defined by the one
// implementation here, shared by both grep backends. Splitting them would mean
// exporting the ignore matcher, the result collector and the pattern
// translator just so a sibling package could reuse them. [Engine] is still the
// seam consumers should hold, so a remote or sandboxed engine can stand in.
//
// # Two grep backends, one answer
//
// Grep delegates to ripgrep (rg) when it is on PATH because rg is the fastest
// way to search a large tree, and falls back to a Go walker (a bounded worker
// pool over the files of one directory walk) when it is not. Both backends
// must return identical results for the same inputs, so the package pins the
// semantics that differ between them by default:
//
//   - Patterns are Go RE2 syntax. The pattern is parsed once by Go and
//     re-printed for each engine from the same syntax tree, so both run the
//     same automaton: \d \w \s \b are ASCII (rg's are Unicode by default),
//     case folding is spelled out as explicit character classes, and outside
//     multiline mode no part of the pattern can match a newline (rg's rule; a
//     pattern that must match "\n" is an error there too).
//   - Visibility follows rg's rules, implemented in Go by this package:
//     .gitignore files (nested, negation, directory-only, anchored, "**"),
//     consulted from the search root up to the enclosing repository root;
//     .ignore and .rgignore files, which take precedence over .gitignore; and
//     include/exclude globs (rg -g), which take precedence over both. Hidden
//     entries are skipped unless asked for, and version-control directories
//     (.git, .hg, .svn, .bzr, .jj) always are. Global git excludes and
//     .git/info/exclude are not consulted (rg is told not to), because they
//     depend on the user's environment rather than the tree.
//   - A file containing a NUL byte is binary and skipped whole. (rg quits at
//     the first NUL it sees; the rg backend asks for per-file counts, or drops
//     files rg flagged, so that the answer does not depend on where the NUL
//     is. The read tool's "NUL in the first 8 KiB" rule is about display, not
//     search.) Files with a UTF-8 BOM are searched without it and UTF-16
//     files with a BOM are transcoded, as rg does.
//   - Symbolic links are not followed (a link to a file is not searched),
//     and results are sorted by path (then line) before any cap is
//     applied, so the cap keeps the same entries whatever order the files
//     were searched in. Content lines are normalized once, for both: a
//     trailing "\r" dropped, invalid UTF-8 replaced, long lines cut.
//
// The Go walker reads small files with plain system calls (os.File costs
// several more per file, which shows on 100,000 files), finds candidate
// lines by a literal every match must contain, as rg does, and
// memory-maps large files rather than reading them onto the heap.
//
// Known differences that remain: on bytes that are not valid UTF-8, Go's "."
// and negated classes match a lone byte and rg's do not; on Windows the Go
// walker always runs (the rg output parser assumes "/" separators); a pattern rg's Rust engine
// rejects (for instance over its size limit) makes the automatic backend
// fall back to the Go walker. The agreement test in engines_test.go runs
// both backends over one tree with many patterns and options and requires
// identical results.
package search
