package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/dshq/dsh/internal/atref"
	"github.com/dshq/dsh/internal/filestamp"
)

// Loader finds and reads the memory of working directories. Results are
// cached per directory and checked against the files' metadata on every
// call (a handful of stats), so an edited CLAUDE.md is seen at the next
// step without re-reading unchanged files. It is safe for concurrent use.
type Loader struct {
	Locations
	// Trusted reports whether a directory's own files may apply; nil
	// trusts none (only the user's files are read).
	Trusted func(dir string) bool
	// Withheld reports whether a permission deny rule forbids reading a
	// path (nil: none does).
	Withheld func(path string) bool

	mu    sync.Mutex
	cache map[string]*cached
}

type cached struct {
	set     *Set
	trusted bool
	seen    filestamp.Set
}

// Load returns the memory of the working directory cwd (absolute).
func (l *Loader) Load(cwd string) *Set {
	trusted := l.Trusted != nil && l.Trusted(cwd)
	l.mu.Lock()
	c := l.cache[cwd]
	l.mu.Unlock()
	if c != nil && c.trusted == trusted && c.seen.Current() {
		return c.set
	}
	b := l.builder(trusted)
	root := ProjectRoot(cwd)
	b.set.Root = root
	b.root = root
	for _, group := range l.userFiles() {
		b.firstOf(group, ScopeUser)
	}
	for _, dir := range dirsDown(root, cwd) {
		b.directory(dir, ScopeProject)
	}
	c = &cached{set: b.set, trusted: trusted, seen: b.seen}
	l.mu.Lock()
	if l.cache == nil {
		l.cache = map[string]*cached{}
	}
	l.cache[cwd] = c
	l.mu.Unlock()
	return c.set
}

// Nested returns the memory files of the directories from below cwd down
// to dir (dir inside cwd), skipping the directories in done; it is what a
// first touch of a file in dir brings in. Nothing is returned for an
// untrusted project.
func (l *Loader) Nested(cwd, dir string, done func(dir string) bool) *Set {
	b := l.builder(l.Trusted != nil && l.Trusted(cwd))
	b.root = ProjectRoot(cwd)
	b.set.Root = b.root
	dirs := dirsDown(cwd, dir)
	for _, d := range dirs[1:] {
		if done != nil && done(d) {
			continue
		}
		b.directory(d, ScopeNested)
	}
	return b.set
}

func (l *Loader) builder(trusted bool) *builder {
	return &builder{l: l, trusted: trusted, set: &Set{}, taken: map[string]string{}}
}

// builder collects one set.
type builder struct {
	l       *Loader
	trusted bool
	root    string
	set     *Set
	total   int
	taken   map[string]string // real path → path it was taken as
	seen    filestamp.Set
}

func (b *builder) stat(path string) os.FileInfo {
	st := filestamp.Of(path)
	b.seen = append(b.seen, st)
	return st.Info()
}

func (b *builder) skip(path, reason, detail string) {
	b.set.Skipped = append(b.set.Skipped, Skip{Path: path, Reason: reason, Detail: detail})
}

// firstOf takes the first non-empty file of paths (Codex's override, then
// its AGENTS.md); the ones after it are shadowed.
func (b *builder) firstOf(paths []string, scope Scope) {
	for i, p := range paths {
		if b.stat(p) == nil {
			continue
		}
		if b.take(p, scope, "", nil) {
			for _, q := range paths[i+1:] {
				if b.stat(q) != nil {
					b.skip(q, SkipShadowed, p+" is used instead")
				}
			}
			return
		}
	}
}

// directory takes one directory's memory files.
func (b *builder) directory(dir string, scope Scope) {
	if !b.trusted {
		for _, name := range append(slices.Clone(codexNames), projectNames...) {
			if p := filepath.Join(dir, name); b.stat(p) != nil {
				b.skip(p, SkipUntrusted, "")
			}
		}
		return
	}
	var codex []string
	for _, name := range codexNames {
		codex = append(codex, filepath.Join(dir, name))
	}
	b.firstOf(codex, scope)
	for _, name := range projectNames {
		p := filepath.Join(dir, name)
		if b.stat(p) != nil {
			b.take(p, scope, "", nil)
		}
	}
}

