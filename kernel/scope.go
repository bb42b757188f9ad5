package kernel

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
)

// ErrScopeClosed is returned when registering into a closed scope.
var ErrScopeClosed = errors.New("kernel: scope is closed")

// Scope owns disposers. Closing it runs them in reverse registration order
// (child scopes included, at the position they were created), each to
// completion before the next, and joins their errors. A plugin receives a
// scope; everything it registers through the scope is undone when the scope
// closes, so unloading a plugin never leaks a listener.
type Scope struct {
	mu     sync.Mutex
	items  []func() error
	closed bool
	parent *Scope
	name   string
}

// NewScope returns an empty root scope.
func NewScope(name string) *Scope { return &Scope{name: name} }

// Name returns the scope's diagnostic name.
func (s *Scope) Name() string { return s.name }

// Defer records a disposer. If the scope is already closed the disposer runs
// at once and ErrScopeClosed is returned, so late registrations never leak.
func (s *Scope) Defer(dispose func() error) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = safeDispose(dispose)
		return ErrScopeClosed
	}
	s.items = append(s.items, dispose)
	s.mu.Unlock()
	return nil
}

// Add records a disposer that cannot fail, such as the one a point's Use
// returns.
func (s *Scope) Add(dispose func()) error {
	return s.Defer(func() error { dispose(); return nil })
}

// Child returns a scope closed together with s (at its position in s's
// reverse order) or earlier on its own.
func (s *Scope) Child(name string) *Scope {
	c := &Scope{parent: s, name: name}
	if err := s.Defer(c.Close); err != nil {
		c.closed = true
	}
	return c
}

// Closed reports whether Close has started.
func (s *Scope) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close runs every disposer in reverse order. It is idempotent: later calls
// return nil at once.
func (s *Scope) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	items := s.items
	s.items = nil
	s.mu.Unlock()
	var errs []error
	for i := len(items) - 1; i >= 0; i-- {
		if err := safeDispose(items[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("kernel: closing scope %q: %w", s.name, errors.Join(errs...))
	}
	return nil
}

// Effect runs fn with a recorder for disposers. If fn fails, the disposers it
// recorded so far run in reverse order (rollback) and fn's error is returned;
// otherwise they move into s as one entry that runs them in reverse order.
// This is the "mutate, record rollback, then notify" pattern: a failing
// notification undoes the mutation.
func (s *Scope) Effect(fn func(record func(dispose func() error)) error) (err error) {
	var recorded []func() error
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Point: "effect", Value: r, Stack: debug.Stack()}
		}
		if err != nil {
			_ = undo(recorded)
			return
		}
		if len(recorded) > 0 {
			// One entry, not one per disposer: an effect's disposers are a
			// single LIFO chain even when the scope closed meanwhile and
			// Defer runs them at once.
			err = s.Defer(func() error { return undo(recorded) })
		}
	}()
	return fn(func(d func() error) { recorded = append(recorded, d) })
}

// undo runs ds in reverse order and joins their errors.
func undo(ds []func() error) error {
	var errs []error
	for i := len(ds) - 1; i >= 0; i-- {
		if err := safeDispose(ds[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func safeDispose(d func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Point: "dispose", Value: r, Stack: debug.Stack()}
		}
	}()
	return d()
}
