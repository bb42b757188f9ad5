package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dshq/dsh/search"
)

// DefaultMaxFileBytes is the size cap of [Options.MaxFileBytes].
const DefaultMaxFileBytes = 4 << 20

// DefaultMaxFiles is the file limit of [Options.MaxFiles].
const DefaultMaxFiles = 100_000

// DefaultIgnores are left out of every checkpoint (below a project's own
// .gitignore, which can take one back with "!name"): dependency trees and
// build outputs, which a package manager or a build recreates and which
// would make every checkpoint of a large project slow.
var DefaultIgnores = []string{
	"node_modules/", "bower_components/", ".venv/", "venv/", "__pycache__/", "*.pyc", ".tox/", ".mypy_cache/",
	".pytest_cache/", ".ruff_cache/", ".gradle/", ".next/", ".nuxt/", ".turbo/", ".parcel-cache/", ".cache/",
	"target/", "dist/", "build/", "out/", "coverage/", ".terraform/", "zig-cache/", ".zig-cache/", "_build/",
	".build/", ".dart_tool/",
}

// vcsDirs are never recorded: a rewind restores the working tree, not the
// repository.
var vcsDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".bzr": true, ".jj": true}

// TempPrefix starts the names of the temporary files a restore writes; the
// scanner never records them.
const TempPrefix = ".dsh-rw-"

// racyWindow: a file modified this close to the moment it was read may
// change again without its modification time moving (the timestamp's
// granularity), so its cached hash is not trusted by the next scan.
const racyWindow = 2 * time.Second

// Options configure a [Scanner].
type Options struct {
	// MaxFileBytes is the size cap: larger files are recorded by size and
	// time only (Oversize). Zero means DefaultMaxFileBytes.
	MaxFileBytes int64
	// MaxFiles bounds the files one scan records; directories entered
	// after it is reached are Unscanned. Zero means DefaultMaxFiles.
	MaxFiles int
	// Ignore are more .gitignore-format lines, read after DefaultIgnores
	// (relative to each root).
	Ignore []string
	// NoDefaultIgnores drops DefaultIgnores.
	NoDefaultIgnores bool
	// Exclude are absolute paths never entered or recorded (dsh's home,
	// the store itself).
	Exclude []string
	// Clock is the scanner's clock (nil: time.Now).
	Clock func() time.Time
}

// Scanner records the state of directory trees into a [Store]. It keeps
// what the previous scan of each root saw (a stat cache, as git's index
// does), so a scan reads and hashes only files whose size, times, inode or
// mode changed; everything else costs one stat. It is safe for concurrent
// use, and scans run at once: the sessions of one workspace share its
// scanner, and under one lock held for a whole walk each session's
// checkpoint queued behind every other's.
//
// A walk only reads the previous state it starts from (a dirState is never
// changed once kept) and builds a new one, so concurrent walks of one root
// each see the tree as it is; the state kept for the next scan is that of
// the scan that started last, whose racy marks are relative to its own
// start like any other's.
type Scanner struct {
	store *Store
	opts  Options
	base  *search.IgnoreRules
	skip  map[string]bool

	// mu guards the maps below; it is held only to read or replace an
	// entry, never across a walk.
	mu     sync.Mutex
	roots  map[string]*dirState
	at     map[string]int64 // the start (UnixNano) of the scan roots[root] is from
	extras map[string]*ientry
	loaded map[string]bool
}

// dirState is what the last scan saw of one directory.
type dirState struct {
	tree Hash
	ents []ientry
}

// ientry is an entry with the stat fields that tell whether it changed.
type ientry struct {
	Entry
	ctime, mtime int64
	ino, dev     uint64
	racy         bool
	sub          *dirState
}

// NewScanner returns a scanner writing into store.
func NewScanner(store *Store, opts Options) *Scanner {
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	var lines []string
	if !opts.NoDefaultIgnores {
		lines = append(lines, DefaultIgnores...)
	}
	lines = append(lines, opts.Ignore...)
	skip := map[string]bool{store.Dir(): true}
	for _, p := range opts.Exclude {
		if p != "" {
			skip[filepath.Clean(p)] = true
		}
	}
	return &Scanner{store: store, opts: opts, base: search.ParseIgnore([]byte(strings.Join(lines, "\n"))), skip: skip,
		roots: map[string]*dirState{}, at: map[string]int64{}, extras: map[string]*ientry{}, loaded: map[string]bool{}}
}

