package fs

import (
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// MaxSymlinkHops bounds how many symlinks RealPath follows (as the kernel's
// ELOOP limit does).
const MaxSymlinkHops = 40

// RealPath resolves symlinks in the absolute, clean path p through its
// longest existing prefix. Missing trailing components are kept after the
// resolved ancestor, and a dangling symlink is followed to where its target
// would be: writing through such a link creates the target, so the target
// is the file meant. The local provider keys files by it and the permission
// layer checks rules against it, so both always agree on which file a path
// names. A path that not even the root resolves is returned unchanged; one
// that runs through a regular file is an error (ENOTDIR).
func RealPath(p string) (string, error) {
	var missing []string // innermost first
	cur := p
	for hops := 0; ; {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			for i := len(missing) - 1; i >= 0; i-- {
				r = filepath.Join(r, missing[i])
			}
			return r, nil
		}
		if !errors.Is(err, iofs.ErrNotExist) {
			return "", err
		}
		if fi, lerr := os.Lstat(cur); lerr == nil && fi.Mode()&iofs.ModeSymlink != 0 {
			if hops++; hops > MaxSymlinkHops {
				return "", &os.PathError{Op: "resolve", Path: p, Err: syscall.ELOOP}
			}
			dst, rerr := os.Readlink(cur)
			if rerr != nil {
				return "", rerr
			}
			if !filepath.IsAbs(dst) {
				dst = filepath.Join(filepath.Dir(cur), dst)
			}
			cur = filepath.Clean(dst)
			continue
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		missing = append(missing, filepath.Base(cur))
		cur = parent
	}
}
