package fs

import (
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
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
			// The kernel follows a target from the link's physical
			// directory, and applies each ".." to the physical directory
			// reached so far: cur's directory may still run through
			// symlinks (only the tail was missing), so resolve it first.
			var base string
			if filepath.IsAbs(dst) {
				vol := filepath.VolumeName(dst)
				base, dst = vol+string(filepath.Separator), dst[len(vol):]
			} else if base, err = filepath.EvalSymlinks(filepath.Dir(cur)); err != nil {
				return "", err
			}
			cur = joinPhysical(base, dst)
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

// joinPhysical joins the symlink target rel to base, a symlink-free
// directory, the way the kernel walks it: an existing component is resolved
// before a later ".." applies to it, so "sub/../x" with sub a symlink names
// x beside sub's target, not beside sub. Components that do not exist are
// kept as spelled (the caller's loop handles a missing tail).
func joinPhysical(base, rel string) string {
	cur := base
	for _, c := range strings.FieldsFunc(rel, isSep) {
		switch c {
		case ".":
		case "..":
			cur = filepath.Dir(cur)
		default:
			cur = filepath.Join(cur, c)
			if r, err := filepath.EvalSymlinks(cur); err == nil {
				cur = r
			}
		}
	}
	return cur
}

func isSep(r rune) bool { return r < 0x80 && os.IsPathSeparator(uint8(r)) }
