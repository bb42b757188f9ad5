package kernel

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// ErrStop ends a [Serial] run early without reporting an error.
var ErrStop = errors.New("kernel: stop")

// PanicError is a recovered listener panic, turned into an error so the point
// that dispatched it can contain it like any other failure.
type PanicError struct {
	Point string // name of the point, or "" when unnamed
	Name  string // name of the listener, when it was given one
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	where := e.Point
	if e.Name != "" {
		where += " listener " + e.Name
	}
	if where == "" {
		where = "listener"
	}
	return fmt.Sprintf("kernel: panic in %s: %v", where, e.Value)
}

// Unwrap exposes a panicked error value to errors.Is / errors.As.
func (e *PanicError) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}

// Option configures a registration.
type Option func(*regOptions)

type regOptions struct {
	prepend bool
	name    string
}

// Prepend registers the listener before every listener already registered,
// so it runs first (outermost, for a [Chain]).
func Prepend() Option { return func(o *regOptions) { o.prepend = true } }

// Named gives the listener a name used in diagnostics and panic reports.
func Named(name string) Option { return func(o *regOptions) { o.name = name } }

// entry is one registered listener; its identity (pointer) is what a disposer
// removes, so the same function may be registered twice.
type entry[F any] struct {
	fn   F
	name string
}

// list is a copy-on-write listener list shared by all point kinds.
type list[F any] struct {
	mu   sync.Mutex
	cur  atomic.Pointer[[]*entry[F]]
	name string
}

func (l *list[F]) snapshot() []*entry[F] {
	if p := l.cur.Load(); p != nil {
		return *p
	}
	return nil
}

func (l *list[F]) add(fn F, opts []Option) func() {
	var o regOptions
	for _, opt := range opts {
		opt(&o)
	}
	e := &entry[F]{fn: fn, name: o.name}
	l.mu.Lock()
	old := l.snapshot()
	next := make([]*entry[F], 0, len(old)+1)
	if o.prepend {
		next = append(next, e)
		next = append(next, old...)
	} else {
		next = append(next, old...)
		next = append(next, e)
	}
	l.cur.Store(&next)
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			old := l.snapshot()
			next := make([]*entry[F], 0, len(old))
			for _, x := range old {
				if x != e {
					next = append(next, x)
				}
			}
			l.cur.Store(&next)
		})
	}
}

// Len reports how many listeners are registered.
func (l *list[F]) Len() int { return len(l.snapshot()) }

func (l *list[F]) recoverInto(err *error, name string) {
	if r := recover(); r != nil {
		*err = &PanicError{Point: l.name, Name: name, Value: r, Stack: debug.Stack()}
	}
}

// Next is the downstream part of a [Chain] (an alias, so listeners can be
// written as plain func literals): the remaining listeners and, at
// the end, the core behaviour.
type Next[In, Out any] = func(ctx context.Context, in In) (Out, error)

// Around is a [Chain] listener.
type Around[In, Out any] func(ctx context.Context, in In, next Next[In, Out]) (Out, error)

// Chain is an around-middleware interception point (the reference's
// "waterfall"). Unlike the reference, a listener may hand a different input or
// context to next; points whose input must stay fixed pass values that cannot
// be changed (see the tool pipeline's sealed arguments).
type Chain[In, Out any] struct{ l list[Around[In, Out]] }

// NewChain returns a named chain; the zero Chain is ready to use too.
func NewChain[In, Out any](name string) *Chain[In, Out] {
	c := &Chain[In, Out]{}
	c.l.name = name
	return c
}

// Use registers a listener and returns its disposer.
func (c *Chain[In, Out]) Use(fn Around[In, Out], opts ...Option) (dispose func()) {
	return c.l.add(fn, opts)
}

// Len reports how many listeners are registered.
func (c *Chain[In, Out]) Len() int { return c.l.Len() }

// Run dispatches in through the listeners (first registered is outermost) and
// finally core. A panic anywhere in the chain, core included, is returned as a
// *PanicError. Each listener's next is bound to its own position, so calling
// next twice re-runs the same downstream chain (retries are legal).
func (c *Chain[In, Out]) Run(ctx context.Context, in In, core Next[In, Out]) (Out, error) {
	ls := c.l.snapshot()
	if len(ls) == 0 {
		return c.call(ctx, in, core, "")
	}
	var at func(i int) Next[In, Out]
	at = func(i int) Next[In, Out] {
		if i == len(ls) {
			return func(ctx context.Context, in In) (Out, error) { return c.call(ctx, in, core, "") }
		}
		e := ls[i]
		return func(ctx context.Context, in In) (out Out, err error) {
			defer c.l.recoverInto(&err, e.name)
			return e.fn(ctx, in, at(i+1))
		}
	}
	return at(0)(ctx, in)
}