// take reads path and what it imports; it reports whether the file was
// taken (an empty file is not). chain is the import chain above it.
func (b *builder) take(path string, scope Scope, importedBy string, chain []string) bool {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			b.skip(path, SkipUnreadable, err.Error())
		}
		return false
	}
	if scope != ScopeUser && importedBy == "" && !b.inProject(real) {
		b.skip(path, SkipNotRegular, "a link to "+real+", outside the project")
		return false
	}
	if first, dup := b.taken[real]; dup {
		if first != path {
			b.skip(path, SkipDuplicate, "the same file as "+first)
		}
		return true
	}
	if b.l.Withheld != nil && b.l.Withheld(real) {
		b.skip(path, SkipDenied, "a permission deny rule forbids reading it")
		return false
	}
	if MaxTotalBytes-b.total < 1<<10 {
		b.skip(path, SkipBudget, fmt.Sprintf("the memory files before it reached %d KiB", MaxTotalBytes>>10))
		return false
	}
	limit := min(MaxFileBytes, MaxTotalBytes-b.total)
	text, size, cut, reason := readText(real, limit)
	if reason != "" {
		b.skip(path, reason, "")
		return false
	}
	if strings.TrimSpace(text) == "" {
		b.skip(path, SkipEmpty, "")
		return false
	}
	b.taken[real] = path
	b.total += len(text)
	f := File{Path: path, Scope: scope, ImportedBy: importedBy, Size: size, Truncated: cut, Text: strings.TrimSpace(text)}
	if cut {
		f.Text += fmt.Sprintf("\n\n[%s is cut here: only its first %d KiB of %d bytes are included]", filepath.Base(path), limit>>10, size)
	}
	idx := len(b.set.Files)
	b.set.Files = append(b.set.Files, f)
	var notes []string
	for _, ref := range atref.Find(text) {
		if note := b.follow(ref.Path, path, real, scope, append(chain, real)); note != "" {
			notes = append(notes, note)
		}
	}
	if len(notes) > 0 {
		b.set.Files[idx].Text += "\n\n" + strings.Join(notes, "\n")
	}
	return true
}

// follow takes one @import of the file at path (resolved: real); it
// returns a note for the importing file's text when the import is refused.
func (b *builder) follow(ref, path, real string, scope Scope, chain []string) string {
	var target, tr string
	for _, r := range atref.Trim(ref) {
		t := b.resolveImport(r, filepath.Dir(path))
		if t == "" {
			continue
		}
		b.stat(t) // a file created later changes the set
		if real, err := filepath.EvalSymlinks(t); err == nil {
			target, tr, ref = t, real, r
			break
		}
	}
	if target == "" {
		return "" // no such file: an @mention, not an import
	}
	refuse := func(reason, detail string) string {
		b.skip(target, reason, "imported by "+path+": "+detail)
		return fmt.Sprintf("[@%s is not imported: %s]", ref, detail)
	}
	switch {
	case !b.inProject(tr) && !inside(b.l.UserHome, tr):
		return refuse(SkipOutside, "it is outside the project and your home directory")
	case scope != ScopeUser && !b.inProject(tr) && !textFile(tr):
		return refuse(SkipOutside, "a project's memory may import only Markdown or text files from outside the project")
	case slices.Contains(chain, tr):
		return refuse(SkipCycle, "it imports itself through this chain ("+cycleText(chain, tr)+")")
	case len(chain) > MaxImportDepth:
		return refuse(SkipDepth, fmt.Sprintf("imports nest at most %d levels deep", MaxImportDepth))
	}
	if fi := b.stat(tr); fi == nil || !fi.Mode().IsRegular() {
		return refuse(SkipNotRegular, "it is not a regular file")
	}
	if _, dup := b.taken[tr]; dup {
		return ""
	}
	before := len(b.set.Skipped)
	if !b.take(target, scope, path, chain) && len(b.set.Skipped) > before {
		last := b.set.Skipped[len(b.set.Skipped)-1]
		if last.Reason == SkipDenied || last.Reason == SkipBudget {
			return fmt.Sprintf("[@%s is not imported: %s]", ref, last.Detail)
		}
	}
	return ""
}

func cycleText(chain []string, again string) string {
	var parts []string
	for _, c := range chain {
		parts = append(parts, filepath.Base(c))
	}
	return strings.Join(append(parts, filepath.Base(again)), " → ")
}

func (b *builder) inProject(real string) bool {
	if b.root == "" {
		return false
	}
	root := b.root
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	return inside(root, real)
}

// resolveImport makes an @reference a path: ~/x under the home directory,
// an absolute path as it is, anything else relative to dir.
func (b *builder) resolveImport(ref, dir string) string {
	switch {
	case ref == "~" || strings.HasPrefix(ref, "~/"):
		if b.l.UserHome == "" {
			return ""
		}
		return filepath.Join(b.l.UserHome, ref[1:])
	case filepath.IsAbs(ref):
		return filepath.Clean(ref)
	}
	return filepath.Join(dir, ref)
}

// textFile reports whether path names a Markdown or text file.
func textFile(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".md", ".markdown", ".mdx", ".txt", ".rst", ".adoc":
		return true
	}
	return false
}
