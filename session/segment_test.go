package session_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// streamedSession is a session of steps tool steps, each with chunks
// deltas of streamed text, as a model that writes before each call
// produces; every event a millisecond after the one before.
func streamedSession(t testing.TB, c *copyStore, steps, chunks int) *session.Session {
	t.Helper()
	tick := time.UnixMilli(1700000000000)
	s := c.session(t, "streamed", func() time.Time { tick = tick.Add(time.Millisecond); return tick })
	w := s.Writer(ownership.Fixtures)
	must := func(_ session.Event, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Append(ctx, session.TypeTurnStart, session.TurnStart{Turn: 1}))
	must(w.AppendSurface(ctx, session.TypeUserMessage, session.Prompt{Content: text("go")}, session.AppendOp, nil))
	for i := range steps {
		id := llm.CallID(fmt.Sprintf("s%d", i))
		must(w.Append(ctx, session.TypeStepStart, session.StepBoundary{Turn: 1, Step: i + 1}))
		for j := range chunks {
			must(w.AppendChunk(ctx, 1, i+1, llm.Chunk{Text: fmt.Sprintf("word%d ", j)}))
		}
		must(w.AppendSurface(ctx, session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: i + 1,
			Content: []llm.Block{{Type: llm.BlockToolCall, ID: id, Name: "read", Arguments: `{}`}}}, session.AppendOp, nil))
		must(w.AppendSurface(ctx, session.TypeToolResult, session.ToolResult{CallID: id, Content: text(fmt.Sprint(i, strings.Repeat("y", 1000)))}, session.AppendOp, nil))
	}
	return s
}

// sameHeld reports whether got is want as memory holds it: the same but
// for a released payload.
func sameHeld(want, got session.Event) bool {
	if want.Seq != got.Seq || want.Type != got.Type || want.Time != got.Time ||
		!cmp.Equal(want.SurfaceOp, got.SurfaceOp) || !cmp.Equal(want.SourceEventSeqs, got.SourceEventSeqs) {
		return false
	}
	return got.IsReleased() || string(want.Data) == string(got.Data)
}

// Released chunks are held packed (type and time), not as whole events,
// and every view of the log (Events, Since, Scan, Backward, Event, Range,
// Log) gives the same events as before, with payloads read back; a
// packed segment that a replace reaches again is repacked.
func TestReleasedChunksArePacked(t *testing.T) {
	c := &copyStore{}
	s := streamedSession(t, c, 100, 40) // 4,302 events, 4,000 of them chunks
	before := s.Events()
	msgs, _ := s.Messages()
	wantMsgs := append([]llm.Message(nil), msgs...)
	s.Release(int64(s.Len()))
	packed, whole := s.Packed()
	if packed < 3800 || whole > 400 {
		t.Fatalf("%d events packed, %d whole after releasing 4,302 events (4,000 chunks); want the chunks packed", packed, whole)
	}
	now := s.Events()
	if len(now) != len(before) {
		t.Fatalf("Events: %d, want %d", len(now), len(before))
	}
	for i := range before {
		if !sameHeld(before[i], now[i]) {
			t.Fatalf("Events[%d] = %+v, want %+v less its payload", i, now[i], before[i])
		}
	}
	if since := s.Since(1000); len(since) != len(before)-1000 || !sameHeld(before[1000], since[0]) || !sameHeld(before[len(before)-1], since[len(since)-1]) {
		t.Fatalf("Since(1000): %d events", len(since))
	}
	i := 7
	for e := range s.Scan(7) {
		if !sameHeld(before[i], e) {
			t.Fatalf("Scan: event %d = %+v", i, e)
		}
		i++
	}
	j := 3000
	s.Backward(3001, func(e session.Event) bool {
		if !sameHeld(before[j], e) {
			t.Fatalf("Backward: event %d = %+v", j, e)
		}
		j--
		return j > 2000
	})
	e, ok := s.Event(5)
	if !ok || !e.IsReleased() || e.Type != session.TypeAssistantChunk {
		t.Fatalf("Event(5) = %+v, %v; want a released chunk", e, ok)
	}
	ch, err := session.Decode[session.AssistantChunk](e)
	want, _ := session.Decode[session.AssistantChunk](c.events[5])
	if err != nil || !cmp.Equal(ch, want) || ch.Step != 1 {
		t.Fatalf("Decode of a packed chunk = %+v, %v; want %+v", ch, err, want)
	}
	sameLogAndHistory(t, s, c, wantMsgs)

	// A summary takes the first results off the surface: their packed
	// segments lose those payloads too, are packed again, and read back.
	appendSurface(t, s, session.TypeContextMessage, session.Prompt{Content: text("summary")}, session.ReplaceOp(1, 2151)) // through step 50's result
	if _, err := s.Messages(); err != nil {
		t.Fatal(err)
	}
	s.Release(int64(s.Len()))
	if again, _ := s.Packed(); again < packed {
		t.Fatalf("%d events packed after the replace, %d before: the segments it reached were not packed again", again, packed)
	}
	r, ok := s.Event(44)
	if !ok || r.Type != session.TypeToolResult || !r.IsReleased() {
		t.Fatalf("Event(44) = %+v; want a released tool result", r)
	}
	res, err := session.Decode[session.ToolResult](r)
	if err != nil || res.CallID != "s0" {
		t.Fatalf("Decode of the replaced result = %+v, %v", res, err)
	}
	if log, err := s.Log(ctx); err != nil || len(log) != s.Len() {
		t.Fatalf("Log after the replace: %d events, %v", len(log), err)
	}
}

