package session_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// copyStore is a Reader over copies of every appended event, standing in
// for a store; fail makes reads fail, reads counts them.
type copyStore struct {
	mu     sync.Mutex
	events []session.Event
	fail   error
	reads  int
}

func (c *copyStore) read(_ context.Context, from, to int64, fn func(session.Event) error) error {
	c.mu.Lock()
	c.reads++
	fail := c.fail
	evs := c.events[from:min(to, int64(len(c.events)))]
	c.mu.Unlock()
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

// session is a new session whose every event is mirrored into c, which
// also serves its reads of released events.
func (c *copyStore) session(t testing.TB, id session.ID, clock func() time.Time) *session.Session {
	t.Helper()
	s, err := session.New(id, session.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	s.SetNotifier(func(_ context.Context, _ *session.Session, e session.Event) error {
		c.mu.Lock()
		c.events = append(c.events, e.Clone())
		c.mu.Unlock()
		return nil
	})
	s.SetReader(c.read)
	return s
}

// longSession appends turns of steps with bulky tool results, mirroring
// every event into c.
func longSession(t *testing.T, c *copyStore, steps int) *session.Session {
	t.Helper()
	s := c.session(t, "long", fixedClock)
	w := s.Writer(ownership.Fixtures)
	must := func(_ session.Event, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Append(ctx, session.TypeTurnStart, session.TurnStart{Turn: 1}))
	must(w.AppendSurface(ctx, session.TypeUserMessage, session.Prompt{Content: text("go")}, session.AppendOp, nil))
	big := strings.Repeat("x", 2000)
	for i := range steps {
		id := llm.CallID(fmt.Sprintf("c%d", i))
		must(w.Append(ctx, session.TypeStepStart, session.StepBoundary{Turn: 1, Step: i + 1}))
		must(w.AppendChunk(ctx, 1, i+1, llm.Chunk{Text: "thinking"}))
		must(w.AppendSurface(ctx, session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: i + 1,
			Content: []llm.Block{{Type: llm.BlockToolCall, ID: id, Name: "read", Arguments: `{}`}}}, session.AppendOp, nil))
		must(w.AppendSurface(ctx, session.TypeToolResult, session.ToolResult{CallID: id, Content: text(fmt.Sprint(i, big))}, session.AppendOp, nil))
	}
	return s
}

func TestReleaseDropsPayloadsAndReadsThemBack(t *testing.T) {
	c := &copyStore{}
	s := longSession(t, c, 400) // 1602 events: six full segments
	before := s.Events()
	msgs, err := s.Messages()
	if err != nil {
		t.Fatal(err)
	}
	wantMsgs := append([]llm.Message(nil), msgs...)

	if got := s.Release(1000); got != 768 {
		t.Fatalf("Release(1000) released %d events; want 768 (whole segments below the durable seq)", got)
	}
	if got := s.Release(int64(s.Len())); got != 1536 {
		t.Fatalf("Release(all) released %d events; want 1536 (the newest segment stays)", got)
	}
	// Views handed out before the release are unchanged.
	if before[10].Data == nil {
		t.Fatal("a view taken before Release lost its payload")
	}
	now := s.Events()
	if !now[11].IsReleased() || now[1540].IsReleased() || !now[10].IsReleased() {
		t.Fatalf("released: chunk 11 %v, newest segment 1540 %v, step marker 10 %v; want true, false, true", now[11].IsReleased(), now[1540].IsReleased(), now[10].IsReleased())
	}
	// The derived history does not change, and needs no read.
	got, err := s.Messages()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantMsgs, got); diff != "" {
		t.Fatalf("history changed by Release:\n%s", diff)
	}
	if c.reads != 0 {
		t.Fatalf("Messages read the store %d times after Release; want 0", c.reads)
	}
	defer func() {
		got, err := s.Messages()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantMsgs, got); diff != "" {
			t.Fatalf("history changed by the second Release:\n%s", diff)
		}
	}()
	// Events on the surface keep their payload; the rest is read back.
	if now[5].IsReleased() || !now[3].IsReleased() {
		t.Fatalf("released: tool result on the surface %v, chunk %v; want false, true", now[5].IsReleased(), now[3].IsReleased())
	}
	ch, err := session.Decode[session.AssistantChunk](now[3])
	if err != nil || ch.Step != 1 || c.reads != 1 {
		t.Fatalf("Decode of a released chunk = %+v, %v after %d reads", ch, err, c.reads)
	}
	// Once a replace takes a result off the surface, the next Release
	// drops it too.
	appendSurface(t, s, session.TypeContextMessage, session.Prompt{Content: text("summary")}, session.ReplaceOp(1, 5))
	s.Release(int64(s.Len()))
	if e, _ := s.Event(5); !e.IsReleased() {
		t.Fatal("a tool result replaced off the surface kept its payload")
	}
	if e, _ := s.Event(9); e.IsReleased() {
		t.Fatal("a tool result still on the surface lost its payload")
	}
	r, err := session.Decode[session.ToolResult](func() session.Event { e, _ := s.Event(5); return e }())
	if err != nil || r.CallID != "c0" {
		t.Fatalf("Decode of a released tool result = %+v, %v", r, err)
	}
	wantMsgs, _ = s.Messages()
	wantMsgs = append([]llm.Message(nil), wantMsgs...)
	// Log and Range give back exactly the log, with one read for the
	// released run.
	c.reads = 0
	log, err := s.Log(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.reads != 1 {
		t.Fatalf("Log read the store %d times; want 1", c.reads)
	}
	if diff := cmp.Diff(c.events, log, cmp.Comparer(sameEvent)); diff != "" {
		t.Fatalf("Log differs from the appended events:\n%s", diff)
	}
	var seqs []int64
	if err := s.Range(ctx, 1530, 1540, func(e session.Event) error { seqs = append(seqs, e.Seq); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seqs) != 10 || seqs[0] != 1530 || seqs[9] != 1539 {
		t.Fatalf("Range(1530,1540) gave seqs %v", seqs)
	}
	if !s.HasTurnStart(1) || s.HasTurnStart(2) {
		t.Fatal("HasTurnStart wrong after Release")
	}
}

func sameEvent(a, b session.Event) bool {
	return a.Seq == b.Seq && a.Type == b.Type && a.Time == b.Time && string(a.Data) == string(b.Data) &&
		cmp.Equal(a.SurfaceOp, b.SurfaceOp) && cmp.Equal(a.SourceEventSeqs, b.SourceEventSeqs)
}

func TestReleasedPayloadThatCannotBeReadIsAnError(t *testing.T) {
	c := &copyStore{}
	s := longSession(t, c, 200)
	s.Release(int64(s.Len()))
	c.fail = errors.New("disk on fire")
	e, _ := s.Event(3)
	if _, err := session.Decode[session.ToolResult](e); !errors.Is(err, session.ErrReleased) || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("Decode with a failing store: %v; want ErrReleased naming the cause", err)
	}
	if _, err := s.Log(ctx); !errors.Is(err, session.ErrReleased) {
		t.Fatalf("Log with a failing store: %v; want ErrReleased", err)
	}
	// A store that disagrees with memory is caught, not believed.
	c.fail = nil
	c.mu.Lock()
	c.events[3].Type = "other/thing"
	c.mu.Unlock()
	if _, err := s.Payload(ctx, e); !errors.Is(err, session.ErrReleased) || !strings.Contains(err.Error(), "other/thing") {
		t.Fatalf("Payload from a store that disagrees: %v", err)
	}
}

func TestNothingIsReleasedWithoutAReaderOrBeforeTheDurableSeq(t *testing.T) {
	c := &copyStore{}
	s := longSession(t, c, 400)
	if got := s.Release(300); got != 256 {
		t.Fatalf("Release(300) = %d; want 256 (only whole segments below the durable seq)", got)
	}
	s2, _ := session.New("plain", session.Options{Seed: c.events, Clock: fixedClock})
	if got := s2.Release(int64(s2.Len())); got != 0 {
		t.Fatalf("a session without a reader released %d events", got)
	}
	// A released event cannot seed another session.
	if _, err := session.New("fork", session.Options{Seed: s.Events()}); err == nil || !strings.Contains(err.Error(), "released") {
		t.Fatalf("seeding from released events: %v; want an error", err)
	}
}
