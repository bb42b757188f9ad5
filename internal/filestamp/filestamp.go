// Package filestamp remembers what files and directories looked like, so a
// capability that read them (memory, commands, skills) can tell with a
// stat each whether anything changed since — cheaper than reading them
// again at every step.
package filestamp

import (
	"os"
	"sync"
)

// Stamp is one path's metadata when it was seen (nil info: it did not
// exist).
type Stamp struct {
	Path string
	info os.FileInfo
}

// Of stats path now.
func Of(path string) Stamp {
	fi, err := os.Stat(path)
	if err != nil {
		fi = nil
	}
	return Stamp{Path: path, info: fi}
}

// Exists reports whether the path existed when stamped.
func (s Stamp) Exists() bool { return s.info != nil }

// Info is the path's metadata when stamped (nil: it did not exist).
func (s Stamp) Info() os.FileInfo { return s.info }

// Current reports whether the path still looks the same: the same file
// (device and inode), size and modification time, or still missing.
func (s Stamp) Current() bool {
	fi, err := os.Stat(s.Path)
	if err != nil {
		return s.info == nil
	}
	return s.info != nil && os.SameFile(fi, s.info) && fi.Size() == s.info.Size() && fi.ModTime().Equal(s.info.ModTime())
}

// Set is the stamps of what one result was built from.
type Set []Stamp

// Current reports whether every path still looks the same.
func (ss Set) Current() bool {
	for _, s := range ss {
		if !s.Current() {
			return false
		}
	}
	return true
}

// Cache keeps one loaded value per key (a working directory), with the
// stamps of the files it was read from and the trust decision it was read
// under: Get loads again when either changed. Commands and skills share it
// so their "re-read only what moved" rule is one rule.
type Cache[T any] struct {
	mu sync.Mutex
	m  map[string]cached[T]
}

type cached[T any] struct {
	value   T
	trusted bool
	stamps  Set
}

// Get returns key's value, calling load (outside the lock) when there is
// none yet, trust changed, or a stamp is no longer current.
func (c *Cache[T]) Get(key string, trusted bool, load func() (T, Set)) T {
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && e.trusted == trusted && e.stamps.Current() {
		return e.value
	}
	v, stamps := load()
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]cached[T]{}
	}
	c.m[key] = cached[T]{value: v, trusted: trusted, stamps: stamps}
	c.mu.Unlock()
	return v
}
