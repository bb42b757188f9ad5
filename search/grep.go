package search

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// OutputMode selects what Grep reports.
type OutputMode string

const (
	// FilesWithMatches reports the paths of files with at least one match.
	FilesWithMatches OutputMode = "files_with_matches"
	// Content reports matching lines (and context lines), path:line:text.
	Content OutputMode = "content"
	// Count reports the number of matching lines per file.
	Count OutputMode = "count"
)

// Defaults for [GrepOptions].
const (
	DefaultGrepLimit     = 1000
	DefaultMaxLineLength = 500
)

// GrepOptions configure a search.
type GrepOptions struct {
	// Pattern is a Go (RE2) regular expression; see the package
	// documentation for how it is read.
	Pattern string
	// Mode defaults to FilesWithMatches.
	Mode OutputMode
	// IgnoreCase folds case (Unicode simple folding).
	IgnoreCase bool
	// Multiline lets matches span lines, and "." match a line break.
	Multiline bool
	// Include and Exclude are gitignore-style globs relative to the root, as
	// with rg -g: a glob without "/" matches a name at any depth ("*.go"),
	// one with "/" matches from the root ("cmd/**/*.go"). An include glob
	// may start with "!" to exclude. Once there is an include, files no
	// include matches are skipped. Globs outrank .gitignore and the hidden
	// rule (rg's precedence): "*.go" also finds a hidden or ignored Go
	// file, though not inside a hidden or ignored directory, which is never
	// entered; add "!.*" to keep hidden files out.
	Include []string
	Exclude []string
	// Before and After are context lines around each match (Content mode).
	Before, After int
	// Limit caps the entries reported: files (FilesWithMatches, Count) or
	// lines including context lines (Content). The entries kept are the
	// first in path order, so the cap is deterministic. 0 means
	// DefaultGrepLimit; negative means no cap.
	Limit int
	// Hidden includes files and directories whose names start with ".".
	Hidden bool
	// MaxLineLength truncates reported lines (bytes, at a character
	// boundary). 0 means DefaultMaxLineLength; negative means no limit.
	MaxLineLength int
	// MaxFileSize skips files larger than this many bytes; 0 means no
	// limit. (Not a memory guard: large files are memory-mapped, not read
	// into the heap. It costs rg a stat per file, so it is off by default.)
	MaxFileSize int64
	// Withhold, when set, is asked about every file with a match before
	// the file counts toward any total or the cap: a file it reports true
	// for is left out of the result entirely (paths, lines, counts) and
	// only counted in GrepResult.Withheld. It gets the file's path as the
	// result would show it, made absolute: GrepResult.Dir joined with the
	// file's Path. It may be called from several goroutines at once. The
	// permission layer uses it to keep files a deny rule covers out of a
	// search of a directory the search was allowed in.
	Withhold func(path string) bool
}

// GrepResult is a search's outcome.
type GrepResult struct {
	// Dir is the directory paths are relative to: the root, or the file's
	// directory when the root is a file.
	Dir   string
	Mode  OutputMode
	Files []FileMatches // sorted by path; capped by Limit
	// TotalFiles and TotalLines count every file with a match and every
	// matching line, before the cap.
	TotalFiles, TotalLines int
	// TotalEntries is the number of entries before the cap; Truncated is
	// TotalEntries > Limit.
	TotalEntries int
	Truncated    bool
	// Withheld counts the files with a match that GrepOptions.Withhold
	// kept out; they are in no other count.
	Withheld int
	// Backend is the implementation that produced the result.
	Backend Backend
}

// FileMatches is one file's matches.
type FileMatches struct {
	Path  string // slash-separated, relative to GrepResult.Dir
	Count int    // matching lines
	Lines []Line // Content mode: matching and context lines, ascending
}

// Line is a line of a file.
type Line struct {
	Number int // 1-based
	Text   string
	// Context marks a context line (not itself a match).
	Context bool
}