// Store is the store the scanner writes into.
func (sc *Scanner) Store() *Store { return sc.store }

// MaxFileBytes is the size cap in force.
func (sc *Scanner) MaxFileBytes() int64 { return sc.opts.MaxFileBytes }

// Stats say what one scan did.
type Stats struct {
	// Files counts the files and links recorded with their content.
	Files int
	// Hashed counts those read and hashed because they changed (or were
	// not seen before); the others cost a stat.
	Hashed int
	// Stored counts new objects written, StoredBytes their size.
	Stored      int
	StoredBytes int64
	// Ignored, Oversize, Special and Unscanned count entries recorded
	// without content.
	Ignored, Oversize, Special, Unscanned int
}

// Result is one scan: the checkpoint it stored and what it cost.
type Result struct {
	ID         Hash
	Checkpoint Checkpoint
	Stats      Stats
}

// Scan records the state of roots (absolute directories; one inside
// another is scanned once, as part of the outer one) and of extras
// (absolute paths of single files, recorded whatever the ignore rules say,
// absent ones included), stores it, and returns the checkpoint.
func (sc *Scanner) Scan(ctx context.Context, roots, extras []string) (Result, error) {
	start := sc.opts.Clock()
	w := &walk{sc: sc, ctx: ctx, start: start.UnixNano(), sem: make(chan struct{}, scanWorkers)}
	cp := Checkpoint{Version: CheckpointVersion}
	for _, root := range outermost(roots) {
		st, err := w.root(root, sc.prev(root))
		if err != nil {
			return Result{}, err
		}
		sc.keep(root, st, w.start)
		cp.Roots = append(cp.Roots, Root{Path: root, Tree: st.tree})
	}
	cp.Limited = w.n.limited.Load()
	if len(extras) > 0 {
		h, err := w.extras(extras)
		if err != nil {
			return Result{}, err
		}
		cp.Extras = h
	}
	id, fresh, err := sc.store.put(typeCheckpoint, mustJSON(cp))
	if err != nil {
		return Result{}, err
	}
	if fresh {
		w.n.stored.Add(1)
	}
	return Result{ID: id, Checkpoint: cp, Stats: w.n.stats()}, nil
}

// prev is the state the last scan of root left (read from the saved
// index at the first scan), nil when there is none.
func (sc *Scanner) prev(root string) *dirState {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.load(root)
	return sc.roots[root]
}

// keep makes st the state the next scan of root starts from, unless a scan
// that started later has already left its own.
func (sc *Scanner) keep(root string, st *dirState, start int64) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if at, ok := sc.at[root]; ok && at > start {
		return
	}
	sc.roots[root], sc.at[root] = st, start
}

// extra is what the last scan recorded of an extra path, nil when none.
func (sc *Scanner) extra(p string) *ientry {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.extras[p]
}

// keepExtra records (or, with nil, forgets) what a scan saw of an extra.
func (sc *Scanner) keepExtra(p string, e *ientry) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if e == nil {
		delete(sc.extras, p)
		return
	}
	sc.extras[p] = e
}

// outermost cleans roots, drops duplicates and roots inside another, and
// keeps the order of the rest.
func outermost(roots []string) []string {
	var out []string
	for _, r := range roots {
		r = filepath.Clean(r)
		if !filepath.IsAbs(r) || slices.Contains(out, r) {
			continue
		}
		out = append(out, r)
	}
	var keep []string
	for _, r := range out {
		inside := false
		for _, o := range out {
			if o != r && within(o, r) {
				inside = true
				break
			}
		}
		if !inside {
			keep = append(keep, r)
		}
	}
	return keep
}

