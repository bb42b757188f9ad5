//go:build linux

package helper

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dshq/dsh/sandbox"
)

// setupMounts builds the command's view of the filesystem in its own mount
// namespace: a fresh /proc for its PID namespace, a minimal /dev, a private
// /tmp (with the workspace and home kept visible when they live under the
// host's /tmp), an empty /run (no host sockets), masks over hidden paths,
// and read-only or pinned binds over protected ones. Write permission
// itself is Landlock's job; the mounts hide and protect.
func setupMounts(pl *Plan) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / private: %w", err)
	}
	// Descriptors of what must survive the overmounts, opened first.
	devs := map[string]int{}
	for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		fd, err := unix.Open("/dev/"+d, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err == nil {
			devs[d] = fd
		}
	}
	keeps := keepFDs(pl.Keep)
	cache, exe := -1, -1 // the private caches, and dsh for the Go cache program
	if pl.Cache != "" {
		var err error
		if cache, err = unix.Open(pl.Cache, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			return fmt.Errorf("caches %s: %w", pl.Cache, err)
		}
		defer unix.Close(cache)
		// By its path: the executable the process runs belongs to the
		// mount namespace it was started in, and binding from it here
		// would fail.
		path, err := os.Readlink("/proc/self/exe")
		if err != nil {
			return fmt.Errorf("the dsh executable: %w", err)
		}
		if exe, err = unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0); err != nil {
			return fmt.Errorf("the dsh executable: %w", err)
		}
		defer unix.Close(exe)
	}
	denied := -1 // the unreadable file bound over refused files
	if pl.Denied != "" {
		if fd, err := unix.Open(pl.Denied, unix.O_PATH|unix.O_CLOEXEC, 0); err == nil {
			denied = fd
			defer unix.Close(fd)
		}
	}

	if pl.PIDNS {
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mounting /proc: %w", err)
		}
	}
	if err := setupDev(devs); err != nil {
		return fmt.Errorf("/dev: %w", err)
	}
	if pl.Tmp != "" {
		if err := unix.Mount(pl.Tmp, "/tmp", "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("private /tmp: %w", err)
		}
		for _, k := range keeps {
			if err := os.MkdirAll(k.path, 0o755); err != nil {
				return fmt.Errorf("keeping %s: %w", k.path, err)
			}
			if err := unix.Mount(fdPath(k.fd), k.path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
				return fmt.Errorf("keeping %s: %w", k.path, err)
			}
			_ = unix.Close(k.fd)
		}
		if pl.TmpDir != "" && pl.TmpDir != "/tmp" {
			if err := os.MkdirAll(pl.TmpDir, 0o1777); err != nil {
				return fmt.Errorf("private temporary directory: %w", err)
			}
		}
	}
	for _, d := range []string{"/run", "/var/run"} {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
			if err := unix.Mount("tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
				return fmt.Errorf("empty %s: %w", d, err)
			}
		}
	}
	if cache >= 0 {
		if err := mountCaches(cache, exe); err != nil {
			return err
		}
	}
	for _, e := range pl.Policy.Pinned {
		if err := pin(e.Path); err != nil {
			return fmt.Errorf("pinning %s: %w", e.Path, err)
		}
	}
	// Protected paths: a missing .git/hooks is created so it can be
	// protected (git init makes it anyway); other missing ones are skipped.
	for _, e := range pl.Policy.Protected {
		if filepath.Base(e.Path) == "hooks" && filepath.Base(filepath.Dir(e.Path)) == ".git" {
			if fi, err := os.Stat(filepath.Dir(e.Path)); err == nil && fi.IsDir() {
				_ = os.Mkdir(e.Path, 0o755)
			}
		}
		if err := readOnly(e.Path); err != nil {
			return fmt.Errorf("protecting %s: %w", e.Path, err)
		}
	}
	for _, e := range pl.Policy.Hidden {
		if err := hide(e, denied); err != nil {
			return fmt.Errorf("hiding %s: %w", e.Path, err)
		}
	}
	return nil
}

