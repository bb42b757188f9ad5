// Package local is the [bash.Executor] that runs commands as processes on
// this machine.
//
// Each command runs as `bash -c` (or /bin/sh) in a new session, so it has no
// controlling terminal, and its processes are the members of that session.
// Every kill — timeout, context cancellation, Kill, KillOwner, Close —
// targets the whole session, SIGTERM first and SIGKILL after a grace period,
// including processes that moved to a process group of their own (GNU
// timeout, `set -m` job control): on Linux the session's members are found
// in /proc and each of their groups is signalled; elsewhere only the
// shell's own group is reachable. When the shell exits, anything it left
// running in its session (`sleep 100 &`) is killed too, and completion
// waits until the session is empty and the output pipes are drained: a
// finished command leaves no process and no zombie behind, and Close leaves
// nothing running after dsh. Only a process that starts a session of its
// own — setsid(1), daemonizing programs — escapes these kills; containing
// those needs cgroups or a sandboxed executor. On Linux the shell also gets
// a parent-death SIGKILL, a backstop for when dsh dies without running
// Close; it reaches the shell (or what it execs) but not the shell's
// children.
//
// Output is bounded in memory per stream (the tail is kept in a ring buffer)
// and spilled in full to a private file once it outgrows that, so a command
// printing 100 MB costs the same memory as one printing 100 KB and loses
// nothing. The child's environment is the parent's minus anything that
// looks like a credential, with colour and pagers turned off.
package local