// Released events with a small payload (step markers here) are packed
// without it like a chunk; a fold over them with Each gets every payload
// back in one batched read, not one read each.
func TestSmallPayloadsArePacked(t *testing.T) {
	c := &copyStore{}
	s := streamedSession(t, c, 100, 40) // 4,302 events: 4,000 chunks, 100 step starts
	before := s.Events()
	s.Release(int64(s.Len()))
	packed, whole := s.Packed()
	if packed < 3900 || whole > 300 {
		t.Fatalf("%d events packed, %d whole; want the chunks and the step starts packed", packed, whole)
	}
	released := int64(s.Released())
	for e := range s.Scan(0) {
		if e.Type == session.TypeStepStart && e.Seq < released && !e.IsReleased() {
			t.Fatalf("step start %d still holds its payload %s after its segment was released", e.Seq, e.Data)
		}
	}
	reads := c.reads
	steps := 0
	err := s.Each(ctx, 0, func(e session.Event) bool { return e.Type == session.TypeStepStart }, func(e session.Event) error {
		steps++
		if e.IsReleased() || string(e.Data) != string(before[e.Seq].Data) {
			t.Fatalf("step start %d = %q (released %v); want its payload %q", e.Seq, e.Data, e.IsReleased(), before[e.Seq].Data)
		}
		b, err := session.Decode[session.StepBoundary](e)
		if err != nil || b.Turn != 1 {
			t.Fatalf("Decode of a folded step start = %+v, %v", b, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The step starts are 43 events apart: one run, one read.
	if steps != 100 || c.reads-reads != 1 {
		t.Fatalf("%d step starts folded with %d reads of the store; want 100 and one", steps, c.reads-reads)
	}
	log, err := s.Log(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c.events, log, cmp.Comparer(sameEvent)); diff != "" {
		t.Fatalf("Log differs from the appended events:\n%s", diff)
	}
}

// Surface events that no longer hold a large payload (messages and results
// a replace took off the surface, a summary with its sources) are packed
// with their surface op and sources instead of kept whole, and every view
// of the log still gives each event's op and sources as appended.
func TestReleasedSurfaceEventsArePacked(t *testing.T) {
	c := &copyStore{}
	s := streamedSession(t, c, 120, 4) // 842 events
	summary := appendSurface(t, s, session.TypeContextMessage, session.Prompt{Content: text("summary")},
		session.ReplaceOp(1, 568), 3, 5, 7) // through step 80's result
	w := s.Writer(ownership.Fixtures)
	for i := range 100 { // past the end of the summary's segment
		id := llm.CallID(fmt.Sprintf("t%d", i))
		if _, err := w.AppendSurface(ctx, session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 200 + i,
			Content: []llm.Block{{Type: llm.BlockToolCall, ID: id, Name: "read", Arguments: `{}`}}}, session.AppendOp, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := w.AppendSurface(ctx, session.TypeToolResult, session.ToolResult{CallID: id, Content: text(strings.Repeat("z", 1000))}, session.AppendOp, []int64{int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := s.Messages()
	if err != nil {
		t.Fatal(err)
	}
	wantMsgs := append([]llm.Message(nil), msgs...)
	s.Release(int64(s.Len()))
	released := s.Released()
	if released <= int(summary.Seq) {
		t.Fatalf("released through %d; the test needs the summary (%d) released", released, summary.Seq)
	}
	large := 0 // events of released segments that still hold a large payload: results the summary left
	for _, e := range c.events[:released] {
		if e.Seq > summary.SurfaceOp.End && e.Type == session.TypeToolResult {
			large++
		}
	}
	if _, whole := s.Packed(); whole > large {
		t.Fatalf("%d released events kept whole; want at most the %d results still on the surface", whole, large)
	}
	got, ok := s.Event(summary.Seq)
	if !ok || !sameHeld(summary, got) || got.IsReleased() {
		t.Fatalf("the packed summary = %+v; want %+v with its payload", got, summary)
	}
	now := s.Events()
	for i := range c.events {
		if !sameHeld(c.events[i], now[i]) {
			t.Fatalf("Events[%d] = %+v, want %+v less its payload", i, now[i], c.events[i])
		}
	}
	i := released - 1
	s.Backward(int64(released), func(e session.Event) bool {
		if !sameHeld(c.events[i], e) {
			t.Fatalf("Backward: event %d = %+v", i, e)
		}
		i--
		return i >= 0
	})
	sameLogAndHistory(t, s, c, wantMsgs)
}

// A released tool call's payload leaves memory like a chunk's, small as it
// is (one a step, for the life of a session), and is read back from the
// store when decoded; the step markers beside it stay held.
func TestReleasedToolCallsAreReadBack(t *testing.T) {
	c := &copyStore{}
	s := c.session(t, "calls", time.Now)
	w := s.Writer(ownership.Fixtures)
	appendEvent(t, s, session.TypeTurnStart, session.TurnStart{Turn: 1})
	appendSurface(t, s, session.TypeUserMessage, session.Prompt{Content: text("go")}, session.AppendOp)
	var calls []session.Event
	for i := range 200 {
		id := llm.CallID(fmt.Sprintf("c%d", i))
		appendEvent(t, s, session.TypeStepStart, session.StepBoundary{Turn: 1, Step: i + 1})
		if _, err := w.AppendSurface(ctx, session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: i + 1,
			Content: []llm.Block{{Type: llm.BlockToolCall, ID: id, Name: "read", Arguments: `{}`}}}, session.AppendOp, nil); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, appendEvent(t, s, session.TypeToolCall, session.ToolCall{Turn: 1, Step: i + 1, CallID: id, Name: "read", Arguments: fmt.Sprintf(`{"n":%d}`, i)}))
		if _, err := w.AppendSurface(ctx, session.TypeToolResult, session.ToolResult{CallID: id, Content: text("ok")}, session.AppendOp, nil); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := s.Messages()
	if err != nil {
		t.Fatal(err)
	}
	wantMsgs := append([]llm.Message(nil), msgs...)
	released := s.Release(int64(s.Len()))
	if released < 512 {
		t.Fatalf("released %d events; the test needs two segments", released)
	}
	reads := c.reads
	steps := 0
	for e := range s.Scan(0) {
		if e.Seq >= int64(released) {
			break
		}
		switch e.Type {
		case session.TypeToolCall:
			if !e.IsReleased() {
				t.Fatalf("tool call %d still holds its payload %s after its segment was released", e.Seq, e.Data)
			}
		case session.TypeStepStart:
			steps++
			if !e.IsReleased() {
				t.Fatalf("step start %d still holds its payload %s after its segment was released", e.Seq, e.Data)
			}
		}
	}
	if steps == 0 || c.reads != reads {
		t.Fatalf("%d step starts scanned with %d store reads; want some and none (a scan reads memory only)", steps, c.reads-reads)
	}
	e, _ := s.Event(calls[3].Seq)
	got, err := session.Decode[session.ToolCall](e)
	if err != nil || got.Arguments != `{"n":3}` || got.CallID != "c3" || c.reads == reads {
		t.Fatalf("Decode of a released tool call = %+v, %v (%d reads); want its arguments read back", got, err, c.reads-reads)
	}
	if got, _ := s.Messages(); !cmp.Equal(wantMsgs, got) {
		t.Fatal("the history changed when the tool calls were released")
	}
}

// sameLogAndHistory checks that s's log, read back, is what was appended
// and that its history is still wantMsgs.
func sameLogAndHistory(t *testing.T, s *session.Session, c *copyStore, wantMsgs []llm.Message) {
	t.Helper()
	log, err := s.Log(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c.events, log, cmp.Comparer(sameEvent)); diff != "" {
		t.Fatalf("Log differs from the appended events:\n%s", diff)
	}
	if got, _ := s.Messages(); !cmp.Equal(wantMsgs, got) {
		t.Fatal("the history changed when its segments were packed")
	}
}
