package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshq/dsh/checkpoint/files"
	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// mirror stands in for the store: a copy of every appended event, read
// back by range; reads counts the reads, fail makes them fail.
type mirror struct {
	mu     sync.Mutex
	events []session.Event
	reads  int
	fail   error
}

func (m *mirror) read(_ context.Context, from, to int64, fn func(session.Event) error) error {
	m.mu.Lock()
	m.reads++
	evs, fail := m.events[from:min(to, int64(len(m.events)))], m.fail
	m.mu.Unlock()
	if fail != nil {
		return fail
	}
	for _, e := range evs {
		if err := fn(e.Clone()); err != nil {
			return err
		}
	}
	return nil
}

// longTurn is a session of one turn of steps, each with a checkpoint and a
// bulky result, whose flushed events are released as the store does.
func longTurn(t *testing.T, m *mirror, steps int) *session.Session {
	t.Helper()
	s, err := session.New("hist", session.Options{Clock: func() time.Time { return time.UnixMilli(1700000000000) }})
	if err != nil {
		t.Fatal(err)
	}
	s.SetNotifier(func(_ context.Context, _ *session.Session, e session.Event) error {
		m.mu.Lock()
		m.events = append(m.events, e.Clone())
		m.mu.Unlock()
		return nil
	})
	s.SetReader(m.read)
	ctx := context.Background()
	w := s.Writer(ownership.Fixtures)
	must := func(_ session.Event, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Append(ctx, session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: session.TriggerMessage}}))
	must(w.AppendSurface(ctx, session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text("do the work")}, Source: llm.UserSource}, session.AppendOp, nil))
	for i := 1; i <= steps; i++ {
		must(w.Append(ctx, session.TypeStepStart, session.StepBoundary{Turn: 1, Step: i}))
		at := AtStep
		if i == 1 {
			at = AtTurn
		}
		must(writer(s).Append(ctx, TypeTaken, Taken{Turn: 1, Step: i, At: at, ID: stepHash(i)}))
		must(w.Append(ctx, "test/output", map[string]string{"out": strings.Repeat("x", 4000)}))
		must(w.Append(ctx, session.TypeStepEnd, session.StepBoundary{Turn: 1, Step: i}))
		s.Release(int64(s.Len()))
	}
	return s
}

func stepHash(i int) files.Hash {
	var h files.Hash
	copy(h[:], fmt.Sprintf("step-%d", i))
	return h
}

// The rewind scan finds every step and checkpoint of a long turn after
// their payloads left memory, reading them back in a few batched reads;
// a store that cannot read them back is an error, not a history without
// them (which would say the step has no checkpoint).
func TestHistoryOfReleasedSteps(t *testing.T) {
	m := &mirror{}
	s := longTurn(t, m, 400)
	if s.Released() < 1200 {
		t.Fatalf("released %d of %d events; the test needs most of them released", s.Released(), s.Len())
	}
	before := m.reads
	h, err := readHistory(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.reads - before; got == 0 || got > 8 {
		t.Fatalf("the history read the store %d times for 800 released markers; want a few batched reads", got)
	}
	for _, step := range []int{2, 57, 300, 400} {
		tr, mk, seq, err := h.target(Target{Turn: 1, Step: step})
		if err != nil {
			t.Fatalf("target of step %d: %v", step, err)
		}
		if mk.id != stepHash(step) || mk.step != step || seq != tr.steps[step] {
			t.Fatalf("step %d: checkpoint %s (step %d) at seq %d; want the checkpoint taken at that step", step, mk.id, mk.step, seq)
		}
	}
	if tr, mk, _, err := h.target(Target{Turn: 1}); err != nil || mk.id != stepHash(1) || tr.prompt != "do the work" {
		t.Fatalf("target of turn 1: %s, prompt %q, %v", mk.id, tr.prompt, err)
	}

	m.mu.Lock()
	m.fail = errors.New("disk gone")
	m.mu.Unlock()
	if _, err := readHistory(context.Background(), s); !errors.Is(err, session.ErrReleased) {
		t.Fatalf("history over a store that fails = %v; want an error wrapping session.ErrReleased", err)
	}
}
