package term

import "sync"

// queue carries messages from other goroutines (session listeners, the
// approver, the input reader, signals) to the UI goroutine. Pushing never
// blocks: session listeners run on the agent's goroutine, inside appends,
// and must not wait for the screen.
type queue struct {
	mu    sync.Mutex
	items []any
	ready chan struct{}
}

func newQueue() *queue { return &queue{ready: make(chan struct{}, 1)} }

func (q *queue) push(x any) {
	q.mu.Lock()
	q.items = append(q.items, x)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *queue) drain() []any {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.items
	q.items = nil
	return out
}
