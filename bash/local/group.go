package local

import (
	"errors"
	"syscall"
)

// A command's processes are the members of its session: the shell is
// started with Setsid, so its pid is the session id, and everything it
// starts stays in that session unless it calls setsid(2) itself. A member
// may well leave the shell's process group — GNU timeout (without
// --foreground) and job control (`set -m`) move processes into groups of
// their own — so kills and liveness checks look at the whole session, not at
// the leader's group. Linux finds the session's members in /proc
// (group_linux.go); elsewhere only the leader's group is reachable.

// signalSession sends sig to every process group of session sid. Errors are
// ignored on purpose: ESRCH means the group is already gone, EPERM means a
// member changed credentials (a setuid program) and cannot be signalled by
// us; neither is something the caller could act on. Signalling whole groups
// rather than single pids also catches a member forked between the scan and
// the kill. A process group never spans sessions, so no group outside the
// command is hit.
func signalSession(sid int, sig syscall.Signal) {
	if sid <= 0 { // never signal our own group or every process
		return
	}
	_ = syscall.Kill(-sid, sig) // the leader's group, reachable without /proc
	if pgids, ok := sessionGroups(sid); ok {
		signalGroups(pgids, sid, sig)
	}
}

// signalGroups signals each group in pgids but skip (already signalled).
func signalGroups(pgids []int, skip int, sig syscall.Signal) {
	for _, g := range pgids {
		if g > 1 && g != skip {
			_ = syscall.Kill(-g, sig)
		}
	}
}

// sessionAlive reports whether session sid still has a live (non-zombie)
// member. Zombies do not count: a killed orphan stays a member until its new
// parent reaps it, and in containers whose PID 1 never reaps that is
// forever. Without /proc it falls back to kill(-sid, 0) on the leader's
// group, which counts zombies and misses members of other groups.
func sessionAlive(sid int) bool {
	if sid <= 0 {
		return false
	}
	if pgids, ok := sessionGroups(sid); ok {
		return len(pgids) > 0
	}
	return !errors.Is(syscall.Kill(-sid, 0), syscall.ESRCH)
}
