package local

import "sync"

// keyedMutex serializes mutations per file Key. Entries are reference
// counted and dropped when unused, so the map does not grow with every file
// ever written.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*refMutex
}

type refMutex struct {
	sync.Mutex
	refs int
}

// lock locks key and returns its unlock function.
func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*refMutex{}
	}
	e := k.m[key]
	if e == nil {
		e = &refMutex{}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()

	e.Lock()
	return func() {
		e.Unlock()
		k.mu.Lock()
		e.refs--
		if e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

// size reports how many keys are held or awaited (for tests).
func (k *keyedMutex) size() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.m)
}
