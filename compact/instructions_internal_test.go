package compact

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/dshq/dsh/internal/ownership"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// latestInstructions finds the newest prompt and the steering after it by
// reading the log backwards, without a copy of the whole log (it runs at
// every compaction; a copy of a long session's events was megabytes each
// time, the terminal UI's largest peaks at 2,000 steps).
func TestLatestInstructionsCopiesNoLog(t *testing.T) {
	s, w, must := newTestLog(t)
	ctx := context.Background()
	must(w.Append(ctx, session.TypeTurnStart, session.TurnStart{Turn: 1}))
	must(w.AppendSurface(ctx, session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text("old task")}}, session.AppendOp, nil))
	must(w.AppendSurface(ctx, session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text("the task")}}, session.AppendOp, nil))
	for i := range 20000 {
		must(w.Append(ctx, session.TypeStepStart, session.StepBoundary{Turn: 1, Step: i + 1}))
	}
	must(w.AppendSurface(ctx, session.TypeSteeringMessage, session.Steering{Turn: 1, Content: []llm.Block{llm.Text("use tabs")}}, session.AppendOp, nil))
	got := latestInstructions(s)
	if len(got) != 2 || got[0].tag != "user-request" || llm.TextOf(got[0].content) != "the task" || got[1].tag != "steering" {
		t.Fatalf("latestInstructions = %+v; want the task, then the steering", got)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	latestInstructions(s)
	runtime.ReadMemStats(&after)
	// 20,003 events are over 2 MB as Events; the walk needs only the
	// segments' list and the two decoded payloads.
	if n := after.TotalAlloc - before.TotalAlloc; n > 256<<10 {
		t.Fatalf("latestInstructions allocated %d bytes over a 20,003-event log; want no copy of it", n)
	}
}

// The checkpoint messages earlier compactions left in the turn are passed
// over without reading their payloads back from the store: they were
// decoded, one read each, at every compaction (O(compactions²) reads over
// a long turn). The task is still found, and a user message that is not a
// checkpoint is still decided from its payload.
func TestLatestInstructionsReadsNoCheckpointBack(t *testing.T) {
	s, err := session.New("s", session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var stored []session.Event
	s.SetNotifier(func(_ context.Context, _ *session.Session, e session.Event) error {
		stored = append(stored, e.Clone())
		return nil
	})
	reads := 0
	s.SetReader(func(_ context.Context, from, to int64, fn func(session.Event) error) error {
		reads++
		for _, e := range stored[from:min(to, int64(len(stored)))] {
			if err := fn(e.Clone()); err != nil {
				return err
			}
		}
		return nil
	})
	ctx := context.Background()
	must := func(e session.Event, err error) session.Event {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	w, cw := s.Writer(ownership.Loop), log(s)
	start := must(w.Append(ctx, session.TypeTurnStart, session.TurnStart{Turn: 1}))
	long := strings.Repeat("the task, at length. ", 40)
	must(w.AppendSurface(ctx, session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text(long)}}, session.AppendOp, nil))
	summary := strings.Repeat("what was done. ", 40)
	var prev session.Event // the checkpoint before, which the next one replaces with what followed it
	for round := range 6 {
		first := must(w.AppendSurface(ctx, session.TypeAssistantMessage, session.AssistantMessage{Content: []llm.Block{llm.Text(summary)}}, session.AppendOp, nil))
		for i := range 300 {
			must(w.Append(ctx, session.TypeStepStart, session.StepBoundary{Turn: 1, Step: round*300 + i + 1}))
		}
		shadowed := []int64{first.Seq}
		if round > 0 {
			shadowed = []int64{prev.Seq, first.Seq}
		}
		sum := must(cw.Append(ctx, TypeSummary, Summary{Summary: []llm.Block{llm.Text(summary)}, ShadowedRange: Range{shadowed[0], first.Seq}, ShadowedSeqs: shadowed}))
		prev = must(cw.AppendSurface(ctx, session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text(summary)}, Source: llm.PluginSource("compact")},
			session.ReplaceOp(shadowed[0], first.Seq), append([]int64{start.Seq, sum.Seq}, shadowed...)))
	}
	must(w.Append(ctx, session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 9999}))
	if n := s.Release(int64(s.Len())); n < 1024 {
		t.Fatalf("released %d events; the test needs its checkpoints released", n)
	}
	got := latestInstructions(s)
	if len(got) != 1 || got[0].tag != "user-request" || llm.TextOf(got[0].content) != long {
		t.Fatalf("latestInstructions = %+v; want the task", got)
	}
	// The task is on the surface, so its payload is held; the released
	// checkpoints are not read back.
	if reads != 0 {
		t.Errorf("latestInstructions read the store %d times; want no read (no checkpoint read back)", reads)
	}
}
