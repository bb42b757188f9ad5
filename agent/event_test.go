package agent_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// A long turn's end reports every step's usage and the last message's
// text after the messages left memory, reading them back in a few batched
// reads (one read per message was thousands at the end of a long turn).
func TestTurnEndOfReleasedTurn(t *testing.T) {
	var mu sync.Mutex
	var stored []session.Event
	reads := 0
	s, err := session.New("turn", session.Options{Clock: func() time.Time { return time.UnixMilli(1700000000000) }})
	if err != nil {
		t.Fatal(err)
	}
	s.SetNotifier(func(_ context.Context, _ *session.Session, e session.Event) error {
		mu.Lock()
		stored = append(stored, e.Clone())
		mu.Unlock()
		return nil
	})
	s.SetReader(func(_ context.Context, from, to int64, fn func(session.Event) error) error {
		mu.Lock()
		reads++
		evs := stored[from:min(to, int64(len(stored)))]
		mu.Unlock()
		for _, e := range evs {
			if err := fn(e.Clone()); err != nil {
				return err
			}
		}
		return nil
	})
	ctx := context.Background()
	w := s.Writer(ownership.Fixtures)
	must := func(e session.Event, err error) session.Event {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	must(w.Append(ctx, session.TypeTurnStart, session.TurnStart{Turn: 1}))
	must(w.AppendSurface(ctx, session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text("go")}}, session.AppendOp, nil))
	const steps = 300
	for i := 1; i <= steps; i++ {
		id := llm.CallID(fmt.Sprint("c", i))
		must(w.Append(ctx, session.TypeStepStart, session.StepBoundary{Turn: 1, Step: i}))
		must(w.AppendSurface(ctx, session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: i,
			Content: []llm.Block{llm.Text(fmt.Sprint("step ", i)), {Type: llm.BlockToolCall, ID: id, Name: "bash", Arguments: `{}`}},
			Usage:   &llm.Usage{InputTokens: 10, OutputTokens: i}}, session.AppendOp, nil))
		must(w.AppendSurface(ctx, session.TypeToolResult, session.ToolResult{Turn: 1, Step: i, CallID: id,
			Content: []llm.Block{llm.Text(strings.Repeat("x", 3000))}}, session.AppendOp, nil))
		must(w.Append(ctx, session.TypeStepEnd, session.StepBoundary{Turn: 1, Step: i}))
		// A summary every 25 steps takes the older surface off it, as
		// compaction does, so the messages' payloads leave memory.
		if i%25 == 0 {
			surface, err := s.Surface()
			if err != nil {
				t.Fatal(err)
			}
			must(w.AppendSurface(ctx, session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text("summary")}},
				session.ReplaceOp(surface[1], surface[len(surface)-1]), surface[1:]))
		}
		if _, err := s.Messages(); err != nil {
			t.Fatal(err)
		}
		s.Release(int64(s.Len()))
	}
	end := must(w.Append(ctx, session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndCompleted}}))
	if s.Released() < 1000 {
		t.Fatalf("released %d events; the test needs the turn's messages released", s.Released())
	}
	before := reads
	r, ok := agent.EventOf(s, end).TurnEnd()
	if !ok {
		t.Fatal("TurnEnd of a turn/end event reported none")
	}
	wantOut := steps * (steps + 1) / 2
	if r.Steps != steps || r.Usage.InputTokens != 10*steps || r.Usage.OutputTokens != wantOut || r.Text != fmt.Sprint("step ", steps) {
		t.Fatalf("TurnEnd = %d steps, usage %+v, text %q; want %d steps, %d in, %d out, %q",
			r.Steps, r.Usage, r.Text, steps, 10*steps, wantOut, fmt.Sprint("step ", steps))
	}
	if got := reads - before; got == 0 || got > 8 {
		t.Fatalf("TurnEnd read the store %d times for %d messages; want a few batched reads", got, steps)
	}
}
