package main

import "golang.org/x/sys/unix"

// harden makes dsh's process non-dumpable, so that the commands it runs —
// as the same user — cannot read its secrets back out of /proc.
//
// The bash tool gives every command an environment scrubbed of credentials,
// but without this one command undoes it: `cat /proc/$PPID/environ` prints
// dsh's own initial environment, API keys included, and /proc/$PPID/mem
// (or ptrace) exposes everything dsh holds in memory. A non-dumpable
// process's /proc files belong to root and are refused to other processes
// of the same user. dsh itself still resolves /proc/self/exe, lists
// /proc/self/fd and reads its stat and status, but its own environ becomes
// unreadable too (nothing in dsh reads it; os.Getenv does not). Children
// are unaffected: execve makes them dumpable again.
//
// What it costs: no core dumps of dsh (GOTRACEBACK=crash still prints the
// traceback), and attaching a debugger or tracer (dlv attach, gdb -p,
// strace -p) or inspecting /proc/<dsh>/fd (lsof) needs root. It does not
// protect the environments of dsh's ancestors (the shell or terminal
// multiplexer that started it), which are theirs to guard.
func harden() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
