package subagent

import (
	"context"
	"sync"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// Scripted is a test provider: each run answers Reply after Release is
// closed (nil: at once), or ends aborted when cancelled first.
type Scripted struct {
	ProviderName string
	Reply        string
	StopReason   string
	Release      chan struct{}
	mu           sync.Mutex
	Runs         int
}

// Name implements Provider.
func (s *Scripted) Name() string {
	if s.ProviderName == "" {
		return "scripted"
	}
	return s.ProviderName
}

// Start implements Provider.
func (s *Scripted) Start(ctx context.Context, req Request, depth int) (Run, error) {
	s.mu.Lock()
	s.Runs++
	s.mu.Unlock()
	return &scriptedRun{s: s, cancel: make(chan struct{})}, nil
}

type scriptedRun struct {
	s      *Scripted
	once   sync.Once
	cancel chan struct{}
}

func (r *scriptedRun) ID() string               { return "scripted" }
func (r *scriptedRun) ChildSession() session.ID { return "" }
func (r *scriptedRun) Cancel(string)            { r.once.Do(func() { close(r.cancel) }) }
func (r *scriptedRun) Dispose(context.Context) error {
	r.Cancel("")
	return nil
}

func (r *scriptedRun) Wait(ctx context.Context) (Result, error) {
	if r.s.Release != nil {
		select {
		case <-r.s.Release:
		case <-r.cancel:
			return Result{StopReason: Aborted}, nil
		}
	}
	select {
	case <-r.cancel:
		return Result{StopReason: Aborted}, nil
	default:
	}
	stop := r.s.StopReason
	if stop == "" {
		stop = Completed
	}
	return Result{Output: []llm.Block{llm.Text(r.s.Reply)}, StopReason: stop}, nil
}
