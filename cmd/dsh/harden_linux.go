package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// harden keeps the commands dsh runs — as the same user, or as root —
// from reading dsh's secrets back out of /proc.
//
// The bash tool gives every command an environment scrubbed of
// credentials, but /proc/$PPID/environ shows dsh's own initial
// environment, API keys included. That file is not the environment Go
// works with: it is the block of memory the kernel filled at execve
// (between mm->env_start and env_end), which os.Unsetenv never touches.
// Go copies that block at start-up (os.Getenv and os.Environ read the
// copy), so harden first overwrites the block itself with zeros:
// /proc/<dsh>/environ then holds nothing, for every reader, root included.
// Then it makes the process non-dumpable: its /proc files belong to root
// and are refused to other processes of the same user, which also keeps
// /proc/$PPID/mem and ptrace, and so everything dsh holds in memory, away
// from an unprivileged command. Children are unaffected: execve makes
// them dumpable again, with the environment dsh gives them.
//
// What it costs: no core dumps of dsh (GOTRACEBACK=crash still prints the
// traceback); attaching a debugger or tracer (dlv attach, gdb -p, strace
// -p) or inspecting /proc/<dsh>/fd (lsof) needs root; ps e and
// /proc/<dsh>/environ show no environment for dsh. What it does not
// cover: a command running as root reads any process's memory, dsh's
// heap (where the key lives while dsh uses it) included: only a sandbox
// that runs commands as another user, or in their own PID namespace,
// keeps that out of reach. Nor does it protect the environments of dsh's
// ancestors (the shell or terminal multiplexer that started it), which
// are theirs to guard.
func harden() error {
	errScrub := scrubEnviron()
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return errors.Join(errScrub, err)
	}
	return errScrub
}

// scrubEnviron zeroes the process's initial environment block, whose
// bounds /proc/self/stat gives (fields 50 and 51, env_start and env_end,
// since Linux 3.5), through /proc/self/mem (the block sits on the initial
// stack, which the process may write). It must run while the process is
// still dumpable: afterwards /proc/self/mem belongs to root.
func scrubEnviron() error {
	start, end, err := environBounds()
	if err != nil {
		return fmt.Errorf("scrub environment: %w", err)
	}
	if end <= start || end-start > 1<<24 {
		return fmt.Errorf("scrub environment: implausible bounds %#x-%#x", start, end)
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("scrub environment: %w", err)
	}
	defer mem.Close()
	if _, err := mem.WriteAt(make([]byte, end-start), int64(start)); err != nil {
		return fmt.Errorf("scrub environment: %w", err)
	}
	return nil
}

// environBounds reads env_start and env_end from /proc/self/stat.
func environBounds() (start, end uint64, err error) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields that follow start after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, errors.New("malformed /proc/self/stat")
	}
	fields := bytes.Fields(stat[i+1:]) // fields[0] is field 3
	const envStart, envEnd = 50, 51
	if len(fields) <= envEnd-3 {
		return 0, 0, errors.New("/proc/self/stat has no env_start and env_end (Linux before 3.5)")
	}
	if start, err = strconv.ParseUint(string(fields[envStart-3]), 10, 64); err != nil {
		return 0, 0, err
	}
	if end, err = strconv.ParseUint(string(fields[envEnd-3]), 10, 64); err != nil {
		return 0, 0, err
	}
	return start, end, nil
}
