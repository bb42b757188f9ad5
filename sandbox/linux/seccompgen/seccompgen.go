//go:build linux

// Package seccompgen compiles the sandbox's seccomp filters with
// go-seccomp-bpf. The filters depend only on the architecture, so on
// amd64 sandbox/linux carries them compiled (seccomp_table_amd64.go,
// written by this package through its test) and links neither this
// package nor go-seccomp-bpf, whose system call tables (a 165 KB map
// built at package initialisation) would otherwise be set up by every dsh
// start (issue 25). Other architectures compile them here at run time.
package seccompgen

import (
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

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

// Filters compiles the two filters the helper loads on its locked
// thread, in this order: one refusing system calls of a foreign
// architecture (the 32-bit entry points of a 64-bit kernel would otherwise
// pass the deny list unchecked) and clone3 (its flags are behind a
// pointer no filter can read: refused with ENOSYS, C libraries fall back
// to clone, whose flags the second filter sees), and the deny list
// itself. dsh sends them to the helper in the plan: the
// helper then links neither go-seccomp-bpf nor its system call tables.
func Filters() ([][]unix.SockFilter, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
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
	archFilter, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("seccompgen: architecture filter: %w", err)
	}
	policy := seccompPolicy()
	deny, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccompgen: deny list: %w", err)
	}
	denyFilter, err := bpf.Assemble(deny)
	if err != nil {
		return nil, fmt.Errorf("seccompgen: deny list: %w", err)
	}
	return [][]unix.SockFilter{sockFilters(archFilter), sockFilters(denyFilter)}, nil
}

func sockFilters(raw []bpf.RawInstruction) []unix.SockFilter {
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out
}
