package local

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/dshq/dsh/fs"
)

// Defaults.
const (
	// DefaultMaxFileSize bounds whole-file operations: 16 MiB is far beyond
	// any source file a model should edit as text, and small enough that an
	// edit never holds more than a few copies of it in memory.
	DefaultMaxFileSize = 16 << 20
	// DefaultNewFileMode is the permission of files Write creates. It is set
	// with chmod, so the process umask does not narrow it.
	DefaultNewFileMode = 0o644
	// binarySniff is how much of a file's head is searched for NUL bytes to
	// call it binary on read.
	binarySniff = 8 << 10
)

// Options configure a [Provider]. The zero value is usable.
type Options struct {
	// Cwd is the default base for relative paths when the caller passes no
	// cwd. Empty means the process's working directory at New.
	Cwd string
	// Roots, when set, confine the provider: every resolved Key (symlinks
	// resolved) must be one of these directories or lie inside one, or
	// Resolve fails with CodeOutsideRoots. The roots must exist.
	Roots []string
	// NewFileMode is the permission of created files; 0 means
	// DefaultNewFileMode.
	NewFileMode iofs.FileMode
	// MaxFileSize bounds whole-file operations: the largest file Edit loads,
	// the largest content Write accepts, and the largest previous file Write
	// reads as its diff basis (a larger one is replaced without a diff). 0
	// means DefaultMaxFileSize.
	MaxFileSize int64
}

// Provider is the local filesystem. Create it with [New].
type Provider struct {
	cwd     string
	roots   []string
	newMode iofs.FileMode
	maxSize int64
	locks   keyedMutex
}

var _ fs.Provider = (*Provider)(nil)

// New returns a provider for opts.
func New(opts Options) (*Provider, error) {
	p := &Provider{newMode: opts.NewFileMode, maxSize: opts.MaxFileSize}
	if p.newMode == 0 {
		p.newMode = DefaultNewFileMode
	}
	if p.maxSize <= 0 {
		p.maxSize = DefaultMaxFileSize
	}
	cwd := opts.Cwd
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("fs/local: working directory: %w", err)
		}
		cwd = wd
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return nil, fmt.Errorf("fs/local: cwd %q: %w", cwd, err)
	}
	p.cwd = abs
	for _, r := range opts.Roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("fs/local: root %q: %w", r, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("fs/local: root %q: %w", r, err)
		}
		p.roots = append(p.roots, real)
	}
	return p, nil
}

// Cwd returns the default base for relative paths.
func (p *Provider) Cwd() string { return p.cwd }

// Resolve implements [fs.Provider].
func (p *Provider) Resolve(ctx context.Context, cwd, path string) (fs.Target, error) {
	if strings.TrimSpace(path) == "" {
		return fs.Target{}, fs.Errorf(fs.CodeNotFound, "resolve", "", "file_path must be a non-empty string")
	}
	if strings.IndexByte(path, 0) >= 0 {
		return fs.Target{}, fs.Errorf(fs.CodeNotFound, "resolve", "", "file_path must not contain NUL bytes")
	}
	if err := ctx.Err(); err != nil {
		return fs.Target{}, aborted("resolve", "", err)
	}
	base := cwd
	if base == "" {
		base = p.cwd
	} else if !filepath.IsAbs(base) {
		base = filepath.Join(p.cwd, base)
	}
	display := path
	if !filepath.IsAbs(display) {
		display = filepath.Join(base, display)
	}
	display = filepath.Clean(display)
	key, err := realpath(display)
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			return fs.Target{}, &fs.Error{Code: fs.CodeNotFound, Op: "resolve", Path: display, Err: err,
				Message: fmt.Sprintf("cannot resolve %q: a parent path segment is not a directory", display)}
		}
		return fs.Target{}, ioError("resolve", "resolve", display, err)
	}
	t := fs.Target{Key: key, Path: display}
	if !p.inRoots(key) {
		return fs.Target{}, fs.Errorf(fs.CodeOutsideRoots, "resolve", display,
			"%q is outside the allowed directories (%s)", display, strings.Join(p.roots, ", "))
	}
	return t, nil
}

func (p *Provider) inRoots(key string) bool {
	if len(p.roots) == 0 {
		return true
	}
	for _, r := range p.roots {
		if within(r, key) {
			return true
		}
	}
	return false
}

// within reports whether path is dir or inside it (both cleaned, absolute).
func within(dir, path string) bool {
	if path == dir {
		return true
	}
	if !strings.HasSuffix(dir, string(filepath.Separator)) {
		dir += string(filepath.Separator)
	}
	return strings.HasPrefix(path, dir)
}

// realpath is fs.RealPath: the provider and the permission layer must
// resolve paths identically.
func realpath(p string) (string, error) { return fs.RealPath(p) }

// Stat implements [fs.Provider].
func (p *Provider) Stat(ctx context.Context, t fs.Target) (*fs.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, aborted("stat", t.Path, err)
	}
	fi, err := os.Stat(t.Key)
	if err != nil {
		if absent(err) {
			return nil, nil
		}
		return nil, ioError("stat", "stat", t.Path, err)
	}
	info := infoOf(fi)
	return &info, nil
}