func (c *Chain[In, Out]) call(ctx context.Context, in In, core Next[In, Out], name string) (out Out, err error) {
	if core == nil {
		return out, nil
	}
	defer c.l.recoverInto(&err, name)
	return core(ctx, in)
}

// Listener is a [Serial], [Parallel] or [Signal] listener.
type Listener[T any] func(ctx context.Context, v T) error

// Serial runs listeners one by one in order; the first error stops the run
// and is returned, except [ErrStop], which stops it silently.
type Serial[T any] struct{ l list[Listener[T]] }

// NewSerial returns a named serial point.
func NewSerial[T any](name string) *Serial[T] { s := &Serial[T]{}; s.l.name = name; return s }

// Use registers a listener and returns its disposer.
func (s *Serial[T]) Use(fn Listener[T], opts ...Option) func() { return s.l.add(fn, opts) }

// Len reports how many listeners are registered.
func (s *Serial[T]) Len() int { return s.l.Len() }

// Run dispatches v.
func (s *Serial[T]) Run(ctx context.Context, v T) error {
	for _, e := range s.l.snapshot() {
		if err := callListener(&s.l, e, ctx, v); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	return nil
}

func callListener[T any](l *list[Listener[T]], e *entry[Listener[T]], ctx context.Context, v T) (err error) {
	defer l.recoverInto(&err, e.name)
	return e.fn(ctx, v)
}

// Parallel runs every listener concurrently and waits for all of them; the
// returned error joins every listener's error.
type Parallel[T any] struct{ l list[Listener[T]] }

// NewParallel returns a named parallel point.
func NewParallel[T any](name string) *Parallel[T] { p := &Parallel[T]{}; p.l.name = name; return p }

// Use registers a listener and returns its disposer.
func (p *Parallel[T]) Use(fn Listener[T], opts ...Option) func() { return p.l.add(fn, opts) }

// Len reports how many listeners are registered.
func (p *Parallel[T]) Len() int { return p.l.Len() }

// Run dispatches v to all listeners at once.
func (p *Parallel[T]) Run(ctx context.Context, v T) error {
	ls := p.l.snapshot()
	switch len(ls) {
	case 0:
		return nil
	case 1:
		return callListener(&p.l, ls[0], ctx, v)
	}
	errs := make([]error, len(ls))
	var wg sync.WaitGroup
	for i, e := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = callListener(&p.l, e, ctx, v)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Signal is a notification point: listeners learn of a fact that already
// happened. Emit runs them in order on the caller's goroutine; the first error
// stops the emission and is returned, so the emitter (not the bus) decides
// whether a failing observer matters.
type Signal[T any] struct{ l list[Listener[T]] }

// NewSignal returns a named signal.
func NewSignal[T any](name string) *Signal[T] { s := &Signal[T]{}; s.l.name = name; return s }

// Listen registers a listener and returns its disposer.
func (s *Signal[T]) Listen(fn Listener[T], opts ...Option) func() { return s.l.add(fn, opts) }

// Len reports how many listeners are registered.
func (s *Signal[T]) Len() int { return s.l.Len() }

// Emit notifies listeners of v.
func (s *Signal[T]) Emit(ctx context.Context, v T) error {
	for _, e := range s.l.snapshot() {
		if err := callListener(&s.l, e, ctx, v); err != nil {
			return err
		}
	}
	return nil
}

// EmitAll notifies every listener even when some fail, and joins the errors.
// Used where one broken observer must not starve the others (status, errors).
func (s *Signal[T]) EmitAll(ctx context.Context, v T) error {
	var errs []error
	for _, e := range s.l.snapshot() {
		if err := callListener(&s.l, e, ctx, v); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Point is implemented by every interception point, so tools (the generated
// catalog, diagnostics) can list them.
type Point interface {
	PointName() string
	PointMode() string
	Len() int
}

// PointName returns the chain's name.
func (c *Chain[In, Out]) PointName() string { return c.l.name }

// PointMode returns "chain".
func (c *Chain[In, Out]) PointMode() string { return "chain" }

// PointName returns the point's name.
func (s *Serial[T]) PointName() string { return s.l.name }

// PointMode returns "serial".
func (s *Serial[T]) PointMode() string { return "serial" }

// PointName returns the point's name.
func (p *Parallel[T]) PointName() string { return p.l.name }

// PointMode returns "parallel".
func (p *Parallel[T]) PointMode() string { return "parallel" }

// PointName returns the signal's name.
func (s *Signal[T]) PointName() string { return s.l.name }

// PointMode returns "signal".
func (s *Signal[T]) PointMode() string { return "signal" }
