//go:build linux

package helper

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/dshq/dsh/sandbox"
)

// landlockConfig is the strongest set of rights go-landlock knows (ABI 8's
// filesystem rights and scopes), downgraded to what the kernel offers. ABI
// 9's pathname-socket right is left out for now: the helper's own bridge
// reaches the proxy through such a socket. TCP rights are handled only
// when there is no network namespace: inside one, loopback is the
// command's own, and its test servers must be reachable.
func landlockConfig(tcp bool) landlock.Config {
	c := landlock.Config{HandledAccessFS: landlock.V8.HandledAccessFS, Scoped: landlock.V8.Scoped}
	if tcp {
		c.HandledAccessNet = landlock.V8.HandledAccessNet
	}
	return c.BestEffort()
}

// restrictLandlock confines the calling thread — the helper's main thread,
// locked, which starts the shell and sends every signal, so the shell and
// the signals share one Landlock domain (restricting each thread apart
// would give each its own domain, and signal scoping would then stop the
// helper's kills) — and so everything it starts: read
// and execute everywhere (what must not be read is masked by the mounts),
// write only in the writable roots, the private /tmp and a few devices.
func restrictLandlock(pl *Plan) (int, error) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return 0, errors.New("the kernel offers no Landlock")
	}
	var writable []string
	if pl.Policy.Mode == sandbox.ModeWorkspaceWrite {
		for _, e := range pl.Policy.Writable {
			if _, err := os.Stat(e.Path); err == nil {
				writable = append(writable, e.Path)
			}
		}
	}
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWDirs("/dev/shm").WithRefer().IgnoreIfMissing(),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty").WithIoctlDev().IgnoreIfMissing(),
		landlock.RWDirs("/dev/pts").WithIoctlDev().IgnoreIfMissing(),
	}
	if pl.TmpDir != "" {
		writable = append(writable, pl.TmpDir)
	}
	if pl.Cache != "" && pl.MountNS {
		writable = append(writable, CacheMount)
	}
	var dirs, files []string
	for _, p := range writable {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			files = append(files, p)
		} else {
			dirs = append(dirs, p)
		}
	}
	if len(dirs) > 0 {
		rules = append(rules, landlock.RWDirs(dirs...).WithRefer())
	}
	if len(files) > 0 {
		rules = append(rules, landlock.RWFiles(files...))
	}
	tcp := !pl.NetNS
	if tcp && pl.ProxyTCP > 0 {
		rules = append(rules, landlock.ConnectTCP(uint16(pl.ProxyTCP)))
	}
	fd, flags, err := landlockConfig(tcp).NewRulesetFD(rules...)
	if err != nil {
		return 0, err
	}
	if fd < 0 {
		return 0, errors.New("nothing to enforce")
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return 0, err
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return 0, err
	}
	return abi, nil
}

// loadSeccomp installs the plan's filters on the calling thread (see
// restrictLandlock for why one thread), in order. dsh compiles them (see
// package linux's seccomp.go): the helper links no filter compiler and no
// system call tables, whose initialisation alone cost every sandboxed
// command most of a millisecond.
func loadSeccomp(filters [][]unix.SockFilter) error {
	if len(filters) == 0 {
		return errors.New("the plan has no filters")
	}
	for i, f := range filters {
		if err := loadRaw(f); err != nil {
			return fmt.Errorf("filter %d of %d: %w", i+1, len(filters), err)
		}
	}
	return nil
}

func loadRaw(filters []unix.SockFilter) error {
	if len(filters) == 0 || len(filters) > 4096 {
		return fmt.Errorf("a filter of %d instructions", len(filters))
	}
	fprog := unix.SockFprog{Len: uint16(len(filters)), Filter: &filters[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(filters)
	if errno != 0 {
		return errno
	}
	return nil
}

// dropCapabilities empties every capability set of the calling thread: the
// bounding set (so executing a program as root in the namespace grants
// nothing back), the ambient, inheritable, permitted and effective sets.
func dropCapabilities() error {
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if _, _, e := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0); e != 0 && e != unix.EINVAL {
			return fmt.Errorf("bounding set: %w", e)
		}
	}
	if _, _, e := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0); e != 0 && e != unix.EINVAL {
		return fmt.Errorf("ambient set: %w", e)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if _, _, e := unix.RawSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("capset: %w", e)
	}
	runtime.KeepAlive(&hdr)
	runtime.KeepAlive(&data)
	return nil
}