// List implements [fs.Provider].
func (p *Provider) List(ctx context.Context, t fs.Target) ([]fs.DirEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, aborted("list", t.Path, err)
	}
	fi, err := os.Stat(t.Key)
	switch {
	case err != nil && absent(err):
		return nil, fs.Errorf(fs.CodeNotFound, "list", t.Path, "cannot list %q: not found", t.Path)
	case err != nil:
		return nil, ioError("list", "list", t.Path, err)
	case !fi.IsDir():
		return nil, fs.Errorf(fs.CodeNotDirectory, "list", t.Path, "cannot list %q: not a directory", t.Path)
	}
	des, err := os.ReadDir(t.Key) // sorted by name
	if err != nil {
		return nil, ioError("list", "list", t.Path, err)
	}
	out := make([]fs.DirEntry, 0, len(des))
	for i, de := range des {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, aborted("list", t.Path, err)
			}
		}
		name := de.Name()
		e := fs.DirEntry{Name: name, Target: fs.Target{Key: filepath.Join(t.Key, name), Path: filepath.Join(t.Path, name)}}
		if de.Type()&iofs.ModeSymlink != 0 {
			if real, err := filepath.EvalSymlinks(e.Target.Key); err == nil {
				e.Target.Key = real
			}
		}
		cfi, err := os.Stat(e.Target.Key)
		if err != nil {
			// A broken symlink, a child removed meanwhile, or one we may not
			// examine: list it without metadata rather than fail the listing.
			e.Type = fs.TypeOther
			out = append(out, e)
			continue
		}
		info := infoOf(cfi)
		e.Type, e.Version = info.Type, info.Version
		if e.Type == fs.TypeFile {
			e.Size = info.Size
		}
		out = append(out, e)
	}
	return out, nil
}

func infoOf(fi iofs.FileInfo) fs.Info {
	typ := fs.TypeOther
	switch {
	case fi.Mode().IsRegular():
		typ = fs.TypeFile
	case fi.IsDir():
		typ = fs.TypeDir
	}
	return fs.Info{ID: fileID(fi), Type: typ, Size: fi.Size(), Mode: fi.Mode() & keptMode, Version: versionOf(fi)}
}

// keptMode is what an overwrite preserves of the previous file's mode.
const keptMode = iofs.ModePerm | iofs.ModeSetuid | iofs.ModeSetgid | iofs.ModeSticky

func versionOf(fi iofs.FileInfo) fs.Version {
	return fs.Version{Size: fi.Size(), ModTime: fi.ModTime().UnixNano(), Inode: inode(fi)}
}

// absent reports errors meaning "nothing is there".
func absent(err error) bool {
	return errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func aborted(op, path string, cause error) *fs.Error {
	return &fs.Error{Code: fs.CodeAborted, Op: op, Path: path, Err: cause, Message: op + " aborted"}
}

// errLinkSwap reports a symbolic link where the resolved path had none:
// something changed the path after it was resolved (and decided on).
var errLinkSwap = errors.New("a symbolic link appeared on the path after it was resolved, so the file was left alone; resolve it again and retry")

// ioError classifies an operating-system error for the model. verb completes
// "cannot {verb} {path}".
func ioError(op, verb, path string, err error) *fs.Error {
	e := &fs.Error{Op: op, Path: path, Err: err}
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		e.Code, e.Message = fs.CodeNotFound, fmt.Sprintf("cannot %s %q: not found", verb, path)
	case errors.Is(err, syscall.ENOTDIR):
		e.Code, e.Message = fs.CodeNotFound, fmt.Sprintf("cannot %s %q: a parent path segment is not a directory", verb, path)
	case errors.Is(err, iofs.ErrPermission):
		e.Code, e.Message = fs.CodePermission, fmt.Sprintf("cannot %s %q: permission denied", verb, path)
	case errors.Is(err, errLinkSwap):
		e.Code, e.Message = fs.CodePermission, fmt.Sprintf("cannot %s %q: %v", verb, path, errLinkSwap)
	case errors.Is(err, syscall.EISDIR):
		e.Code, e.Message = fs.CodeNotRegularFile, fmt.Sprintf("cannot %s %q: it is a directory", verb, path)
	default:
		detail := err
		var pe *os.PathError
		if errors.As(err, &pe) {
			detail = pe.Err // the path is in the message already
		}
		e.Code, e.Message = fs.CodeIO, fmt.Sprintf("cannot %s %q: %v", verb, path, detail)
	}
	return e
}

// notRegular is the error for a file operation on something else.
func notRegular(op, verb, path string, typ fs.Type) *fs.Error {
	what := "not a regular file"
	if typ == fs.TypeDir {
		what = "it is a directory, not a file"
	}
	return fs.Errorf(fs.CodeNotRegularFile, op, path, "cannot %s %q: %s", verb, path, what)
}
