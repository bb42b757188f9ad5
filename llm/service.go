package llm

import (
	"context"
	"iter"
	"slices"
	"sync"

	"github.com/dshq/dsh/kernel"
)

// Request is one model call.
type Request struct {
	Model       string
	Messages    []Message
	System      string
	Tools       []ToolSchema
	ToolChoice  string // "", "auto", "none", "required" or a tool name
	Prefill     []Block
	Temperature *float64
	MaxTokens   int
	Stop        []string
	// SessionID routes the call for listeners that key on the session (the
	// replay adapter); adapters ignore it.
	SessionID string
}

// Stream is a model stream. Iteration yields chunks until the end of the
// stream or an error (after which iteration stops). Breaking out of the loop
// or cancelling the context closes the underlying connection.
type Stream = iter.Seq2[Chunk, error]

// Adapter is the provider seam.
type Adapter interface {
	Stream(ctx context.Context, req *Request) (Stream, error)
}

// AdapterFunc adapts a function to [Adapter].
type AdapterFunc func(ctx context.Context, req *Request) (Stream, error)

// Stream calls f.
func (f AdapterFunc) Stream(ctx context.Context, req *Request) (Stream, error) { return f(ctx, req) }

// ModelInfo describes a model an adapter serves.
type ModelInfo struct {
	ID            string `json:"id"`            // reference used in requests, e.g. "deepseek/deepseek-chat"
	ContextWindow int    `json:"contextWindow"` // tokens, 0 when unknown
	MaxOutput     int    `json:"maxOutput"`     // tokens, 0 when unknown
}

// binding is one registration, compared by identity (adapters themselves
// may be uncomparable func values).
type binding struct{ Adapter }

// Service maps model references to adapters and streams requests through the
// Stream interception point.
type Service struct {
	mu       sync.RWMutex
	adapters map[string]*binding
	order    []string
	info     map[string]ModelInfo
	aliases  map[string]string

	// StreamPoint wraps every model call: retries, routing, logging, replay.
	// A listener may return its own stream without calling next.
	StreamPoint *kernel.Chain[*Request, Stream]
}

// NewService returns an empty registry.
func NewService() *Service {
	return &Service{
		adapters:    map[string]*binding{},
		info:        map[string]ModelInfo{},
		aliases:     map[string]string{},
		StreamPoint: kernel.NewChain[*Request, Stream]("llm/stream"),
	}
}

// Register maps every model to a, all or nothing.
func (s *Service) Register(models []ModelInfo, a Adapter) (dispose func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range models {
		if _, dup := s.adapters[m.ID]; dup {
			return nil, &Error{Name: "LlmError", Code: CodeDuplicateAdapter,
				Message: "an adapter for model \"" + m.ID + "\" is already registered"}
		}
	}
	b := &binding{a}
	for _, m := range models {
		s.adapters[m.ID] = b
		s.info[m.ID] = m
		s.order = append(s.order, m.ID)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, m := range models {
				if s.adapters[m.ID] == b {
					delete(s.adapters, m.ID)
					delete(s.info, m.ID)
					s.order = slices.DeleteFunc(s.order, func(x string) bool { return x == m.ID })
				}
			}
		})
	}, nil
}

// RegisterModels is Register with bare model ids.
func (s *Service) RegisterModels(ids []string, a Adapter) (func(), error) {
	ms := make([]ModelInfo, len(ids))
	for i, id := range ids {
		ms[i] = ModelInfo{ID: id}
	}
	return s.Register(ms, a)
}

// Alias makes name resolve to target until dispose is called.
func (s *Service) Alias(name, target string) (dispose func()) {
	s.mu.Lock()
	s.aliases[name] = target
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.aliases[name] == target {
			delete(s.aliases, name)
		}
		s.mu.Unlock()
	}
}

// Models lists registered models in registration order.
func (s *Service) Models() []ModelInfo {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]ModelInfo, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.info[id])
	}
	return out
}

// Resolve returns the canonical model id and its adapter. An alias resolves
// to its target; a bare model name resolves when exactly one provider serves
// "<provider>/<name>".
func (s *Service) Resolve(model string) (string, Adapter, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if t, ok := s.aliases[model]; ok {
		model = t
	}
	if b, ok := s.adapters[model]; ok {
		return model, b.Adapter, true
	}
	var found string
	for _, id := range s.order {
		if i := lastSlash(id); i >= 0 && id[i+1:] == model {
			if found != "" {
				return "", nil, false
			}
			found = id
		}
	}
	if found != "" {
		return found, s.adapters[found].Adapter, true
	}
	return "", nil, false
}

// Info returns what is known of a model.
func (s *Service) Info(model string) (ModelInfo, bool) {
	id, _, ok := s.Resolve(model)
	if !ok {
		return ModelInfo{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.info[id], true
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}

// Stream dispatches req through StreamPoint to the adapter serving req.Model.
func (s *Service) Stream(ctx context.Context, req *Request) (Stream, error) {
	return s.StreamPoint.Run(ctx, req, s.streamCore)
}

func (s *Service) streamCore(ctx context.Context, req *Request) (Stream, error) {
	id, a, ok := s.Resolve(req.Model)
	if !ok {
		return nil, &Error{Name: "LlmError", Code: CodeNoAdapter,
			Message: "no adapter registered for model \"" + req.Model + "\""}
	}
	if id != req.Model {
		// Adapters see the canonical "provider/model" id, never an alias.
		cp := *req
		cp.Model = id
		req = &cp
	}
	return a.Stream(ctx, req)
}
