package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/dshq/dsh/session"
)

// CreateOptions describe a new agent.
type CreateOptions struct {
	AgentID   ID
	SessionID session.ID // empty: a fresh unique id
	Header    session.Header
	// Seed is a completed log prefix (fork): contiguous from 0 and balanced.
	Seed    []session.Event
	Options Options
}

// ResumeOptions describe an agent resuming a stored session.
type ResumeOptions struct {
	AgentID   ID
	SessionID session.ID
	Options   Options
}

// Factory creates agents; the loop package provides the one dsh ships.
type Factory interface {
	Create(ctx context.Context, opts CreateOptions) (*Handle, error)
	Resume(ctx context.Context, opts ResumeOptions) (*Handle, error)
}

// Loader reads stored sessions back (the persistence coordinator).
type Loader interface {
	Load(ctx context.Context, id session.ID) (session.Header, []session.Event, error)
}

// Resumer is a [Loader] that resumes from a snapshot of the derived state
// plus the events after it, falling back to a replay of the whole log (the
// persistence coordinator, [store.Coordinator.Resume]): it loads, and
// calls build with the options of the session to resume, which the
// factory makes. A factory uses it when the installed loader has it.
type Resumer interface {
	Resume(ctx context.Context, id session.ID, build func(session.Options) (*session.Session, error)) (*session.Session, error)
}

// Registry tracks live agents and delegates creation to a factory.
type Registry struct {
	Hub *Hub

	mu      sync.Mutex
	agents  map[ID]Agent
	order   []ID
	factory Factory
	loader  Loader
}

// NewRegistry returns an empty registry with a fresh hub.
func NewRegistry() *Registry { return &Registry{Hub: NewHub(), agents: map[ID]Agent{}} }

// SetFactory installs the factory (one slot).
func (r *Registry) SetFactory(f Factory) (dispose func(), err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.factory != nil {
		return nil, fmt.Errorf("agent: an agent factory is already registered")
	}
	r.factory = f
	return func() {
		r.mu.Lock()
		if r.factory == f {
			r.factory = nil
		}
		r.mu.Unlock()
	}, nil
}

// SetLoader installs the session loader used by Resume.
func (r *Registry) SetLoader(l Loader) (dispose func()) {
	r.mu.Lock()
	r.loader = l
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		if r.loader == l {
			r.loader = nil
		}
		r.mu.Unlock()
	}
}

// Loader returns the installed loader, or nil.
func (r *Registry) Loader() Loader {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.loader
}

func (r *Registry) getFactory() (Factory, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.factory == nil {
		return nil, fmt.Errorf("agent: no agent factory registered (load the loop plugin)")
	}
	return r.factory, nil
}

// Create starts a new agent.
func (r *Registry) Create(ctx context.Context, opts CreateOptions) (*Handle, error) {
	f, err := r.getFactory()
	if err != nil {
		return nil, err
	}
	return f.Create(ctx, opts)
}

// Resume starts an agent on a stored session.
func (r *Registry) Resume(ctx context.Context, opts ResumeOptions) (*Handle, error) {
	f, err := r.getFactory()
	if err != nil {
		return nil, err
	}
	return f.Resume(ctx, opts)
}

// Register tracks a live agent and emits Created; a failing listener rolls
// the registration back.
func (r *Registry) Register(ctx context.Context, a Agent) (unregister func(), err error) {
	r.mu.Lock()
	if _, dup := r.agents[a.ID()]; dup {
		r.mu.Unlock()
		return nil, fmt.Errorf("agent: agent %q is already registered", a.ID())
	}
	r.agents[a.ID()] = a
	r.order = append(r.order, a.ID())
	r.mu.Unlock()
	remove := func() {
		r.mu.Lock()
		if r.agents[a.ID()] == a {
			delete(r.agents, a.ID())
			r.order = slices.DeleteFunc(r.order, func(x ID) bool { return x == a.ID() })
		}
		r.mu.Unlock()
	}
	if err := r.Hub.Created.Emit(ctx, a); err != nil {
		remove()
		return nil, fmt.Errorf("agent: registering %q: %w", a.ID(), err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			remove()
			_ = r.Hub.Disposed.EmitAll(ctx, a)
		})
	}, nil
}

// CheckFree fails when id is taken.
func (r *Registry) CheckFree(id ID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.agents[id]; ok {
		return fmt.Errorf("agent: agent %q is already registered", id)
	}
	return nil
}

// Get returns a live agent.
func (r *Registry) Get(id ID) (Agent, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.agents[id]
	return a, ok
}

// List returns live agents in registration order.
func (r *Registry) List() []Agent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Agent, 0, len(r.order))
	for _, id := range r.order {
		out = append(out, r.agents[id])
	}
	return out
}