func (o *GrepOptions) normalize() error {
	switch o.Mode {
	case "":
		o.Mode = FilesWithMatches
	case FilesWithMatches, Content, Count:
	default:
		return errorf("unknown output mode %q (want %s, %s or %s)", o.Mode, FilesWithMatches, Content, Count)
	}
	if o.Before < 0 || o.After < 0 {
		return errorf("context line counts must not be negative")
	}
	if o.Mode != Content {
		o.Before, o.After = 0, 0
	}
	if o.Limit == 0 {
		o.Limit = DefaultGrepLimit
	}
	if o.MaxLineLength == 0 {
		o.MaxLineLength = DefaultMaxLineLength
	}
	if o.MaxFileSize < 0 {
		return errorf("MaxFileSize must not be negative")
	}
	return nil
}

// Grep searches the files under root (a directory, or a single file) for
// lines matching opts.Pattern.
func (s *Searcher) Grep(ctx context.Context, root string, opts GrepOptions) (*GrepResult, error) {
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	pat, err := compilePattern(opts.Pattern, opts.IgnoreCase, opts.Multiline)
	if err != nil {
		return nil, err
	}
	ov, err := compileOverrides(opts.Include, opts.Exclude)
	if err != nil {
		return nil, err
	}
	canon, info, err := resolveRoot(root)
	if err != nil {
		return nil, err
	}
	dir, _ := filepath.Abs(root)
	if !info.IsDir() {
		// One named file: no walk, and neither ignore rules nor globs
		// apply. The Go path is as fast as spawning rg, and rg treats
		// files it is given by name differently (it searches binary
		// files, with NULs replaced).
		col := newCollector(&opts, filepath.Dir(dir))
		if fm, ok := searchFile(canon, filepath.Base(dir), pat, &opts, nil); ok {
			col.add(fm)
		}
		res := col.result()
		res.Backend = Native
		return res, nil
	}
	backend := s.Backend
	if backend == Auto || backend == Ripgrep {
		rg := s.ripgrep()
		switch {
		case rg != "":
			col := newCollector(&opts, dir)
			err := runRipgrep(ctx, rg, canon, pat, &opts, col)
			if err == nil {
				res := col.result()
				res.Backend = Ripgrep
				return res, nil
			}
			if backend == Ripgrep || ctx.Err() != nil {
				return nil, err
			}
			// Auto: rg failed on its own (crashed, or refused a pattern
			// Go accepts); the Go walker gives the same answer.
		case backend == Ripgrep:
			return nil, ErrNoRipgrep
		}
	}
	col := newCollector(&opts, dir)
	t := newTree(canon, opts.Hidden, ov)
	if err := s.grepNative(ctx, t, pat, &opts, col); err != nil {
		return nil, err
	}
	res := col.result()
	res.Backend = Native
	return res, nil
}

// collector gathers per-file results from concurrent searchers and keeps
// the first Limit entries in path order. It holds the retained files in a
// max-heap by path: whenever the files after the greatest one already cover
// the limit, the greatest can never be reported and is dropped. So memory
// stays bounded by the limit, and the outcome does not depend on the order
// files arrive in. Files GrepOptions.Withhold refuses are dropped before
// any of that, so they take no place under the limit.
type collector struct {
	mu       sync.Mutex
	opts     *GrepOptions
	dir      string // the result's Dir
	kept     fileHeap
	retained int // entries in kept
	files    int
	lines    int
	entries  int
	withheld int
}

func newCollector(opts *GrepOptions, dir string) *collector {
	return &collector{opts: opts, dir: dir}
}

func (c *collector) entriesOf(fm *FileMatches) int {
	if c.opts.Mode == Content {
		return len(fm.Lines)
	}
	return 1
}