// within reports whether path is dir or below it.
func within(dir, path string) bool {
	if dir == "/" {
		return true
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// Covers reports whether a scan of the roots records path with its
// content: it lies under a root, no ignore rule leaves it (or a directory
// above it) out, and it is not a file over the size cap. It reads the
// ignore files on the way from the root to path, so it answers for paths
// that do not exist yet as well. The file tools record the files they
// touch that are not covered as extras.
func (sc *Scanner) Covers(roots []string, path string) bool {
	path = filepath.Clean(path)
	for _, root := range outermost(roots) {
		if path == root || !within(root, path) {
			continue
		}
		c := ancestors(root)
		dir := root
		parts := strings.Split(relTo(path, root), "/")
		for i, name := range parts {
			c = dirCtx(c, dir, isRepo(dir))
			next := joinPath(dir, name)
			last := i == len(parts)-1
			if vcsDirs[name] || sc.skip[next] || c.excluded(next, relTo(next, root), !last, sc.base) {
				return false
			}
			dir = next
		}
		if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Size() > sc.opts.MaxFileBytes {
			return false
		}
		return true
	}
	return false
}

func isRepo(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, ".git"))
	return err == nil
}

func (st *dirState) lookup(name string) *ientry {
	i, ok := slices.BinarySearchFunc(st.ents, name, func(e ientry, n string) int { return strings.Compare(e.Name, n) })
	if !ok {
		return nil
	}
	return &st.ents[i]
}

// walk is one scan in progress. Directories are scanned by up to
// scanWorkers goroutines at once: a scan is mostly stat system calls, and
// their latency overlaps.
type walk struct {
	sc    *Scanner
	ctx   context.Context
	start int64
	n     counters
	sem   chan struct{}
}

// scanWorkers bounds the goroutines of one scan (besides the caller's).
var scanWorkers = max(1, min(runtime.GOMAXPROCS(0), 4)-1)

type counters struct {
	files, hashed, stored, storedBytes, ignored, oversize, special, unscanned atomic.Int64
	limited                                                                   atomic.Bool
}

func (c *counters) stats() Stats {
	return Stats{Files: int(c.files.Load()), Hashed: int(c.hashed.Load()), Stored: int(c.stored.Load()),
		StoredBytes: c.storedBytes.Load(), Ignored: int(c.ignored.Load()), Oversize: int(c.oversize.Load()),
		Special: int(c.special.Load()), Unscanned: int(c.unscanned.Load())}
}

// bufs are read buffers, one per goroutine reading a file.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// ignoreCtx is one directory's ignore rules on the way down from a root.
type ignoreCtx struct {
	parent *ignoreCtx
	abs    string
	rules  *search.IgnoreRules
	// repo marks a repository root: rules above it do not apply below
	// it; exclude is its .git/info/exclude.
	repo    bool
	exclude *search.IgnoreRules
}

// excluded reports whether the nearest rule with an opinion excludes abs:
// the .gitignore files from abs's directory up to its repository root,
// then that repository's info/exclude, then the scanner's base rules
// (rootRel is abs relative to the scan's root).
func (c *ignoreCtx) excluded(abs, rootRel string, isDir bool, base *search.IgnoreRules) bool {
	for d := c; d != nil; d = d.parent {
		if ex, ok := d.rules.Match(relTo(abs, d.abs), isDir); ok {
			return ex
		}
		if d.repo {
			if ex, ok := d.exclude.Match(relTo(abs, d.abs), isDir); ok {
				return ex
			}
			break
		}
	}
	ex, _ := base.Match(rootRel, isDir)
	return ex
}

func relTo(abs, dir string) string {
	if dir == "/" {
		return abs[1:]
	}
	return strings.TrimPrefix(abs[len(dir):], "/")
}

