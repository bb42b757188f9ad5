// Package flock is the cross-process writer lock of a session: an advisory,
// non-blocking flock(2) on a small file that records the holder's pid.
//
// The lock file is removed on release while the lock is still held. An
// acquirer that raced with that removal holds a lock on an unlinked inode; it
// notices (the path no longer names its inode) and tries again, so two
// holders can never coexist.
package flock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dshq/dsh/internal/private"
)

// HeldError reports a lock held by someone else.
type HeldError struct {
	Path string
	PID  int // 0 when unknown
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("flock: %s is held by pid %d", e.Path, e.PID)
}

// Lock is a held lock.
type Lock struct {
	f    *os.File
	path string
}

// Acquire takes the lock at path without blocking, creating the file (and
// its directory, mode 0700) when needed.
func Acquire(path string) (*Lock, error) {
	if err := private.MkdirAll(filepath.Dir(path)); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		f, err := private.OpenFile(path, os.O_RDWR|os.O_CREATE)
		if err != nil {
			return nil, err
		}
		held, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("flock: %s: %w", path, err)
		}
		if !held {
			pid := readPID(f)
			f.Close()
			return nil, &HeldError{Path: path, PID: pid}
		}
		same, err := sameFile(f, path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			unlock(f)
			f.Close()
			return nil, err
		}
		if !same {
			// Released (and unlinked) between our open and our lock.
			unlock(f)
			f.Close()
			if attempt > 100 {
				return nil, fmt.Errorf("flock: %s: lock file keeps changing", path)
			}
			continue
		}
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		return &Lock{f: f, path: path}, nil
	}
}

// Release removes the lock file and drops the lock. It is idempotent.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := os.Remove(l.path)
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

func readPID(f *os.File) int {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		return 0
	}
	return pid
}

func sameFile(f *os.File, path string) (bool, error) {
	a, err := f.Stat()
	if err != nil {
		return false, err
	}
	b, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	return os.SameFile(a, b), nil
}
