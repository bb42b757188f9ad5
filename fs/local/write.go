package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"syscall"
	"unicode/utf8"

	"github.com/dshq/dsh/fs"
)

// Write implements [fs.Provider].
func (p *Provider) Write(ctx context.Context, t fs.Target, content string, check fs.Precondition) (fs.WriteResult, error) {
	if err := ctx.Err(); err != nil {
		return fs.WriteResult{}, aborted("write", t.Path, err)
	}
	if int64(len(content)) > p.maxSize {
		return fs.WriteResult{}, fs.Errorf(fs.CodeTooLarge, "write", t.Path,
			"cannot write %q: the content is %s, over the %s limit", t.Path,
			sizeString(int64(len(content))), sizeString(p.maxSize))
	}
	unlock := p.locks.lock(t.Key)
	defer unlock()

	var cur *fs.Version
	fi, err := os.Stat(t.Key)
	switch {
	case err == nil:
		info := infoOf(fi)
		if info.Type != fs.TypeFile {
			return fs.WriteResult{}, notRegular("write", "write", t.Path, info.Type)
		}
		cur = &info.Version
	case !absent(err):
		return fs.WriteResult{}, ioError("write", "write", t.Path, err)
	}
	if check != nil {
		if err := check(cur); err != nil {
			return fs.WriteResult{}, err
		}
	}
	res := fs.WriteResult{Created: cur == nil, After: fs.NormalizeNewlines(string(stripBOM([]byte(content))))}
	mode := p.newMode
	if cur != nil {
		mode = fi.Mode() & keptMode
		if fi.Size() <= p.maxSize {
			res.Before = diffBasis(t.Key)
		}
	}
	if err := ctx.Err(); err != nil {
		return fs.WriteResult{}, aborted("write", t.Path, err)
	}
	v, err := writeAtomic(t.Key, []byte(content), mode)
	if err != nil {
		return fs.WriteResult{}, ioError("write", "write", t.Path, err)
	}
	res.Version = v
	return res, nil
}

// diffBasis returns the file's text for a diff, or nil when it is not text
// (unreadable, NUL bytes, invalid UTF-8). Failing to read it never fails the
// write: the diff is presentation, the write is the point.
func diffBasis(name string) *string {
	b, err := os.ReadFile(name)
	if err != nil || bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
		return nil
	}
	s := fs.NormalizeNewlines(string(stripBOM(b)))
	return &s
}

func stripBOM(b []byte) []byte { return bytes.TrimPrefix(b, bom) }

// writeAtomic replaces name with data: a temporary file in the same
// directory is written, synced and given mode, then renamed over name, and
// the directory is synced so the rename itself survives a crash. Missing
// parent directories are created. It returns the new file's version.
func writeAtomic(name string, data []byte, mode iofs.FileMode) (fs.Version, error) {
	dir, base := filepath.Split(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		if errors.Is(err, iofs.ErrExist) { // a parent segment is a file
			err = &os.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return fs.Version{}, err
	}
	if len(base) > 200 { // keep ".{base}.{random}.tmp" within NAME_MAX
		base = base[:200]
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp") // 0600, O_EXCL: never clobbers
	if err != nil {
		return fs.Version{}, err
	}
	tmp := f.Name()
	fail := func(err error) (fs.Version, error) {
		_ = f.Close()
		_ = os.Remove(tmp)
		return fs.Version{}, err
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	// Chmod after writing: the file is private (0600) while it is incomplete.
	if err := f.Chmod(mode); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return fs.Version{}, err
	}
	if err := os.Rename(tmp, name); err != nil {
		_ = os.Remove(tmp)
		return fs.Version{}, err
	}
	syncDir(dir)
	fi, err := os.Stat(name)
	if err != nil {
		return fs.Version{}, fmt.Errorf("fs/local: stat after write: %w", err)
	}
	return versionOf(fi), nil
}

// syncDir makes a rename in dir durable. Failure is ignored: some
// filesystems do not support syncing directories, and the data is written.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// sizeString formats a byte count for messages ("16 MiB", "2.0 GiB").
func sizeString(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %ciB", int64(v), "KMGTPE"[exp])
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[exp])
}