// ancestors builds the ignore context above root: the .gitignore files of
// the directories from the enclosing repository's root down to root's
// parent (none when root is in no repository).
func ancestors(root string) *ignoreCtx {
	var chain []string
	repo := ""
	for d := filepath.Dir(root); ; d = filepath.Dir(d) {
		if d == root {
			break
		}
		chain = append(chain, d)
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			repo = d
			break
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	if repo == "" {
		return nil
	}
	var c *ignoreCtx
	for i := len(chain) - 1; i >= 0; i-- {
		c = dirCtx(c, chain[i], chain[i] == repo)
	}
	return c
}

// dirCtx reads the ignore rules of directory abs.
func dirCtx(parent *ignoreCtx, abs string, repo bool) *ignoreCtx {
	c := &ignoreCtx{parent: parent, abs: abs, repo: repo}
	if data, err := os.ReadFile(filepath.Join(abs, ".gitignore")); err == nil {
		c.rules = search.ParseIgnore(data)
	}
	if repo {
		if data, err := os.ReadFile(filepath.Join(abs, ".git", "info", "exclude")); err == nil {
			c.exclude = search.ParseIgnore(data)
		}
	}
	if c.rules == nil && !repo {
		return parent
	}
	return c
}

func (w *walk) root(root string, prev *dirState) (*dirState, error) {
	fi, err := os.Lstat(root)
	if err != nil {
		return nil, fmt.Errorf("files: scanning %s: %w", root, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("files: scanning %s: not a directory", root)
	}
	st, err := w.dir(root, root, ancestors(root), prev)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, fmt.Errorf("files: scanning %s: the directory cannot be read", root)
	}
	return st, nil
}

// dir scans directory abs. It returns nil (and no error) when the
// directory cannot be read: the caller records it Unscanned.
func (w *walk) dir(root, abs string, parent *ignoreCtx, prev *dirState) (*dirState, error) {
	if err := w.ctx.Err(); err != nil {
		return nil, err
	}
	fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, nil
	}
	f := os.NewFile(uintptr(fd), abs)
	defer f.Close()
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, nil
	}
	repo, gitignore := false, false
	for _, de := range des {
		switch de.Name() {
		case ".git":
			repo = true
		case ".gitignore":
			gitignore = true
		}
	}
	ign := parent
	if repo || gitignore {
		ign = dirCtx(parent, abs, repo)
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	ents := make([]ientry, 0, len(des))
	var old []ientry
	if prev != nil {
		old = prev.ents
	}
	oi := 0
	var subdirs []int
	for _, de := range des {
		name := de.Name()
		if vcsDirs[name] || strings.HasPrefix(name, TempPrefix) {
			continue
		}
		path := joinPath(abs, name)
		if w.sc.skip[path] {
			continue
		}
		for oi < len(old) && old[oi].Name < name {
			oi++
		}
		var was *ientry
		if oi < len(old) && old[oi].Name == name {
			was = &old[oi]
		}
		e, ok, err := w.entry(root, path, name, int(f.Fd()), ign, was)
		if err != nil {
			return nil, err
		}
		if ok {
			if e.Kind == Dir {
				subdirs = append(subdirs, len(ents))
			}
			ents = append(ents, e)
		}
	}
	if err := w.subdirs(root, abs, ign, ents, subdirs); err != nil {
		return nil, err
	}
	st := &dirState{ents: ents}
	if prev != nil && sameEntries(prev.ents, ents) {
		st.tree = prev.tree
		return st, nil
	}
	plain := make([]Entry, len(ents))
	for i, e := range ents {
		plain[i] = e.Entry
	}
	h, fresh, err := w.sc.store.put(typeTree, encodeTree(plain))
	if err != nil {
		return nil, err
	}
	if fresh {
		w.n.stored.Add(1)
	}
	st.tree = h
	return st, nil
}

// subdirs scans the directories among ents (at the indexes in which),
// handing each to another goroutine while one is free. An entry's sub
// holds the previous scan's state on the way in and the new one on the
// way out.
func (w *walk) subdirs(root, abs string, ign *ignoreCtx, ents []ientry, which []int) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	one := func(i int) {
		e := &ents[i]
		sub, err := w.dir(root, joinPath(abs, e.Name), ign, e.sub)
		switch {
		case err != nil:
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
		case sub == nil:
			e.Kind, e.sub, e.Hash = Unscanned, nil, Hash{}
			w.n.unscanned.Add(1)
		default:
			e.sub, e.Hash = sub, sub.tree
		}
	}
	for _, i := range which {
		select {
		case w.sem <- struct{}{}:
			wg.Add(1)
			go func() {
				defer func() { <-w.sem; wg.Done() }()
				one(i)
			}()
		default:
			one(i)
		}
	}
	wg.Wait()
	return first
}

func joinPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

func sameEntries(a, b []ientry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Entry != b[i].Entry {
			return false
		}
	}
	return true
}

// entry records one name of a directory; ok is false for a name that
// vanished while the scan ran.
func (w *walk) entry(root, path, name string, dirfd int, ign *ignoreCtx, was *ientry) (ientry, bool, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return ientry{}, false, nil
	}
	e := ientry{Entry: Entry{Name: name, Mode: fileMode(uint32(st.Mode) & 0o7777) /* Mode is uint16 on the BSDs */}, ctime: st.Ctim.Nano(), mtime: st.Mtim.Nano(),
		ino: st.Ino, dev: uint64(st.Dev)}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	rootRel := relTo(path, root)
	if ign.excluded(path, rootRel, isDir, w.sc.base) {
		if isDir {
			e.Kind, e.Mode = IgnoredDir, 0
		} else {
			e.Kind, e.Size, e.MTime = Ignored, st.Size, e.mtime
		}
		w.n.ignored.Add(1)
		return e, true, nil
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		e.Kind = Dir
		if w.n.files.Load() >= int64(w.sc.opts.MaxFiles) {
			e.Kind = Unscanned
			w.n.limited.Store(true)
			w.n.unscanned.Add(1)
			return e, true, nil
		}
		// Entered by subdirs, with the previous scan's state.
		if was != nil && was.Kind == Dir {
			e.sub = was.sub
		}
		return e, true, nil
	case unix.S_IFREG:
		if st.Size > w.sc.opts.MaxFileBytes {
			e.Kind, e.Size, e.MTime = Oversize, st.Size, e.mtime
			w.n.oversize.Add(1)
			return e, true, nil
		}
		e.Kind, e.Size = File, st.Size
	case unix.S_IFLNK:
		e.Kind, e.Size, e.Mode = Link, st.Size, 0
	default:
		e.Kind, e.Mode = Special, 0
		w.n.special.Add(1)
		return e, true, nil
	}
	w.n.files.Add(1)
	if was != nil && !was.racy && was.Kind == e.Kind && was.Size == e.Size && was.mtime == e.mtime && was.ctime == e.ctime &&
		was.ino == e.ino && was.dev == e.dev && was.Mode == e.Mode {
		e.Hash = was.Hash
		return e, true, nil
	}
	return w.content(dirfd, name, e)
}

// content reads and stores the content of a file or link whose stat e
// holds. A file that keeps changing while it is read is stored as last
// read and marked racy, so the next scan reads it again.
func (w *walk) content(dirfd int, name string, e ientry) (ientry, bool, error) {
	w.n.hashed.Add(1)
	var data []byte
	if e.Kind == Link {
		buf := make([]byte, max(64, e.Size+1))
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return ientry{}, false, nil
		}
		data = buf[:n]
	} else {
		var err error
		var ok bool
		bp := bufs.Get().(*[]byte)
		defer bufs.Put(bp)
		data, e, ok, err = w.readFile(dirfd, name, e, bp)
		if err != nil || !ok {
			return ientry{}, false, err
		}
		if e.Kind == Oversize {
			w.n.files.Add(-1)
			w.n.oversize.Add(1)
			return e, true, nil
		}
	}
	h, fresh, err := w.sc.store.put(typeBlob, data)
	if err != nil {
		return ientry{}, false, err
	}
	if fresh {
		w.n.stored.Add(1)
		w.n.storedBytes.Add(int64(len(data)))
	}
	e.Hash = h
	e.Size = int64(len(data))
	e.racy = e.racy || e.mtime >= w.start-int64(racyWindow) || e.ctime >= w.start-int64(racyWindow)
	return e, true, nil
}

