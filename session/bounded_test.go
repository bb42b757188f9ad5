package session_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// dshSteps appends steps shaped like a dsh -p step (a step marker, four
// streamed chunks, the assistant message, a small plugin event, the tool
// call, a checkpoint-like marker, a 2 KB result, the step's end), with a
// summary replacing the older surface every 20 steps as compaction does, and
// releases what is stored after each step as the store does after a flush.
func dshSteps(t testing.TB, c *copyStore, s *session.Session, from, steps int) {
	t.Helper()
	w := s.Writer(ownership.Fixtures)
	must := func(_ session.Event, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	big := strings.Repeat("x", 2000)
	for i := from; i < from+steps; i++ {
		id := llm.CallID(fmt.Sprintf("c%d", i))
		must(w.Append(ctx, session.TypeStepStart, session.StepBoundary{Turn: 1, Step: i + 1}))
		first := int64(s.Len())
		for j := range 4 {
			must(w.AppendChunk(ctx, 1, i+1, llm.Chunk{Text: fmt.Sprint("w", j)}))
		}
		must(w.AppendSurface(ctx, session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: i + 1,
			Content: []llm.Block{{Type: llm.BlockToolCall, ID: id, Name: "bash", Arguments: `{"command":"x"}`}}},
			session.AppendOp, []int64{first, first + 1, first + 2, first + 3}))
		must(w.Append(ctx, "test/decision", map[string]any{"callId": id, "behavior": "allow", "reason": strings.Repeat("r", 100)}))
		must(w.Append(ctx, session.TypeToolCall, session.ToolCall{Turn: 1, Step: i + 1, CallID: id, Name: "bash", Arguments: `{"command":"x"}`}))
		must(w.Append(ctx, "test/taken", map[string]any{"turn": 1, "step": i + 1, "at": "step", "id": strings.Repeat("f", 64)}))
		must(w.AppendSurface(ctx, session.TypeToolResult, session.ToolResult{Turn: 1, Step: i + 1, CallID: id, Content: text(big)}, session.AppendOp, nil))
		must(w.Append(ctx, session.TypeStepEnd, session.StepBoundary{Turn: 1, Step: i + 1}))
		if (i+1)%20 == 0 {
			surface, err := s.Surface()
			if err != nil {
				t.Fatal(err)
			}
			// The prompt stays; everything after it becomes one summary.
			if len(surface) > 2 {
				appendSurface(t, s, session.TypeUserMessage, session.Prompt{Content: text("summary")},
					session.ReplaceOp(surface[1], surface[len(surface)-1]), surface[1:]...)
			}
		}
		if _, err := s.Messages(); err != nil {
			t.Fatal(err)
		}
		s.Release(int64(s.Len()))
	}
}

// A released step holds none of its payloads, small ones included (the
// step markers, the checkpoint, the plugin's decision, the message a summary
// replaced), and a skeleton of a bounded size, so what a live session keeps
// of its flushed log grows by a constant of a few bytes an event however
// long it runs — not by the ~0.9 KB a step of small payloads it used to keep.
func TestReleasedStepsHoldBoundedMemory(t *testing.T) {
	c := &copyStore{}
	s := c.session(t, "bounded", fixedClock)
	appendEvent(t, s, session.TypeTurnStart, session.TurnStart{Turn: 1})
	user(t, s, "go")
	dshSteps(t, c, s, 0, 200)
	p1, k1 := s.Held()
	ev1 := s.Released()
	dshSteps(t, c, s, 200, 400)
	p2, k2 := s.Held()
	ev2 := s.Released()
	if ev2-ev1 < 3000 {
		t.Fatalf("released %d → %d events; the test needs thousands released between the two counts", ev1, ev2)
	}
	steps := float64(ev2-ev1) / 11 // 11 events a step
	if perStep := float64(p2-p1) / steps; perStep > 0 {
		t.Errorf("released steps hold %.1f payload bytes each (%d → %d bytes); want none", perStep, p1, p2)
	}
	// The skeleton: an event's type index, time and payload end, a
	// message's four sources and surface op, a summary's sources: a few
	// bytes an event.
	perEvent := float64(k2-k1) / float64(ev2-ev1)
	t.Logf("released events hold %.1f skeleton bytes each", perEvent)
	if perEvent > 8 {
		t.Errorf("released events hold %.1f skeleton bytes each (%d → %d); want at most 8", perEvent, k1, k2)
	}
	// Everything is still readable, and the history is unchanged by it.
	log, err := s.Log(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != len(c.events) {
		t.Fatalf("Log gives %d events; %d were appended", len(log), len(c.events))
	}
	for i, e := range log {
		if string(e.Data) != string(c.events[i].Data) {
			t.Fatalf("event %d read back as %s; appended %s", i, e.Data, c.events[i].Data)
		}
	}
}

// Each folds released small events with their payloads in a few batched
// reads of the store, not one read each; a read that fails is an error.
func TestEachReadsReleasedPayloadsInBatches(t *testing.T) {
	c := &copyStore{}
	s := c.session(t, "each", fixedClock)
	appendEvent(t, s, session.TypeTurnStart, session.TurnStart{Turn: 1})
	user(t, s, "go")
	dshSteps(t, c, s, 0, 600)
	if s.Released() < 6000 {
		t.Fatalf("released %d events; the test needs most of them released", s.Released())
	}
	reads := c.reads
	var steps []int
	err := s.Each(ctx, 0, func(e session.Event) bool { return e.Type == session.TypeStepStart || e.Type == "test/taken" },
		func(e session.Event) error {
			if e.IsReleased() {
				return fmt.Errorf("event %d given without its payload", e.Seq)
			}
			if e.Type == session.TypeStepStart {
				b, err := session.Decode[session.StepBoundary](e)
				if err != nil {
					return err
				}
				steps = append(steps, b.Step)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 600 || steps[0] != 1 || steps[599] != 600 {
		t.Fatalf("Each gave %d step starts (%v…); want steps 1 to 600 in order", len(steps), steps[:min(3, len(steps))])
	}
	for i, n := range steps {
		if n != i+1 {
			t.Fatalf("step start %d is step %d; want %d", i, n, i+1)
		}
	}
	// 1,200 wanted events in batches of 256: a handful of reads.
	if got := c.reads - reads; got == 0 || got > 8 {
		t.Fatalf("Each read the store %d times for 1,200 released events; want a few batched reads", got)
	}
	c.mu.Lock()
	c.fail = errors.New("disk gone")
	c.mu.Unlock()
	err = s.Each(ctx, 0, func(e session.Event) bool { return e.Type == session.TypeStepStart }, func(session.Event) error { return nil })
	if !errors.Is(err, session.ErrReleased) {
		t.Fatalf("Each over a failing store = %v; want an error wrapping ErrReleased", err)
	}
}