// mountCaches binds the private caches at /run/dsh-cache and dsh at
// /run/dsh, in the empty /run made above.
func mountCaches(cache, exe int) error {
	if fi, err := os.Lstat("/run"); err != nil || !fi.IsDir() {
		return errors.New("caches: this system has no /run directory to mount them on")
	}
	if err := os.Mkdir(CacheMount, 0o755); err != nil {
		return fmt.Errorf("caches: %w", err)
	}
	if err := unix.Mount(fdPath(cache), CacheMount, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("caches: %w", err)
	}
	f, err := os.OpenFile(ExeMount, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		return fmt.Errorf("caches: %w", err)
	}
	_ = f.Close()
	if err := unix.Mount(fdPath(exe), ExeMount, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("caches: %w", err)
	}
	return remountReadOnly(ExeMount)
}

type keep struct {
	path string
	fd   int
}

// keepFDs opens the paths under /tmp that must stay visible, outermost
// first, skipping those inside another kept path.
func keepFDs(paths []string) []keep {
	sorted := slices.Clone(paths)
	sort.Strings(sorted)
	var out []keep
	for _, p := range sorted {
		if !strings.HasPrefix(p, "/tmp/") {
			continue
		}
		if slices.ContainsFunc(out, func(k keep) bool { return strings.HasPrefix(p+"/", k.path+"/") }) {
			continue
		}
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // missing: nothing to keep
		}
		out = append(out, keep{path: p, fd: fd})
	}
	return out
}

func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// setupDev mounts a minimal /dev: the harmless character devices bound
// from the host, a private devpts and /dev/shm, and the usual links. The
// host's disks and other devices are not there to be opened.
func setupDev(devs map[string]int) error {
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return err
	}
	for name, fd := range devs {
		p := "/dev/" + name
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			return err
		}
		_ = f.Close()
		if err := unix.Mount(fdPath(fd), p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		_ = unix.Close(fd)
	}
	if err := os.Mkdir("/dev/pts", 0o755); err != nil {
		return err
	}
	if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("devpts: %w", err)
	}
	if err := os.Mkdir("/dev/shm", 0o1777); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return fmt.Errorf("/dev/shm: %w", err)
	}
	for link, target := range map[string]string{
		"/dev/ptmx": "pts/ptmx", "/dev/fd": "/proc/self/fd", "/dev/stdin": "/proc/self/fd/0",
		"/dev/stdout": "/proc/self/fd/1", "/dev/stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(target, link); err != nil {
			return err
		}
	}
	return nil
}

// hide masks e.Path: an empty read-only tmpfs over a directory, /dev/null
// over a file — or, when e.Refuse, a tmpfs nobody may enter and a file
// nobody may read (mode 0: the command holds no capability that would
// override it, and the read-only mount stops a chmod), so reads fail with
// "Permission denied". A path that does not exist is left alone (creating
// it is a write, which Landlock decides); a symlink is followed, so the
// mask lands on what it names.
func hide(e sandbox.Entry, denied int) error {
	p := e.Path
	fi, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		mode := "mode=0555"
		if e.Refuse {
			mode = "mode=0000"
		}
		return unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, mode+",size=4k")
	}
	src := "/dev/null"
	if e.Refuse && denied >= 0 {
		src = fdPath(denied)
	}
	if err := unix.Mount(src, p, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	return remountReadOnly(p)
}

// readOnly binds p onto itself read-only (the bind also makes it a mount
// point, which cannot be renamed or removed).
func readOnly(p string) error {
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return nil
	} else if err != nil {
		return err
	}
	if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	return remountReadOnly(p)
}

// pin binds a directory onto itself, so it cannot be moved aside.
func pin(p string) error {
	fi, err := os.Stat(p)
	if err != nil || !fi.IsDir() {
		return nil
	}
	return unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, "")
}

// remountReadOnly makes the bind at p read-only, keeping the flags the
// mount already has (a user namespace may not clear locked ones).
func remountReadOnly(p string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for _, f := range []struct{ st, ms int64 }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if st.Flags&f.st != 0 {
			flags |= uintptr(f.ms)
		}
	}
	return unix.Mount("", p, "", flags, "")
}

// loopbackUp brings up lo in the new network namespace, so the command can
// reach its own servers (and the proxy bridge) on 127.0.0.1.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