// readFile reads a regular file without following a link that replaced
// it, and with the stat of the open file around the read: when it changed
// meanwhile the read is retried.
func (w *walk) readFile(dirfd int, name string, e ientry, bp *[]byte) ([]byte, ientry, bool, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, e, false, nil
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	limit := w.sc.opts.MaxFileBytes
	for attempt := 0; ; attempt++ {
		var before, after unix.Stat_t
		if err := unix.Fstat(fd, &before); err != nil || before.Mode&unix.S_IFMT != unix.S_IFREG {
			return nil, e, false, nil
		}
		if before.Size > limit {
			e.Kind, e.Size, e.MTime = Oversize, before.Size, before.Mtim.Nano()
			return nil, e, true, nil
		}
		if cap(*bp) < int(before.Size)+1 {
			*bp = make([]byte, 0, max(int(before.Size)+1, 64<<10))
		}
		buf := (*bp)[:0]
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, e, false, nil
		}
		n, err := io.ReadFull(io.LimitReader(f, limit+1), buf[:cap(buf)])
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return nil, e, false, nil
		}
		buf = buf[:n]
		if int64(n) > limit {
			e.Kind, e.Size, e.MTime = Oversize, int64(n), before.Mtim.Nano()
			return nil, e, true, nil
		}
		if n == cap(*bp) {
			// The file grew past the buffer while it was read: read
			// again with more room.
			*bp = make([]byte, 0, 2*n)
			continue
		}
		if err := unix.Fstat(fd, &after); err != nil {
			return nil, e, false, nil
		}
		e.Mode = fileMode(uint32(after.Mode) & 0o7777)
		e.mtime, e.ctime, e.ino, e.dev = after.Mtim.Nano(), after.Ctim.Nano(), after.Ino, uint64(after.Dev)
		stable := before.Size == after.Size && before.Mtim == after.Mtim && before.Ctim == after.Ctim && int64(n) == after.Size
		if stable || attempt >= 2 {
			e.racy = !stable
			return buf, e, true, nil
		}
	}
}

// extras records single files by absolute path.
func (w *walk) extras(paths []string) (Hash, error) {
	seen := map[string]bool{}
	var ents []Entry
	for _, p := range paths {
		p = filepath.Clean(p)
		if !filepath.IsAbs(p) || p == "/" || seen[p] {
			continue
		}
		seen[p] = true
		dir, name := filepath.Split(p)
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			ents = append(ents, Entry{Name: p, Kind: Absent})
			w.sc.keepExtra(p, nil)
			continue
		}
		was := w.sc.extra(p)
		var e ientry
		var st unix.Stat_t
		ok := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
		if ok {
			e = ientry{Entry: Entry{Name: p, Mode: fileMode(uint32(st.Mode) & 0o7777)}, ctime: st.Ctim.Nano(), mtime: st.Mtim.Nano(), ino: st.Ino, dev: uint64(st.Dev)}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFREG:
				if st.Size > w.sc.opts.MaxFileBytes {
					e.Kind, e.Size, e.MTime = Oversize, st.Size, e.mtime
				} else {
					e.Kind, e.Size = File, st.Size
				}
			case unix.S_IFLNK:
				e.Kind, e.Size, e.Mode = Link, st.Size, 0
			default:
				e.Kind, e.Mode = Special, 0
			}
			if e.Kind.Tracked() {
				if was != nil && !was.racy && was.Kind == e.Kind && was.Size == e.Size && was.mtime == e.mtime &&
					was.ctime == e.ctime && was.ino == e.ino && was.dev == e.dev && was.Mode == e.Mode {
					e.Hash = was.Hash
				} else {
					var err error
					e, ok, err = w.content(fd, name, e)
					if err != nil {
						unix.Close(fd)
						return Hash{}, err
					}
				}
			}
		}
		unix.Close(fd)
		if !ok {
			ents = append(ents, Entry{Name: p, Kind: Absent})
			w.sc.keepExtra(p, nil)
			continue
		}
		x := e
		w.sc.keepExtra(p, &x)
		ents = append(ents, e.Entry)
	}
	sortEntries(ents)
	h, fresh, err := w.sc.store.put(typeTree, encodeTree(ents))
	if err != nil {
		return Hash{}, err
	}
	if fresh {
		w.n.stored.Add(1)
	}
	return h, nil
}
