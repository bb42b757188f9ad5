package loop

import (
	"context"
	"testing"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/prompt"
	"github.com/dshq/dsh/session"
)

// TestCancelOfQueuedInputReleasesWaiters builds the window without a driver:
// input is queued, a WhenIdle waiter registered, and the cancel drops the
// input before any driver took it. The driver would find an empty queue
// and go back to sleep, so the cancel itself must release the waiter.
func TestCancelOfQueuedInputReleasesWaiters(t *testing.T) {
	ctx := context.Background()
	scope := kernel.NewScope("t")
	defer scope.Close()
	s, err := session.NewLive(nil).Create(ctx, scope, "s", session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := New(Deps{Prompt: prompt.New()})
	a := newAgent(l, "a", agent.Options{}, s)
	a.mu.Lock()
	a.queue = append(a.queue, queued{content: []llm.Block{llm.Text("hi")}})
	a.mu.Unlock()

	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.WhenIdle(wctx) }()
	for registered := false; !registered; {
		a.mu.Lock()
		registered = len(a.idleWaiters) == 1
		a.mu.Unlock()
		if !registered {
			time.Sleep(time.Millisecond)
		}
	}
	a.Cancel("changed my mind")
	if err := <-done; err != nil {
		t.Fatalf("WhenIdle after the queued input was cancelled: %v", err)
	}
}
