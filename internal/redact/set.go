package redact

import (
	"sync"
	"sync/atomic"
)

// Set is a growing set of known secret values, safe for concurrent use:
// the process's environment at start, then whatever the plugins learn to
// be secret as they read settings (a configured database URL, an MCP
// server's credentials). Every session of a host scrubs through one Set,
// so a value added later is scrubbed from every append after that.
type Set struct {
	mu     sync.Mutex
	values []string
	cur    atomic.Pointer[Scrubber]
}

// NewSet returns a set holding values (those under MinValue are ignored).
func NewSet(values ...string) *Set {
	s := &Set{}
	s.Add(values...)
	return s
}

// Add makes values known secrets from now on.
func (s *Set) Add(values ...string) {
	if s == nil || len(values) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values = append(s.values, values...)
	s.cur.Store(New(s.values...))
}

// Scrubber is the set's current scrubber (never nil for a non-nil set).
func (s *Set) Scrubber() *Scrubber {
	if s == nil {
		return nil
	}
	if sc := s.cur.Load(); sc != nil {
		return sc
	}
	return New()
}

// JSON scrubs a JSON text of the known values (see [Scrubber.JSON]); it
// is the session log's redactor.
func (s *Set) JSON(data []byte) ([]byte, bool) {
	if s == nil {
		return data, false
	}
	return s.cur.Load().JSON(data)
}

// String scrubs text of the known values and the credential shapes.
func (s *Set) String(in string) string { return s.Scrubber().String(in) }
