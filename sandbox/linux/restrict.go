//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/net/bpf"
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
func restrictLandlock(pl *plan) (int, error) {
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
		writable = append(writable, cacheMount)
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

// seccompPolicy denies the escape hatches: changing mounts, loading kernel
// code or modules, BPF, keyrings, io_uring (which bypasses seccomp for
// what it submits), performance counters, attaching to other processes,
// and new user namespaces (a namespace root regains every capability).
// Everything else is allowed: this is a deny list behind Landlock and the
// namespaces, not the only wall.
func seccompPolicy() seccomp.Policy {
	deny := []string{
		"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig",
		"fsmount", "fspick", "mount_setattr", "setns",
		"bpf", "perf_event_open", "userfaultfd",
		"keyctl", "add_key", "request_key",
		"io_uring_setup", "io_uring_enter", "io_uring_register",
		"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
		"reboot", "swapon", "swapoff", "acct", "syslog", "vhangup", "iopl", "ioperm",
		"open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "quotactl", "quotactl_fd", "nfsservctl",
		"process_vm_readv", "process_vm_writev", "pidfd_getfd",
		"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	}
	info, err := arch.GetInfo("")
	var names []string
	for _, n := range deny {
		if err == nil {
			if _, ok := info.SyscallNames[n]; !ok {
				continue
			}
		}
		names = append(names, n)
	}
	newUser := uint64(unix.CLONE_NEWUSER)
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno, Names: names},
			{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{
				// Attaching to a running process; a debugger starting its
				// own program (PTRACE_TRACEME) still works.
				{Name: "ptrace", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.PTRACE_ATTACH}}},
				{Name: "ptrace", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.PTRACE_SEIZE}}},
				{Name: "unshare", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: newUser}}},
				{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: newUser}}},
			}},
		},
	}
}

// loadSeccomp installs two filters on the calling thread (see
// restrictLandlock for why one thread): one refusing system
// calls of a foreign architecture (the 32-bit entry points of a 64-bit
// kernel would otherwise pass the deny list unchecked) and clone3 (its
// flags are behind a pointer no filter can read: refused with ENOSYS, C
// libraries fall back to clone, whose flags the second filter sees), and
// the deny list itself.
func loadSeccomp() error {
	info, err := arch.GetInfo("")
	if err != nil {
		return err
	}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
	}
	if nr, ok := info.SyscallNames["clone3"]; ok {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipFalse: 1},
			bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)})
	}
	prog = append(prog, bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW})
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return err
	}
	if err := loadRaw(raw); err != nil {
		return fmt.Errorf("architecture filter: %w", err)
	}
	return seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Policy: seccompPolicy()})
}

func loadRaw(raw []bpf.RawInstruction) error {
	filters := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filters[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
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
