package redact

import (
	"slices"
	"strings"
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

// Add makes values known secrets from now on. Values already known (or
// too short to replace) change nothing: an MCP server's credentials are
// added again by every session that adds the server, and the set must not
// grow, nor its scrubber be rebuilt, with the sessions of a long-running
// server.
func (s *Set) Add(values ...string) {
	if s == nil || len(values) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.values)
	for _, v := range values {
		if v = strings.TrimSpace(v); len(v) >= MinValue && !slices.Contains(s.values, v) {
			s.values = append(s.values, v)
		}
	}
	if len(s.values) > n || s.cur.Load() == nil {
		s.cur.Store(New(s.values...))
	}
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