// add records one file's matches. fm.Count must be positive. Line texts
// are normalized here, once for both backends: a trailing "\r" is dropped,
// invalid UTF-8 is replaced, and long lines are cut.
func (c *collector) add(fm FileMatches) {
	if c.opts.Withhold != nil && c.opts.Withhold(filepath.Join(c.dir, filepath.FromSlash(fm.Path))) {
		c.mu.Lock()
		c.withheld++
		c.mu.Unlock()
		return
	}
	for i := range fm.Lines {
		fm.Lines[i].Text = cleanLine(fm.Lines[i].Text, c.opts.MaxLineLength)
	}
	n := c.entriesOf(&fm)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files++
	c.lines += fm.Count
	c.entries += n
	if c.opts.Limit < 0 {
		c.kept = append(c.kept, fm)
		return
	}
	heap.Push(&c.kept, fm)
	c.retained += n
	for len(c.kept) > 0 && c.retained-c.entriesOf(&c.kept[0]) >= c.opts.Limit {
		c.retained -= c.entriesOf(&c.kept[0])
		heap.Pop(&c.kept)
	}
}

func (c *collector) result() *GrepResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	files := []FileMatches(c.kept)
	slices.SortFunc(files, func(a, b FileMatches) int { return strings.Compare(a.Path, b.Path) })
	res := &GrepResult{
		Dir: c.dir, Mode: c.opts.Mode, Files: files,
		TotalFiles: c.files, TotalLines: c.lines, TotalEntries: c.entries, Withheld: c.withheld,
	}
	if c.opts.Limit >= 0 && c.entries > c.opts.Limit {
		res.Truncated = true
		// Content mode: the last file may carry lines past the limit.
		left := c.opts.Limit
		for i := range files {
			n := c.entriesOf(&files[i])
			if n > left {
				files[i].Lines = files[i].Lines[:left]
				files = files[:i+1]
				break
			}
			left -= n
		}
		res.Files = files
	}
	if res.Files == nil {
		res.Files = []FileMatches{}
	}
	return res
}

// fileHeap is a max-heap of files by path.
type fileHeap []FileMatches

func (h fileHeap) Len() int           { return len(h) }
func (h fileHeap) Less(i, j int) bool { return h[i].Path > h[j].Path }
func (h fileHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *fileHeap) Push(x any)        { *h = append(*h, x.(FileMatches)) }
func (h *fileHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = FileMatches{}
	*h = old[:len(old)-1]
	return x
}

func cleanLine(s string, max int) string {
	s = strings.TrimSuffix(s, "\r")
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if max > 0 && len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// errBinary marks a file the Go walker skips because it contains a NUL.
var errBinary = errors.New("binary")

// decodeText applies rg's default encoding handling: a UTF-8 byte-order
// mark is dropped, UTF-16 text with a byte-order mark is transcoded to
// UTF-8, anything else is searched as is. A NUL byte in the (decoded) text
// makes the file binary.
func decodeText(data []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		data = data[3:]
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}):
		data = utf16ToUTF8(data[2:], false)
	case bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		data = utf16ToUTF8(data[2:], true)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, errBinary
	}
	return data, nil
}

func utf16ToUTF8(b []byte, bigEndian bool) []byte {
	out := make([]byte, 0, len(b)+len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		u := rune(b[i]) | rune(b[i+1])<<8
		if bigEndian {
			u = rune(b[i])<<8 | rune(b[i+1])
		}
		if u >= 0xD800 && u < 0xDC00 && i+3 < len(b) {
			v := rune(b[i+2]) | rune(b[i+3])<<8
			if bigEndian {
				v = rune(b[i+2])<<8 | rune(b[i+3])
			}
			if v >= 0xDC00 && v < 0xE000 {
				out = utf8.AppendRune(out, 0x10000+(u-0xD800)<<10+(v-0xDC00))
				i += 2
				continue
			}
		}
		if u >= 0xD800 && u < 0xE000 {
			u = utf8.RuneError
		}
		out = utf8.AppendRune(out, u)
	}
	if len(b)%2 == 1 {
		out = utf8.AppendRune(out, utf8.RuneError)
	}
	return out
}
