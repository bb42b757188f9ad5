package loop_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
)

// TestRetryAnswersTheRecordedPrompt: a turn whose model call failed leaves
// its prompt in the history; Retry runs a turn that records no second
// prompt (trigger retry), and the model is asked with the prompt once.
func TestRetryAnswersTheRecordedPrompt(t *testing.T) {
	hs := newHarness(t, scripted.Entry{Err: &llm.Error{Name: "APIError", Code: llm.CodeUnknown, Message: "overloaded"}}, scripted.Text("the answer"))
	a := hs.agent(agent.Options{})
	run(t, a, "the prompt")
	if r := lastEnd(t, a.Session()); r.Kind != session.EndError {
		t.Fatalf("first turn ended %+v, want an error", r)
	}
	hs.mu.Lock()
	queued := hs.queuedN
	hs.mu.Unlock()

	r, ok := a.(agent.Retrier)
	if !ok {
		t.Fatal("the loop's agent is not an agent.Retrier")
	}
	if err := r.Retry(context.Background()); err != nil {
		t.Fatal(err)
	}
	idle(t, a)
	s := a.Session()
	if r := lastEnd(t, s); r.Kind != session.EndCompleted {
		t.Fatalf("retried turn ended %+v", r)
	}
	if n := len(ofType(s, session.TypeUserMessage)); n != 1 {
		t.Fatalf("%d user/message events, want the one prompt", n)
	}
	starts := ofType(s, session.TypeTurnStart)
	if len(starts) != 2 {
		t.Fatalf("%d turns, want 2", len(starts))
	}
	if ts := mustDecode[session.TurnStart](t, starts[1]); ts.Trigger.Kind != session.TriggerRetry || ts.Trigger.Source != nil || ts.Turn != 2 {
		t.Fatalf("retried turn/start %+v", ts)
	}
	reqs := hs.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	if got := strings.Count(requestText(reqs[1]), "the prompt"); got != 1 {
		t.Fatalf("the retried request carries the prompt %d times: %s", got, requestText(reqs[1]))
	}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.queuedN != queued {
		t.Fatalf("Retry announced agent/queued (%d → %d): it queues no content", queued, hs.queuedN)
	}
}

// TestRetryRefusesAnAnsweredHistory: with no prompt yet, or a history that
// ends with the assistant's answer, there is nothing to retry.
func TestRetryRefusesAnAnsweredHistory(t *testing.T) {
	hs := newHarness(t, scripted.Text("answered"))
	a := hs.agent(agent.Options{})
	r := a.(agent.Retrier)
	if err := r.Retry(context.Background()); !errors.Is(err, agent.ErrNothingToRetry) {
		t.Fatalf("retry of an empty session: %v", err)
	}
	run(t, a, "hi")
	if err := r.Retry(context.Background()); !errors.Is(err, agent.ErrNothingToRetry) {
		t.Fatalf("retry after an answer: %v", err)
	}
	idle(t, a)
	if n := len(ofType(a.Session(), session.TypeTurnStart)); n != 1 || hs.model.Calls() != 1 {
		t.Fatalf("%d turns and %d model calls after refused retries, want 1 and 1", n, hs.model.Calls())
	}
}
