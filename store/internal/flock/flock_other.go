//go:build !unix

package flock

import (
	"os"
	"sync"
)

// Without flock(2) the lock only excludes holders in this process.
var (
	mu   sync.Mutex
	held = map[string]bool{}
)

func tryLock(f *os.File) (bool, error) {
	mu.Lock()
	defer mu.Unlock()
	if held[f.Name()] {
		return false, nil
	}
	held[f.Name()] = true
	return true, nil
}

func unlock(f *os.File) {
	mu.Lock()
	delete(held, f.Name())
	mu.Unlock()
}
