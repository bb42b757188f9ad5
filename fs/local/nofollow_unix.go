//go:build unix

package local

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The provider works on a Target's Key: a path it resolved through every
// symbolic link, and the file the permission layer decided on. Between
// that decision and the write, anything else running as the user (a
// background command) can turn one of the path's directories, or the file
// itself, into a symbolic link to somewhere else. So the provider opens a
// Key without following any symbolic link: a link that appeared since the
// Key was resolved makes the open fail (ELOOP, reported as errLinkSwap)
// instead of leading elsewhere, and a write goes through the directory it
// opened that way, so the file decided is the file written.

// openat2 is the Linux system call, or nil where there is none.
var openat2 func(dir int, name string, flags int, mode uint32) (int, error)

// openNoFollow opens the absolute path name with flags, following no
// symbolic link on the way or at its end: with openat2 and
// RESOLVE_NO_SYMLINKS where the kernel has it (Linux 5.6), else one
// component at a time with O_NOFOLLOW.
func openNoFollow(name string, flags int, mode uint32) (*os.File, error) {
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW
	if openat2 != nil {
		fd, err := openat2(unix.AT_FDCWD, name, flags, mode)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), name), nil
		case errors.Is(err, unix.ELOOP):
			return nil, &os.PathError{Op: "open", Path: name, Err: errLinkSwap}
		case !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM):
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
	}
	dir, base := filepath.Split(name)
	d, err := openDirNoFollow(filepath.Clean(dir), false)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	fd, err := unix.Openat(int(d.Fd()), base, flags, mode)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			err = errLinkSwap
		}
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// openDirNoFollow opens the absolute directory dir one component at a
// time without following symbolic links, creating missing ones (mode
// 0755) when create is set.
func openDirNoFollow(dir string, create bool) (*os.File, error) {
	const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if !filepath.IsAbs(dir) {
		return nil, &os.PathError{Op: "open", Path: dir, Err: errors.New("not an absolute path")}
	}
	if openat2 != nil && !create {
		fd, err := openat2(unix.AT_FDCWD, dir, dirFlags, 0)
		if err == nil {
			return os.NewFile(uintptr(fd), dir), nil
		}
		// Anything else (ENOSYS, a missing component) is looked at one
		// component at a time below.
	}
	fd, err := unix.Open("/", dirFlags, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	cur := "/"
	for _, part := range strings.Split(strings.Trim(dir, "/"), "/") {
		if part == "" {
			continue
		}
		cur = filepath.Join(cur, part)
		next, err := unix.Openat(fd, part, dirFlags, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(fd, part, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(fd, part, dirFlags, 0)
			}
		}
		if err != nil && (errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP)) {
			// O_NOFOLLOW with O_DIRECTORY reports a symbolic link as "not a
			// directory": tell the two apart.
			var st unix.Stat_t
			if unix.Fstatat(fd, part, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				err = errLinkSwap
			}
		}
		unix.Close(fd)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: cur, Err: err}
		}
		fd = next
	}
	return os.NewFile(uintptr(fd), dir), nil
}

var tempSeq atomic.Uint64

// createTempAt creates a new private file (0600, O_EXCL) in the opened
// directory dir, named after base, and returns it with its name.
func createTempAt(dir *os.File, base string) (*os.File, string, error) {
	if len(base) > 200 { // keep ".{base}.{n}.tmp" within NAME_MAX
		base = base[:200]
	}
	for try := 0; ; try++ {
		name := "." + base + "." + strconv.FormatUint(uint64(time.Now().UnixNano())^tempSeq.Add(1)<<32^uint64(os.Getpid()), 36) + ".tmp"
		fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == nil {
			return os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name)), name, nil
		}
		if !errors.Is(err, unix.EEXIST) || try > 100 {
			return nil, "", &os.PathError{Op: "create", Path: filepath.Join(dir.Name(), name), Err: err}
		}
	}
}

// renameAt renames from to to, both in the opened directory dir.
func renameAt(dir *os.File, from, to string) error {
	if err := unix.Renameat(int(dir.Fd()), from, int(dir.Fd()), to); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: filepath.Join(dir.Name(), to), Err: err}
	}
	return nil
}

// removeAt removes name from the opened directory dir.
func removeAt(dir *os.File, name string) { _ = unix.Unlinkat(int(dir.Fd()), name, 0) }
