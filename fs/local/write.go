package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
	fi, err := os.Lstat(t.Key)
	switch {
	case err == nil && fi.Mode()&os.ModeSymlink != 0:
		return fs.WriteResult{}, ioError("write", "write", t.Path, &os.PathError{Op: "write", Path: t.Key, Err: errLinkSwap})
	case err == nil:
		info := infoOf(fi)
		if info.Type != fs.TypeFile {
			return fs.WriteResult{}, notRegular("write", "write", t.Path, info.Type)
		}
		if err := checkWritable(t.Key, fi); err != nil {
			return fs.WriteResult{}, readOnly("write", "write", t.Path, err)
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
	var prev iofs.FileInfo
	if cur != nil {
		prev = fi
		if fi.Size() <= p.maxSize {
			res.Before = diffBasis(t.Key)
		}
	}
	if err := ctx.Err(); err != nil {
		return fs.WriteResult{}, aborted("write", t.Path, err)
	}
	v, err := replaceFile(t.Key, []byte(content), prev, p.newMode)
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
	f, err := openRead(name)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil || bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
		return nil
	}
	s := fs.NormalizeNewlines(string(stripBOM(b)))
	return &s
}

func stripBOM(b []byte) []byte { return bytes.TrimPrefix(b, bom) }

// replaceFile writes data as the file name. prev is the existing file's
// stat (nil when name does not exist yet, in which case the file is created
// with newMode); the caller has checked that it may write it
// ([checkWritable]).
//
// An existing file is normally replaced atomically ([writeAtomic]) with its
// permission bits and, as far as the process may set them, its owner and
// group. The file is instead rewritten in place ([writeInPlace]) when a
// rename would lose what the user set up: when it has more than one hard
// link (a rename detaches this name from the others, which would silently
// keep the old content), or when the process cannot give the replacement
// the file's owner and group (an ordinary user editing a group-writable
// file of another user; ids not mapped into a container's user namespace).
// That path is not atomic; keeping the links and the ownership wins, as in
// editors that "write in place when needed" (vim's backupcopy=auto).
func replaceFile(name string, data []byte, prev iofs.FileInfo, newMode iofs.FileMode) (fs.Version, error) {
	if prev == nil {
		return writeAtomic(name, data, newMode, nil)
	}
	if nlink(prev) > 1 {
		return writeInPlace(name, data, prev)
	}
	v, err := writeAtomic(name, data, prev.Mode()&keptMode, prev)
	if errors.Is(err, errOwner) {
		return writeInPlace(name, data, prev)
	}
	return v, err
}

// writeAtomic replaces name with data: a temporary file in the same
// directory is written, synced, given prev's owner and group (when prev is
// set) and mode, then renamed over name, and the directory is synced so the
// rename itself survives a crash. Missing parent directories are created.
// The directory is opened once, without following symbolic links, and
// every step goes through it: a link swapped into the path meanwhile
// makes the write fail rather than land elsewhere. It returns the new
// file's version.
func writeAtomic(name string, data []byte, mode iofs.FileMode, prev iofs.FileInfo) (fs.Version, error) {
	dirName, base := filepath.Split(name)
	dir, err := openDirNoFollow(filepath.Clean(dirName), true)
	if err != nil {
		if !errors.Is(err, errLinkSwap) && (errors.Is(err, syscall.ENOTDIR) || errors.Is(err, iofs.ErrExist)) { // a parent segment is a file
			err = &os.PathError{Op: "mkdir", Path: dirName, Err: syscall.ENOTDIR}
		}
		return fs.Version{}, err
	}
	defer dir.Close()
	f, tmp, err := createTempAt(dir, base) // 0600, O_EXCL: never clobbers
	if err != nil {
		return fs.Version{}, err
	}
	fail := func(err error) (fs.Version, error) {
		_ = f.Close()
		removeAt(dir, tmp)
		return fs.Version{}, err
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	// Owner before mode: chown clears set-id bits. Both after writing: the
	// file is private (0600, ours) while it is incomplete.
	if prev != nil {
		if err := keepOwner(f, prev); err != nil {
			return fail(err)
		}
	}
	if err := f.Chmod(mode); err != nil {
		return fail(err)
	}
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		removeAt(dir, tmp)
		return fs.Version{}, err
	}
	if err := renameAt(dir, tmp, base); err != nil {
		removeAt(dir, tmp)
		return fs.Version{}, err
	}
	_ = dir.Sync()
	return versionOf(fi), nil
}

// writeInPlace overwrites the existing regular file name with data through
// its own inode, so its hard links, owner, mode and any other metadata stay
// as they are. It is NOT atomic: the new bytes are written over the old
// ones, then the file is truncated to the new length and synced, so a crash
// or a concurrent reader can see a mix of old and new content.
func writeInPlace(name string, data []byte, prev iofs.FileInfo) (fs.Version, error) {
	f, err := openWrite(name)
	if err != nil {
		return fs.Version{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fs.Version{}, err
	}
	if !fi.Mode().IsRegular() || !os.SameFile(fi, prev) {
		// Replaced since the caller's stat: refuse rather than write into
		// whatever is there now.
		return fs.Version{}, errors.New("the file was replaced while being written; read it again and retry")
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return fs.Version{}, err
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		return fs.Version{}, err
	}
	if err := f.Sync(); err != nil {
		return fs.Version{}, err
	}
	if fi, err = f.Stat(); err != nil {
		return fs.Version{}, fmt.Errorf("fs/local: stat after write: %w", err)
	}
	if err := f.Close(); err != nil {
		return fs.Version{}, err
	}
	return versionOf(fi), nil
}

// readOnly is the error for replacing a file the process may not write
// (err from [checkWritable]).
func readOnly(op, verb, path string, err error) *fs.Error {
	if !errors.Is(err, iofs.ErrPermission) {
		return ioError(op, verb, path, err)
	}
	return &fs.Error{Code: fs.CodePermission, Op: op, Path: path, Err: err,
		Message: fmt.Sprintf("cannot %s %q: permission denied (the file is read-only for dsh; it is left unchanged)", verb, path)}
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
