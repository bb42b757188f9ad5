package session

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/dshq/dsh/kernel"
)

// Appended is the notification for one append.
type Appended struct {
	Session *Session
	Event   Event
}

// Live is the set of live (in-memory) sessions and the owner of their
// notification points. Persistence backends, UIs and the invariants checker
// listen here rather than on individual sessions.
type Live struct {
	mu       sync.Mutex
	sessions map[ID]*Session
	order    []ID
	counter  int
	clock    func() time.Time

	// Created fires when a session enters the set (after its seed is in
	// place); listeners seed their own view from Session.Events.
	Created *kernel.Signal[*Session]
	// Appended fires once per append, in seq order.
	Appended *kernel.Signal[Appended]
	// Flush is the durability checkpoint: backends write what they buffered.
	Flush *kernel.Parallel[*Session]
	// Redact is given to every session Prepare builds without its own
	// (see [Options.Redact]); set it before the first session.
	Redact Redactor
}

// NewLive returns an empty set. clock may be nil.
func NewLive(clock func() time.Time) *Live {
	if clock == nil {
		clock = time.Now
	}
	return &Live{
		sessions: map[ID]*Session{},
		clock:    clock,
		Created:  kernel.NewSignal[*Session]("session/created"),
		Appended: kernel.NewSignal[Appended]("session/event"),
		Flush:    kernel.NewParallel[*Session]("session/flush"),
	}
}

// Prepare validates and builds a session without entering it.
func (st *Live) Prepare(id ID, opts Options) (*Session, error) {
	st.mu.Lock()
	if id == "" {
		st.counter++
		id = ID(fmt.Sprintf("session-%d", st.counter))
	}
	_, dup := st.sessions[id]
	st.mu.Unlock()
	if dup {
		return nil, fmt.Errorf("session: session %q already exists", id)
	}
	if opts.Header.Cwd != "" && !filepath.IsAbs(opts.Header.Cwd) {
		return nil, fmt.Errorf("session: session cwd must be an absolute path, got %q", opts.Header.Cwd)
	}
	if opts.Clock == nil {
		opts.Clock = st.clock
	}
	if opts.Redact == nil {
		opts.Redact = st.Redact
	}
	opts.Header.ID = id
	return New(id, opts)
}

// Enter adds s to the set and wires its notifications; the returned
// function detaches it.
func (st *Live) Enter(s *Session) (detach func(), err error) {
	st.mu.Lock()
	if _, dup := st.sessions[s.ID()]; dup {
		st.mu.Unlock()
		return nil, fmt.Errorf("session: session %q already exists", s.ID())
	}
	st.sessions[s.ID()] = s
	st.order = append(st.order, s.ID())
	st.mu.Unlock()
	s.SetNotifier(func(ctx context.Context, s *Session, e Event) error {
		return st.Appended.Emit(ctx, Appended{Session: s, Event: e})
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			s.SetNotifier(nil)
			st.mu.Lock()
			if st.sessions[s.ID()] == s {
				delete(st.sessions, s.ID())
				for i, id := range st.order {
					if id == s.ID() {
						st.order = append(st.order[:i], st.order[i+1:]...)
						break
					}
				}
			}
			st.mu.Unlock()
		})
	}, nil
}

// Announce emits Created for s.
func (st *Live) Announce(ctx context.Context, s *Session) error { return st.Created.Emit(ctx, s) }

// Create prepares, enters and announces a session; a failing Created
// listener rolls the entry back. The session is detached when scope closes.
func (st *Live) Create(ctx context.Context, scope *kernel.Scope, id ID, opts Options) (*Session, error) {
	s, err := st.Prepare(id, opts)
	if err != nil {
		return nil, err
	}
	err = scope.Effect(func(record func(func() error)) error {
		detach, err := st.Enter(s)
		if err != nil {
			return err
		}
		record(func() error { detach(); return nil })
		return st.Announce(ctx, s)
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Get returns a live session.
func (st *Live) Get(id ID) (*Session, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, ok := st.sessions[id]
	return s, ok
}

// List returns live sessions in entry order.
func (st *Live) List() []*Session {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]*Session, 0, len(st.order))
	for _, id := range st.order {
		out = append(out, st.sessions[id])
	}
	return out
}

// FlushSession runs the durability checkpoint for s. A failure is a
// [*NotSavedError].
func (st *Live) FlushSession(ctx context.Context, s *Session) error {
	if err := st.Flush.Run(ctx, s); err != nil {
		return &NotSavedError{ID: s.ID(), Err: err}
	}
	return nil
}

// maxLineage bounds a walk up the parent chain (a corrupt header that
// names itself, or a cycle, must not loop).
const maxLineage = 16

// Lineage returns s and its live ancestors, nearest first: s, its parent
// (the session that started it as a subagent or fork), that one's parent,
// and so on up to the root. The walk stops at a parent that is not live
// here, and at a cycle. It is the one way front-ends and plugins map a
// subagent's session, at any depth, to the session it works for.
func (st *Live) Lineage(s *Session) []*Session {
	if s == nil {
		return nil
	}
	out := []*Session{s}
	seen := map[ID]bool{s.ID(): true}
	for parent := s.Header().ParentSession; parent != "" && !seen[parent] && len(out) < maxLineage; {
		p, ok := st.Get(parent)
		if !ok {
			break
		}
		seen[parent] = true
		out = append(out, p)
		parent = p.Header().ParentSession
	}
	return out
}

// Root returns the topmost live ancestor of s (s itself when it has none).
func (st *Live) Root(s *Session) *Session {
	l := st.Lineage(s)
	if len(l) == 0 {
		return nil
	}
	return l[len(l)-1]
}
