package compact

import (
	"context"
	"runtime"
	"testing"

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
