package local

import (
	"errors"
	"syscall"
)

// signalGroup sends sig to every process in the group pgid. Errors are
// ignored on purpose: ESRCH means the group is already gone, EPERM means a
// member changed credentials (a setuid program) and cannot be signalled by
// us; neither is something the caller could act on.
func signalGroup(pgid int, sig syscall.Signal) {
	if pgid <= 0 { // never signal our own group or every process
		return
	}
	_ = syscall.Kill(-pgid, sig)
}

// groupAlive reports whether the process group pgid still has a live
// (non-zombie) member. kill(-pgid, 0) alone is not enough: a killed orphan
// stays in the group as a zombie until its new parent reaps it, and in
// containers whose PID 1 never reaps that is forever.
func groupAlive(pgid int) bool {
	if pgid <= 0 {
		return false
	}
	err := syscall.Kill(-pgid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return false
	}
	if live, ok := liveMembers(pgid); ok {
		return live
	}
	return true
}
