package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// tb is the part of testing.TB that rapid.T also implements, so helpers
// serve unit tests, benchmarks and property tests alike.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

var ctx = context.Background()

const now = 1_700_000_000_000

func fixedClock() time.Time { return time.UnixMilli(now) }

func newSession(t tb) *session.Session {
	t.Helper()
	s, err := session.New("s1", session.Options{Clock: fixedClock})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func seeded(t tb, events []session.Event) *session.Session {
	t.Helper()
	s, err := session.New("fresh", session.Options{Seed: events, Clock: fixedClock})
	if err != nil {
		t.Fatalf("seeding: %v", err)
	}
	return s
}

func text(s string) []llm.Block { return []llm.Block{llm.Text(s)} }

func appendSurface(t tb, s *session.Session, typ string, data any, op session.SurfaceOp, src ...int64) session.Event {
	t.Helper()
	e, err := s.Writer(ownership.Fixtures).AppendSurface(ctx, typ, data, op, src)
	if err != nil {
		t.Fatalf("AppendSurface %s: %v", typ, err)
	}
	return e
}

func appendEvent(t tb, s *session.Session, typ string, data any) session.Event {
	t.Helper()
	e, err := s.Writer(ownership.Fixtures).Append(ctx, typ, data)
	if err != nil {
		t.Fatalf("Append %s: %v", typ, err)
	}
	return e
}

func user(t tb, s *session.Session, msg string) session.Event {
	t.Helper()
	return appendSurface(t, s, session.TypeUserMessage, session.Prompt{Content: text(msg), Source: llm.UserSource}, session.AppendOp)
}

func assistant(t tb, s *session.Session, content ...llm.Block) session.Event {
	t.Helper()
	return appendSurface(t, s, session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1, Content: content}, session.AppendOp)
}

func toolCall(t tb, s *session.Session, id llm.CallID, args string, original *string) session.Event {
	t.Helper()
	return appendEvent(t, s, session.TypeToolCall, session.ToolCall{Turn: 1, Step: 1, CallID: id, Name: "echo", Arguments: args, OriginalArguments: original})
}

func toolResult(t tb, s *session.Session, id llm.CallID, out string, src ...int64) session.Event {
	t.Helper()
	return appendSurface(t, s, session.TypeToolResult, session.ToolResult{Turn: 1, Step: 1, CallID: id, Content: text(out)}, session.AppendOp, src...)
}

func messages(t tb, s *session.Session) []llm.Message {
	t.Helper()
	m, err := s.Messages()
	if err != nil {
		t.Fatalf("Messages: %v", err)
	}
	return m
}

func surface(t tb, s *session.Session) []int64 {
	t.Helper()
	sf, err := s.Surface()
	if err != nil {
		t.Fatalf("Surface: %v", err)
	}
	return sf
}

func jsonOf(t tb, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return string(b)
}

func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant    %s", err, want)
	}
}

// --- append ---------------------------------------------------------------

func TestAppendAssignsSeqTimeAndCopies(t *testing.T) {
	s := newSession(t)
	src := []int64{0}
	raw := json.RawMessage(`{"turn":1,"trigger":{"kind":"message"}}`)
	e0 := appendEvent(t, s, session.TypeTurnStart, raw)
	e1 := appendSurface(t, s, session.TypeUserMessage, session.Prompt{Content: text("hi")}, session.AppendOp, src...)
	if e0.Seq != 0 || e1.Seq != 1 || e0.Time != now || s.Len() != 2 {
		t.Fatalf("seqs %d %d time %d len %d", e0.Seq, e1.Seq, e0.Time, s.Len())
	}
	if e0.SurfaceOp != nil || e0.SourceEventSeqs != nil {
		t.Fatalf("non-surface event carries surface fields: %+v", e0)
	}
	if e1.SurfaceOp == nil || *e1.SurfaceOp != session.AppendOp || !slices.Equal(e1.SourceEventSeqs, []int64{0}) {
		t.Fatalf("surface fields %+v", e1)
	}
	// The caller's buffers are not the log's.
	raw[2] = 'X'
	src[0] = 99
	logged, _ := s.Event(0)
	if string(logged.Data) != `{"turn":1,"trigger":{"kind":"message"}}` {
		t.Fatalf("log shares the caller's data: %s", logged.Data)
	}
	logged, _ = s.Event(1)
	if logged.SourceEventSeqs[0] != 0 {
		t.Fatal("log shares the caller's sourceEventSeqs")
	}
	// Empty provenance is no provenance.
	e2 := appendSurface(t, s, session.TypeUserMessage, session.Prompt{Content: text("x")}, session.AppendOp, []int64{}...)
	if e2.SourceEventSeqs != nil {
		t.Fatalf("empty sources kept: %v", e2.SourceEventSeqs)
	}
	if _, ok := s.Event(3); ok {
		t.Fatal("Event past the end")
	}
	if _, ok := s.Event(-1); ok {
		t.Fatal("Event before the start")
	}
}

func TestAppendValidation(t *testing.T) {
	type node struct {
		Next *node `json:"next"`
	}
	cyclicNode := &node{}
	cyclicNode.Next = cyclicNode
	cyclicMap := map[string]any{}
	cyclicMap["self"] = cyclicMap

	cases := []struct {
		name string
		do   func(s *session.Session) error
		want string // substring
	}{
		{"surface-eligible without op", func(s *session.Session) error {
			_, err := s.Writer(ownership.Fixtures).Append(ctx, session.TypeUserMessage, session.Prompt{Content: text("x")})
			return err
		}, `session: event "user/message" is surface-eligible and requires a surfaceOp marker`},
		{"non-surface with op", func(s *session.Session) error {
			_, err := s.Writer(ownership.Fixtures).AppendSurface(ctx, session.TypeTurnStart, session.TurnStart{Turn: 1}, session.AppendOp, nil)
			return err
		}, `session: event "turn/start" is not surface-eligible`},
		{"no type", func(s *session.Session) error {
			_, err := s.Append(ctx, "", map[string]int{"a": 1})
			return err
		}, "session: an event needs a type"},
		{"NaN", func(s *session.Session) error {
			_, err := s.Append(ctx, "plugin/x", math.NaN())
			return err
		}, `session: event "plugin/x" carries non-JSON data`},
		{"infinity", func(s *session.Session) error {
			_, err := s.Append(ctx, "plugin/x", math.Inf(-1))
			return err
		}, "non-JSON data"},
		{"NaN inside a struct", func(s *session.Session) error {
			_, err := s.Append(ctx, "plugin/x", struct{ V float64 }{math.NaN()})
			return err
		}, "non-JSON data"},
		{"NaN inside a surface payload", func(s *session.Session) error {
			_, err := s.Writer(ownership.Fixtures).AppendSurface(ctx, session.TypeToolResult, map[string]any{"meta": math.NaN()}, session.AppendOp, nil)
			return err
		}, `session: event "tool/result" carries non-JSON data`},
		{"channel", func(s *session.Session) error {
			_, err := s.Append(ctx, "plugin/x", map[string]any{"c": make(chan int)})
			return err
		}, "non-JSON data"},
		{"function", func(s *session.Session) error {
			_, err := s.Append(ctx, "plugin/x", func() {})
			return err
		}, "non-JSON data"},
		{"pointer cycle", func(s *session.Session) error {
			_, err := s.Append(ctx, "plugin/x", cyclicNode)
			return err
		}, "non-JSON data"},
		{"map cycle", func(s *session.Session) error {
			_, err := s.Append(ctx, "plugin/x", cyclicMap)
			return err
		}, "non-JSON data"},
		{"invalid raw JSON", func(s *session.Session) error {
			_, err := s.Append(ctx, "plugin/x", json.RawMessage(`{"a":`))
			return err
		}, "non-JSON data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSession(t)
			notified := 0
			s.SetNotifier(func(context.Context, *session.Session, session.Event) error { notified++; return nil })
			err := c.do(s)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if s.Len() != 0 || notified != 0 {
				t.Fatalf("a rejected append pushed (%d) or notified (%d)", s.Len(), notified)
			}
			// The session is still usable and seq 0 is still free.
			if e := appendEvent(t, s, "plugin/x", 1); e.Seq != 0 {
				t.Fatalf("next seq %d", e.Seq)
			}
		})
	}
}

func TestFailingNotifierLeavesEventInLog(t *testing.T) {
	s := newSession(t)
	boom := errors.New("listener failed")
	s.SetNotifier(func(_ context.Context, _ *session.Session, e session.Event) error {
		if e.Seq == 0 {
			return boom
		}
		return nil
	})
	e, err := s.Append(ctx, "plugin/x", 1)
	if !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	// Push, then notify: the fact is recorded even though an observer failed.
	if s.Len() != 1 || e.Seq != 0 || string(e.Data) != "1" {
		t.Fatalf("len %d event %+v", s.Len(), e)
	}
	if e := appendEvent(t, s, "plugin/x", 2); e.Seq != 1 {
		t.Fatalf("next seq %d", e.Seq)
	}
}

func TestReentrantAppendIsDeliveredInOrder(t *testing.T) {
	s := newSession(t)
	var seen []int64
	var seenWhenInnerReturned []int64
	s.SetNotifier(func(ctx context.Context, s *session.Session, e session.Event) error {
		seen = append(seen, e.Seq)
		if e.Seq == 0 {
			// A listener reacts to an event by appending two more.
			if _, err := s.Append(ctx, "plugin/reaction", 1); err != nil {
				return err
			}
			if _, err := s.Append(ctx, "plugin/reaction", 2); err != nil {
				return err
			}
			seenWhenInnerReturned = slices.Clone(seen)
		}
		return nil
	})
	if _, err := s.Append(ctx, "plugin/x", 0); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []int64{0, 1, 2}) {
		t.Fatalf("delivered %v", seen)
	}
	// The inner appends were queued, not delivered inside the listener of
	// seq 0, so no listener ever sees seq 1 before it has finished with 0.
	if !slices.Equal(seenWhenInnerReturned, []int64{0}) {
		t.Fatalf("seen while handling seq 0: %v", seenWhenInnerReturned)
	}
}

func TestReentrantChainAndErrorGoesToDeliverer(t *testing.T) {
	st := session.NewLive(fixedClock)
	s, err := st.Create(ctx, kernel.NewScope("t"), "s", session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var seen []int64
	boom := errors.New("seq 3 rejected")
	st.Appended.Listen(func(ctx context.Context, a session.Appended) error {
		seen = append(seen, a.Event.Seq)
		if a.Event.Seq == 3 {
			return boom
		}
		if a.Event.Seq < 5 {
			_, err := a.Session.Append(ctx, "plugin/next", a.Event.Seq+1)
			if err != nil {
				t.Errorf("inner append of %d: %v", a.Event.Seq+1, err)
			}
		}
		return nil
	})
	_, err = s.Append(ctx, "plugin/first", 0)
	if !slices.Equal(seen, []int64{0, 1, 2, 3}) || s.Len() != 4 {
		t.Fatalf("seen %v len %d", seen, s.Len())
	}
	// A queued event's failure is reported by the append that delivered it.
	if !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
}

func TestConcurrentAppendsAreDeliveredInSeqOrder(t *testing.T) {
	st := session.NewLive(fixedClock)
	s, err := st.Create(ctx, kernel.NewScope("t"), "s", session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []int64
	inListener := 0
	st.Appended.Listen(func(_ context.Context, a session.Appended) error {
		mu.Lock()
		inListener++
		overlap := inListener > 1
		seen = append(seen, a.Event.Seq)
		mu.Unlock()
		if overlap {
			return errors.New("two deliveries overlapped")
		}
		mu.Lock()
		inListener--
		mu.Unlock()
		return nil
	})
	const goroutines, each = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				if _, err := s.Append(ctx, "plugin/x", g*each+i); err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != goroutines*each || s.Len() != goroutines*each {
		t.Fatalf("delivered %d of %d (log %d)", len(seen), goroutines*each, s.Len())
	}
	for i, seq := range seen {
		if seq != int64(i) {
			t.Fatalf("delivery %d was seq %d: not strictly increasing", i, seq)
		}
	}
}

// --- seed (§16 51) --------------------------------------------------------

func rawEvent(seq int64, typ, data string, op *session.SurfaceOp, src ...int64) session.Event {
	e := session.Event{Type: typ, Seq: seq, Time: 10 + seq, Data: json.RawMessage(data), SurfaceOp: op}
	if len(src) > 0 {
		e.SourceEventSeqs = src
	}
	return e
}

func op(o session.SurfaceOp) *session.SurfaceOp { return &o }

func TestSeedValidation(t *testing.T) {
	userData := `{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}}`
	cases := []struct {
		name string
		seed []session.Event
		want string
	}{
		{"seq gap", []session.Event{
			rawEvent(0, session.TypeTurnStart, `{"turn":1}`, nil),
			rawEvent(2, session.TypeUserMessage, userData, op(session.AppendOp)),
		}, "session: seed event at index 1 has seq 2 (expected 1); seed must be contiguous from 0"},
		{"not from zero", []session.Event{rawEvent(1, session.TypeTurnStart, `{"turn":1}`, nil)},
			"session: seed event at index 0 has seq 1 (expected 0); seed must be contiguous from 0"},
		{"marker-less surface event", []session.Event{
			rawEvent(0, session.TypeTurnStart, `{"turn":1}`, nil),
			rawEvent(1, session.TypeUserMessage, userData, nil),
		}, `session: seed event "user/message" (seq 1) is surface-eligible but carries no surfaceOp marker`},
		{"non-JSON data (a BigInt literal)", []session.Event{rawEvent(0, "plugin/x", `{"n":1n}`, nil)},
			`session: seed event "plugin/x" (seq 0) carries non-JSON data`},
		{"missing data", []session.Event{{Type: "plugin/x", Seq: 0}},
			`session: seed event "plugin/x" (seq 0) carries non-JSON data`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := session.New("s", session.Options{Seed: c.seed})
			wantErr(t, err, c.want)
		})
	}
}

func TestSeedIsDeepCopiedAndNotAnnounced(t *testing.T) {
	seed := []session.Event{
		rawEvent(0, session.TypeTurnStart, `{"turn":1,"trigger":{"kind":"message"}}`, nil),
		rawEvent(1, session.TypeUserMessage, `{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}}`, op(session.AppendOp)),
		rawEvent(2, session.TypeAssistantMessage, `{"turn":1,"step":1,"content":[{"type":"text","text":"yo"}]}`, op(session.AppendOp), 1),
	}
	st := session.NewLive(fixedClock)
	notified := 0
	st.Appended.Listen(func(context.Context, session.Appended) error { notified++; return nil })
	s, err := st.Create(ctx, kernel.NewScope("t"), "s", session.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	before := jsonOf(t, s.Events())
	// Mutate every buffer of the caller's seed.
	seed[1].Data[2] = 'X'
	seed[2].SourceEventSeqs[0] = 42
	*seed[2].SurfaceOp = session.ReplaceOp(0, 0)
	seed[0].Type = "mutated"
	if after := jsonOf(t, s.Events()); after != before {
		t.Fatalf("seed shared memory with the session:\nbefore %s\nafter  %s", before, after)
	}
	if notified != 0 {
		t.Fatalf("seed events were announced %d times", notified)
	}
	if got := messages(t, s); len(got) != 2 || llm.TextOf(got[1].Content) != "yo" {
		t.Fatalf("derived %+v", got)
	}
	// Appends continue after the seed.
	if e := appendEvent(t, s, "plugin/x", 1); e.Seq != 3 || notified != 1 {
		t.Fatalf("seq %d notified %d", e.Seq, notified)
	}
}

func TestNewHeader(t *testing.T) {
	s, err := session.New("given", session.Options{Clock: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	if h := s.Header(); h.ID != "given" || h.CreatedAt != now || h.Version != 0 || s.ID() != "given" {
		t.Fatalf("header %+v", h)
	}
	s, err = session.New("ignored", session.Options{Header: session.Header{ID: "from-header", CreatedAt: 5, Cwd: "/w"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.ID() != "from-header" || s.Header().CreatedAt != 5 || s.Cwd() != "/w" {
		t.Fatalf("header %+v", s.Header())
	}
	_, err = session.New("v", session.Options{Header: session.Header{Version: 1}})
	wantErr(t, err, "session: unsupported format version 1 (only 0)")
}

// --- surface (§16 50) -----------------------------------------------------

func threeUsers(t *testing.T) *session.Session {
	s := newSession(t)
	for _, m := range []string{"u0", "u1", "u2"} {
		user(t, s, m)
	}
	return s
}

func TestSurfaceReplace(t *testing.T) {
	t.Run("replace 0..1", func(t *testing.T) {
		s := threeUsers(t)
		appendSurface(t, s, session.TypeAssistantMessage, session.AssistantMessage{Content: text("summary")}, session.ReplaceOp(0, 1), 0, 1)
		if got := surface(t, s); !slices.Equal(got, []int64{3, 2}) {
			t.Fatalf("surface %v", got)
		}
		m := messages(t, s)
		if len(m) != 2 || m[0].Role != llm.RoleAssistant || llm.TextOf(m[0].Content) != "summary" || llm.TextOf(m[1].Content) != "u2" {
			t.Fatalf("messages %+v", m)
		}
	})
	t.Run("replace 1..1", func(t *testing.T) {
		s := threeUsers(t)
		appendSurface(t, s, session.TypeUserMessage, session.Prompt{Content: text("one")}, session.ReplaceOp(1, 1), 1)
		if got := surface(t, s); !slices.Equal(got, []int64{0, 3, 2}) {
			t.Fatalf("surface %v", got)
		}
	})
	t.Run("start seq greater than end seq by position order", func(t *testing.T) {
		s := threeUsers(t)
		appendSurface(t, s, session.TypeUserMessage, session.Prompt{Content: text("head")}, session.ReplaceOp(0, 1), 0, 1)
		// Surface is now [3, 2]: start 3 > end 2 numerically, but 3 comes first.
		appendSurface(t, s, session.TypeUserMessage, session.Prompt{Content: text("all")}, session.ReplaceOp(3, 2), 3, 2)
		if got := surface(t, s); !slices.Equal(got, []int64{4}) {
			t.Fatalf("surface %v", got)
		}
	})
	errCases := []struct {
		name       string
		start, end int64
		want       string
	}{
		{"unknown start", 5, 1, "session: surface replace: start seq 5 not found in surface"},
		{"unknown end", 0, 7, "session: surface replace: end seq 7 not found in surface"},
		{"reversed", 1, 0, "session: surface replace: start seq 1 (index 1) is after end seq 0 (index 0)"},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			s := threeUsers(t)
			// The append itself succeeds: the error surfaces when the surface is read.
			appendSurface(t, s, session.TypeUserMessage, session.Prompt{Content: text("bad")}, session.ReplaceOp(c.start, c.end), 0)
			_, err := s.Surface()
			wantErr(t, err, c.want)
			_, err = s.Messages()
			wantErr(t, err, c.want)
		})
	}
}

func TestNonSurfaceEventsNeverChangeMessages(t *testing.T) {
	s := newSession(t)
	user(t, s, "hi")
	want := jsonOf(t, messages(t, s))
	appendEvent(t, s, session.TypeTurnStart, session.TurnStart{Turn: 1})
	appendEvent(t, s, session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1, Chunk: llm.TextChunk(0, "x")})
	appendEvent(t, s, session.TypeToolCall, session.ToolCall{CallID: "c", Name: "n", Arguments: "{}"})
	appendEvent(t, s, "plugin/anything", map[string]int{"a": 1})
	if got := jsonOf(t, messages(t, s)); got != want {
		t.Fatalf("messages changed: %s", got)
	}
	if got := surface(t, s); !slices.Equal(got, []int64{0}) {
		t.Fatalf("surface %v", got)
	}
}

// --- derivation -----------------------------------------------------------

func TestEnvelopeRendersOnlyTheSourceKind(t *testing.T) {
	s := newSession(t)
	appendSurface(t, s, session.TypeContextMessage, session.Prompt{Content: text("ctx body"), Source: llm.PluginSource("hooks-claude")}, session.AppendOp)
	appendSurface(t, s, session.TypeSteeringMessage, session.Steering{Turn: 1, Content: []llm.Block{llm.Text("a"), llm.Text("b")}, Source: llm.Source{Kind: llm.SourceAgent, AgentID: "boss"}}, session.AppendOp)
	appendSurface(t, s, session.TypeContextMessage, session.Prompt{Content: text("no source")}, session.AppendOp)
	got := messages(t, s)
	want := []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Block{llm.Text(`<context source="plugin">`), llm.Text("ctx body"), llm.Text("</context>")}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.Text(`<steering source="agent">`), llm.Text("a"), llm.Text("b"), llm.Text("</steering>")}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.Text(`<context source="user">`), llm.Text("no source"), llm.Text("</context>")}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %s\nwant %s", jsonOf(t, got), jsonOf(t, want))
	}
	if all := jsonOf(t, got); strings.Contains(all, "hooks-claude") || strings.Contains(all, "boss") {
		t.Fatalf("plugin name or agent id leaked to the model: %s", all)
	}
}

func TestEmptyAssistantMessageIsSkipped(t *testing.T) {
	s := newSession(t)
	user(t, s, "hi")
	appendSurface(t, s, session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1, Content: []llm.Block{}, Usage: &llm.Usage{InputTokens: 3}}, session.AppendOp)
	user(t, s, "again")
	m := messages(t, s)
	if len(m) != 2 || m[0].Role != llm.RoleUser || m[1].Role != llm.RoleUser {
		t.Fatalf("messages %+v", m)
	}
	// Still on the surface (it is a node), just not a message; adjacent user
	// messages are not merged.
	if got := surface(t, s); !slices.Equal(got, []int64{0, 1, 2}) {
		t.Fatalf("surface %v", got)
	}
}

func TestToolResultDerivation(t *testing.T) {
	s := newSession(t)
	appendSurface(t, s, session.TypeToolResult, session.ToolResult{Turn: 1, Step: 1, CallID: "c1", Content: text("out"), IsError: true,
		Error: &session.ErrorInfo{Name: "ToolError", Code: "X"}, Meta: json.RawMessage(`{"secret":"presentation only"}`)}, session.AppendOp)
	appendSurface(t, s, session.TypeToolResult, session.ToolResult{Turn: 1, Step: 1, CallID: "c2"}, session.AppendOp)
	got := messages(t, s)
	want := `[{"role":"user","content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"out"}],"isError":true}]},` +
		`{"role":"user","content":[{"type":"tool-result","toolCallId":"c2","content":[],"isError":false}]}]`
	if j := jsonOf(t, got); j != want {
		t.Fatalf("got  %s\nwant %s", j, want)
	}
}

func TestDerivedMessagesShareNoMemoryWithTheLog(t *testing.T) {
	s := newSession(t)
	user(t, s, "original")
	m := messages(t, s)
	m[0].Content[0].Text = "mutated by a request listener"
	logged, _ := s.Event(0)
	p, err := session.Decode[session.Prompt](logged)
	if err != nil || llm.TextOf(p.Content) != "original" {
		t.Fatalf("log changed: %+v %v", p, err)
	}
}

func TestRewriteOverlay(t *testing.T) {
	s := newSession(t)
	user(t, s, "go")
	assistant(t, s, llm.Text("calling"), llm.ToolCall("c1", "echo", `{"text":"rm -rf /"}`))
	before := messages(t, s)
	beforeJSON := jsonOf(t, before)
	orig := `{"text":"rm -rf /"}`
	toolCall(t, s, "c1", `{"text":"safe"}`, &orig)
	toolResult(t, s, "c1", "safe")
	m := messages(t, s)
	if got := m[1].Content[1].Arguments; got != `{"text":"safe"}` {
		t.Fatalf("derived arguments %s, want the effective ones", got)
	}
	// The log keeps what the model said; earlier results are not patched.
	am, _ := session.Decode[session.AssistantMessage](s.Events()[1])
	if am.Content[1].Arguments != orig {
		t.Fatalf("log rewritten: %s", am.Content[1].Arguments)
	}
	if jsonOf(t, before) != beforeJSON {
		t.Fatal("a previously returned history was modified in place")
	}
	// A tool/call without OriginalArguments changes nothing.
	assistant(t, s, llm.ToolCall("c2", "echo", `{"text":"b"}`))
	toolCall(t, s, "c2", `{"text":"b"}`, nil)
	if got := messages(t, s)[3].Content[0].Arguments; got != `{"text":"b"}` {
		t.Fatalf("arguments %s", got)
	}
}

// A live append may carry block values with fields their variant never
// writes (a signature on a text block, text on a tool call); the live
// history must still be what the log says, i.e. what a resumed session
// derives from disk.
func TestLiveHistoryMatchesResumedHistory(t *testing.T) {
	s := newSession(t)
	appendSurface(t, s, session.TypeUserMessage, session.Prompt{Content: []llm.Block{{Type: llm.BlockText, Text: "hi", Signature: "stray", ID: "x"}}}, session.AppendOp)
	assistant(t, s, llm.Block{Type: llm.BlockToolCall, ID: "c1", Name: "echo", Arguments: "{}", Text: "stray", Cache: llm.CacheEphemeral},
		llm.Block{Type: "plugin-note", Raw: json.RawMessage(`{"type":"plugin-note","text":"raw text"}`)})
	appendSurface(t, s, session.TypeToolResult, session.ToolResult{CallID: "c1", Content: []llm.Block{{Type: llm.BlockToolResult, ToolCallID: "inner"}}}, session.AppendOp)
	live := messages(t, s)
	resumed := messages(t, seeded(t, fromDisk(t, s.Events())))
	if !reflect.DeepEqual(live, resumed) {
		t.Fatalf("live    %#v\nresumed %#v", live, resumed)
	}
	if b := live[0].Content[0]; b.Signature != "" || b.ID != "" {
		t.Fatalf("stray fields reached the model: %#v", b)
	}
}

// Models (and the scripted adapter) may reuse a call id in a later step; a
// rewrite of the earlier call must not leak into the later one.
func TestRewriteDoesNotLeakToReusedCallID(t *testing.T) {
	s := newSession(t)
	user(t, s, "go")
	assistant(t, s, llm.ToolCall("c1", "echo", `{"n":1}`))
	orig := `{"n":1}`
	toolCall(t, s, "c1", `{"n":100}`, &orig)
	toolResult(t, s, "c1", "r1")
	assistant(t, s, llm.ToolCall("c1", "echo", `{"n":2}`))
	toolCall(t, s, "c1", `{"n":2}`, nil)
	toolResult(t, s, "c1", "r2")
	m := messages(t, s)
	if a1, a2 := m[1].Content[0].Arguments, m[3].Content[0].Arguments; a1 != `{"n":100}` || a2 != `{"n":2}` {
		t.Fatalf("first call %s (want the rewrite), second call %s (want its own arguments)", a1, a2)
	}
	if fresh := messages(t, seeded(t, fromDisk(t, s.Events()))); !reflect.DeepEqual(fresh, m) {
		t.Fatalf("fresh derivation differs:\n%s\n%s", jsonOf(t, fresh), jsonOf(t, m))
	}
}

// TestIncrementalDerivationMatchesFresh is the derivation's core property:
// folding the log one append at a time gives exactly what a fresh session
// seeded with the same log, read back from its JSON form, derives (a live
// session and its resumption show the model the same history), the surface follows the spec's list
// algorithm, and histories returned earlier are never changed afterwards.
func TestIncrementalDerivationMatchesFresh(t *testing.T) {
	ids := []llm.CallID{"c1", "c2", "c3"}
	rapid.Check(t, func(rt *rapid.T) {
		s := newSession(rt)
		var model []int64 // the surface per §5.6.2, nil once broken
		broken := false
		type snapshot struct {
			msgs []llm.Message
			json string
		}
		var snaps []snapshot
		var disk []session.Event // the log as read back from JSON, so far
		steps := rapid.IntRange(1, 40).Draw(rt, "steps")
		for i := range steps {
			seq := int64(s.Len())
			switch kind := rapid.IntRange(0, 7).Draw(rt, "kind"); kind {
			case 0:
				content := []llm.Block{blockGen(fmt.Sprintf("u%d", i)).Draw(rt, "block")}
				appendSurface(rt, s, session.TypeUserMessage, session.Prompt{Content: content}, session.AppendOp)
				model = append(model, seq)
			case 1:
				var content []llm.Block
				for j := range rapid.IntRange(0, 3).Draw(rt, "blocks") {
					if rapid.Bool().Draw(rt, "isCall") {
						id := rapid.SampledFrom(ids).Draw(rt, "id")
						content = append(content, llm.ToolCall(id, "echo", fmt.Sprintf(`{"i":%d}`, i)))
					} else {
						content = append(content, blockGen(fmt.Sprintf("a%d.%d", i, j)).Draw(rt, "block"))
					}
				}
				assistant(rt, s, content...)
				model = append(model, seq)
			case 2:
				id := rapid.SampledFrom(ids).Draw(rt, "id")
				var orig *string
				if rapid.Bool().Draw(rt, "rewritten") {
					o := fmt.Sprintf(`{"i":%d}`, i)
					orig = &o
				}
				toolCall(rt, s, id, fmt.Sprintf(`{"rewritten":%d}`, i), orig)
			case 3:
				toolResult(rt, s, rapid.SampledFrom(ids).Draw(rt, "id"), fmt.Sprintf("r%d", i))
				model = append(model, seq)
			case 4:
				appendSurface(rt, s, session.TypeContextMessage, session.Prompt{Content: text("c"), Source: llm.PluginSource("p")}, session.AppendOp)
				model = append(model, seq)
			case 5:
				appendSurface(rt, s, session.TypeSteeringMessage, session.Steering{Content: text("s")}, session.AppendOp)
				model = append(model, seq)
			case 6:
				appendEvent(rt, s, session.TypeAssistantChunk, session.AssistantChunk{Chunk: llm.TextChunk(0, "x")})
			case 7:
				var start, end int64
				if len(model) > 0 && rapid.IntRange(0, 9).Draw(rt, "valid") > 0 {
					i := rapid.IntRange(0, len(model)-1).Draw(rt, "i")
					j := rapid.IntRange(i, len(model)-1).Draw(rt, "j")
					start, end = model[i], model[j]
				} else {
					start = rapid.Int64Range(0, seq+1).Draw(rt, "start")
					end = rapid.Int64Range(0, seq+1).Draw(rt, "end")
				}
				typ := rapid.SampledFrom([]string{session.TypeUserMessage, session.TypeAssistantMessage}).Draw(rt, "replacement")
				var data any = session.Prompt{Content: text(fmt.Sprintf("summary %d", i))}
				if typ == session.TypeAssistantMessage {
					data = session.AssistantMessage{Content: text(fmt.Sprintf("summary %d", i))}
				}
				appendSurface(rt, s, typ, data, session.ReplaceOp(start, end), start)
				i, j := slices.Index(model, start), slices.Index(model, end)
				if i < 0 || j < 0 || i > j {
					broken = true
				} else {
					model = slices.Concat(model[:i], []int64{seq}, model[j+1:])
				}
			}

			got, gerr := s.Messages()
			disk = append(disk, fromDisk(rt, s.Events()[len(disk):])...)
			want, werr := seeded(rt, disk).Messages()
			if fmt.Sprint(gerr) != fmt.Sprint(werr) {
				rt.Fatalf("after seq %d: incremental error %v, fresh error %v", seq, gerr, werr)
			}
			if !reflect.DeepEqual(got, want) {
				rt.Fatalf("after seq %d:\nincremental %s\nfresh       %s", seq, jsonOf(rt, got), jsonOf(rt, want))
			}
			sf, serr := s.Surface()
			if broken != (serr != nil) {
				rt.Fatalf("after seq %d: surface error %v, model broken %v", seq, serr, broken)
			}
			if !broken && !slices.Equal(sf, model) {
				rt.Fatalf("after seq %d: surface %v, model %v", seq, sf, model)
			}
			if gerr == nil {
				snaps = append(snaps, snapshot{got, jsonOf(rt, got)})
			}
		}
		for k, sn := range snaps {
			if j := jsonOf(rt, sn.msgs); j != sn.json {
				rt.Fatalf("history returned at read %d changed later:\nwas %s\nnow %s", k, sn.json, j)
			}
		}
	})
}

// fromDisk round-trips events through their JSON form, as a resume from a
// persisted log does, so nothing but the log's own content survives.
func fromDisk(t tb, events []session.Event) []session.Event {
	t.Helper()
	b, err := json.Marshal(events)
	if err != nil {
		t.Fatalf("encoding log: %v", err)
	}
	var out []session.Event
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decoding log: %v", err)
	}
	return out
}

// blockGen draws content blocks, including ones whose Go value carries more
// than their wire form (fields of another variant, unknown plugin blocks):
// the derived history must be what the log says, whatever the value was.
func blockGen(text string) *rapid.Generator[llm.Block] {
	return rapid.Custom(func(rt *rapid.T) llm.Block {
		switch rapid.IntRange(0, 6).Draw(rt, "variant") {
		case 1:
			b := llm.Text(text)
			b.Cache = llm.CacheEphemeral
			return b
		case 2:
			return llm.Block{Type: llm.BlockReasoning, Text: text, Signature: "sig"}
		case 3:
			return llm.Block{Type: llm.BlockImage, URL: "https://example.com/" + text + ".png", MimeType: "image/png"}
		case 4:
			return llm.Block{Type: "plugin-note", Raw: json.RawMessage(`{"type":"plugin-note","note":"` + text + `"}`)}
		case 5: // a text block that also carries a reasoning signature
			return llm.Block{Type: llm.BlockText, Text: text, Signature: "stray"}
		case 6: // a tool call that also carries text
			return llm.Block{Type: llm.BlockToolCall, ID: "cx", Name: "echo", Arguments: "{}", Text: text}
		}
		return llm.Text(text)
	})
}

// --- crash closers (§16 52) -----------------------------------------------

func TestInterruptedClosers(t *testing.T) {
	const result = `{"turn":2,"step":1,"callId":"call-1","content":[{"type":"text","text":"Tool call interrupted by a crash; no result was recorded."}],"isError":true,"error":{"name":"InterruptedError","code":"interrupted"}}`
	open := []session.Event{
		rawEvent(0, session.TypeTurnStart, `{"turn":2,"trigger":{"kind":"message"}}`, nil),
		rawEvent(1, session.TypeStepStart, `{"turn":2,"step":1}`, nil),
		rawEvent(2, session.TypeAssistantMessage, `{"turn":2,"step":1,"content":[{"type":"tool-call","id":"call-1","name":"bash","arguments":"{}"}]}`, op(session.AppendOp)),
	}
	with := func(extra ...session.Event) []session.Event { return append(slices.Clone(open), extra...) }
	type closer struct {
		typ, data string
		seq       int64
		op        *session.SurfaceOp
		src       []int64
	}
	cases := []struct {
		name   string
		events []session.Event
		want   []closer
	}{
		{"pending call", open, []closer{
			{session.TypeToolResult, result, 3, op(session.AppendOp), nil},
			{session.TypeStepEnd, `{"turn":2,"step":1}`, 4, nil, nil},
			{session.TypeTurnEnd, `{"turn":2,"reason":{"kind":"interrupted"}}`, 5, nil, nil},
		}},
		{"call already answered", with(
			rawEvent(3, session.TypeToolCall, `{"turn":2,"step":1,"callId":"call-1","name":"bash","arguments":"{}"}`, nil),
			rawEvent(4, session.TypeToolResult, `{"turn":2,"step":1,"callId":"call-1","content":[],"isError":false}`, op(session.AppendOp), 3),
		), []closer{
			{session.TypeStepEnd, `{"turn":2,"step":1}`, 5, nil, nil},
			{session.TypeTurnEnd, `{"turn":2,"reason":{"kind":"interrupted"}}`, 6, nil, nil},
		}},
		{"step already closed", with(rawEvent(3, session.TypeStepEnd, `{"turn":2,"step":1}`, nil)), []closer{
			{session.TypeTurnEnd, `{"turn":2,"reason":{"kind":"interrupted"}}`, 4, nil, nil},
		}},
		{"logged tool/call", with(rawEvent(3, session.TypeToolCall, `{"turn":2,"step":1,"callId":"call-1","name":"bash","arguments":"{}"}`, nil)), []closer{
			{session.TypeToolResult, result, 4, op(session.AppendOp), []int64{3}},
			{session.TypeStepEnd, `{"turn":2,"step":1}`, 5, nil, nil},
			{session.TypeTurnEnd, `{"turn":2,"reason":{"kind":"interrupted"}}`, 6, nil, nil},
		}},
		{"tool/call for an unknown id is ignored", with(rawEvent(3, session.TypeToolCall, `{"turn":2,"step":1,"callId":"other","name":"bash","arguments":"{}"}`, nil)), []closer{
			{session.TypeToolResult, result, 4, op(session.AppendOp), nil},
			{session.TypeStepEnd, `{"turn":2,"step":1}`, 5, nil, nil},
			{session.TypeTurnEnd, `{"turn":2,"reason":{"kind":"interrupted"}}`, 6, nil, nil},
		}},
		{"turn closed", with(
			rawEvent(3, session.TypeStepEnd, `{"turn":2,"step":1}`, nil),
			rawEvent(4, session.TypeTurnEnd, `{"turn":2,"reason":{"kind":"completed"}}`, nil),
		), nil},
		{"empty log", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := session.InterruptedClosers(c.events)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d closers, want %d: %s", len(got), len(c.want), jsonOf(t, got))
			}
			lastTime := int64(0)
			if len(c.events) > 0 {
				lastTime = c.events[len(c.events)-1].Time
			}
			for i, w := range c.want {
				g := got[i]
				if g.Type != w.typ || g.Seq != w.seq || string(g.Data) != w.data || g.Time != lastTime {
					t.Errorf("closer %d: %s seq %d time %d %s\nwant       %s seq %d time %d %s", i, g.Type, g.Seq, g.Time, g.Data, w.typ, w.seq, lastTime, w.data)
				}
				if !reflect.DeepEqual(g.SurfaceOp, w.op) || !slices.Equal(g.SourceEventSeqs, w.src) {
					t.Errorf("closer %d: surfaceOp %v src %v, want %v %v", i, g.SurfaceOp, g.SourceEventSeqs, w.op, w.src)
				}
			}
			// The closed log is acceptable as a seed and closes the turn.
			if len(got) > 0 {
				all := append(slices.Clone(c.events), got...)
				if _, err := session.New("closed", session.Options{Seed: all}); err != nil {
					t.Fatalf("closed log rejected as a seed: %v", err)
				}
				if again, _ := session.InterruptedClosers(all); len(again) != 0 {
					t.Fatalf("closing twice added %d events", len(again))
				}
			}
		})
	}
}

func TestInterruptedClosersPendingInOrder(t *testing.T) {
	events := []session.Event{
		rawEvent(0, session.TypeTurnStart, `{"turn":1}`, nil),
		rawEvent(1, session.TypeStepStart, `{"turn":1,"step":1}`, nil),
		rawEvent(2, session.TypeAssistantMessage, `{"turn":1,"step":1,"content":[{"type":"tool-call","id":"b","name":"x","arguments":"{}"},{"type":"tool-call","id":"a","name":"x","arguments":"{}"},{"type":"tool-call","id":"c","name":"x","arguments":"{}"}]}`, op(session.AppendOp)),
		rawEvent(3, session.TypeToolCall, `{"turn":1,"step":1,"callId":"b","name":"x","arguments":"{}"}`, nil),
		rawEvent(4, session.TypeToolResult, `{"turn":1,"step":1,"callId":"b","content":[],"isError":false}`, op(session.AppendOp), 3),
	}
	got, err := session.InterruptedClosers(events)
	if err != nil {
		t.Fatal(err)
	}
	var ids []llm.CallID
	for _, e := range got {
		if e.Type == session.TypeToolResult {
			tr, _ := session.Decode[session.ToolResult](e)
			ids = append(ids, tr.CallID)
		}
	}
	if !slices.Equal(ids, []llm.CallID{"a", "c"}) {
		t.Fatalf("synthetic results for %v", ids)
	}
}

func TestCompletedPrefix(t *testing.T) {
	events := []session.Event{
		rawEvent(0, session.TypeTurnStart, `{"turn":1}`, nil),
		rawEvent(1, session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`, nil),
		rawEvent(2, session.TypeTurnStart, `{"turn":2}`, nil),
		rawEvent(3, session.TypeTurnEnd, `{"turn":2,"reason":{"kind":"completed"}}`, nil),
		rawEvent(4, session.TypeTurnStart, `{"turn":3}`, nil),
		rawEvent(5, session.TypeStepStart, `{"turn":3,"step":1}`, nil),
	}
	p := session.CompletedPrefix(events)
	if len(p) != 4 || p[3].Seq != 3 {
		t.Fatalf("prefix %d events", len(p))
	}
	// The prefix's capacity is clipped: appending to it never overwrites the
	// in-flight turn of the source.
	_ = append(p, rawEvent(4, "x", "1", nil))
	if events[4].Type != session.TypeTurnStart {
		t.Fatal("appending to the prefix clobbered the source")
	}
	if session.CompletedPrefix(events[:1]) != nil || session.CompletedPrefix(nil) != nil {
		t.Fatal("a log without turn/end has no completed prefix")
	}
}

// --- tool-pairing balance -------------------------------------------------

func TestBalanced(t *testing.T) {
	s := newSession(t)
	user(t, s, "go")                                                            // 0
	assistant(t, s, llm.ToolCall("a", "x", "{}"), llm.ToolCall("b", "x", "{}")) // 1
	toolResult(t, s, "a", "ra")                                                 // 2
	toolResult(t, s, "b", "rb")                                                 // 3
	assistant(t, s, llm.Text("done"))                                           // 4
	assistant(t, s, llm.ToolCall("c", "x", "{}"))                               // 5 (unanswered)
	events, sf := s.Events(), surface(t, s)
	cases := []struct {
		before int64
		want   bool
	}{
		{0, true}, {1, true}, {2, false}, {3, false}, {4, true}, {5, true},
		{-1, false}, // the whole surface: c is unanswered
		{99, false}, // not on the surface: whole surface
	}
	for _, c := range cases {
		got, err := session.Balanced(events, sf, c.before)
		if err != nil || got != c.want {
			t.Errorf("before %d: %v %v, want %v", c.before, got, err, c.want)
		}
	}
	if ok, err := session.Balanced(events, sf[:5], -1); err != nil || !ok {
		t.Fatalf("balanced prefix: %v %v", ok, err)
	}
}

func TestBalancedCorruptSurface(t *testing.T) {
	s := newSession(t)
	user(t, s, "go")
	toolResult(t, s, "orphan", "r")
	_, err := session.Balanced(s.Events(), surface(t, s), -1)
	wantErr(t, err, "session: tool-pairing balance: tool/result at surface seq 1 has no matching tool-call (corrupt surface)")
	_, err = session.Balanced(s.Events(), []int64{0, 9}, -1)
	wantErr(t, err, "session: surface seq 9 is not in the log")
}

// --- store ----------------------------------------------------------------

func TestStorePrepare(t *testing.T) {
	st := session.NewLive(fixedClock)
	s1, err := st.Prepare("", session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := st.Prepare("", session.Options{})
	if s1.ID() != "session-1" || s2.ID() != "session-2" {
		t.Fatalf("ids %s %s", s1.ID(), s2.ID())
	}
	if h := s1.Header(); h.CreatedAt != now || h.ID != "session-1" {
		t.Fatalf("header %+v", h)
	}
	if _, ok := st.Get("session-1"); ok || len(st.List()) != 0 {
		t.Fatal("Prepare entered the store")
	}
	h := session.Header{ID: "ignored", CreatedAt: 7, Cwd: "/work", ParentSession: "parent", SeedLength: 0}
	s3, err := st.Prepare("named", session.Options{Header: h})
	if err != nil {
		t.Fatal(err)
	}
	if got := s3.Header(); got.ID != "named" || got.CreatedAt != 7 || got.Cwd != "/work" || got.ParentSession != "parent" {
		t.Fatalf("header %+v", got)
	}

	_, err = st.Prepare("rel", session.Options{Header: session.Header{Cwd: "rel/dir"}})
	wantErr(t, err, `session: session cwd must be an absolute path, got "rel/dir"`)

	if _, err := st.Enter(s3); err != nil {
		t.Fatal(err)
	}
	_, err = st.Prepare("named", session.Options{})
	wantErr(t, err, `session: session "named" already exists`)

	_, err = st.Prepare("seeded", session.Options{Seed: []session.Event{rawEvent(1, "x", "1", nil)}})
	wantErr(t, err, "session: seed event at index 0 has seq 1 (expected 0); seed must be contiguous from 0")
}

func TestStoreEnterRejectsStaleDuplicate(t *testing.T) {
	st := session.NewLive(fixedClock)
	live, _ := st.Prepare("x", session.Options{})
	stale, _ := st.Prepare("x", session.Options{}) // prepared before live entered
	detach, err := st.Enter(live)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Enter(stale)
	wantErr(t, err, `session: session "x" already exists`)
	if got, _ := st.Get("x"); got != live {
		t.Fatal("a stale prepared session replaced the live one")
	}
	detach()
	detach()
	if _, ok := st.Get("x"); ok {
		t.Fatal("detach left the session in the store")
	}
}

func TestStoreCreateAnnouncesAndNotifies(t *testing.T) {
	st := session.NewLive(fixedClock)
	var created []session.ID
	var appended []int64
	st.Created.Listen(func(_ context.Context, s *session.Session) error {
		created = append(created, s.ID())
		return nil
	})
	st.Appended.Listen(func(_ context.Context, a session.Appended) error {
		appended = append(appended, a.Event.Seq)
		return nil
	})
	scope := kernel.NewScope("owner")
	a, err := st.Create(ctx, scope, "a", session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Create(ctx, scope, "", session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(created, []session.ID{"a", "session-1"}) {
		t.Fatalf("created %v", created)
	}
	if l := st.List(); len(l) != 2 || l[0] != a || l[1] != b {
		t.Fatalf("list %v", l)
	}
	appendEvent(t, a, "plugin/x", 1)
	appendEvent(t, b, "plugin/x", 1)
	if len(appended) != 2 {
		t.Fatalf("appended %v", appended)
	}
	// Closing the owner detaches: later appends are silent.
	if err := scope.Close(); err != nil {
		t.Fatal(err)
	}
	appendEvent(t, a, "plugin/x", 2)
	if len(appended) != 2 || len(st.List()) != 0 {
		t.Fatalf("after detach: appended %v, list %d", appended, len(st.List()))
	}
}

func TestStoreCreateRollsBackWhenCreatedListenerFails(t *testing.T) {
	st := session.NewLive(fixedClock)
	boom := errors.New("observer refused")
	dispose := st.Created.Listen(func(context.Context, *session.Session) error { return boom })
	appended := 0
	st.Appended.Listen(func(context.Context, session.Appended) error { appended++; return nil })
	scope := kernel.NewScope("owner")
	s, err := st.Create(ctx, scope, "x", session.Options{})
	if !errors.Is(err, boom) || s != nil {
		t.Fatalf("Create = %v, %v", s, err)
	}
	if _, ok := st.Get("x"); ok || len(st.List()) != 0 {
		t.Fatal("failed Create left the session in the store")
	}
	dispose()
	s, err = st.Create(ctx, scope, "x", session.Options{})
	if err != nil {
		t.Fatalf("the same id must be creatable after a rollback: %v", err)
	}
	appendEvent(t, s, "plugin/x", 1)
	if appended != 1 {
		t.Fatalf("appended %d", appended)
	}
}

func TestStoreFlush(t *testing.T) {
	st := session.NewLive(fixedClock)
	s, _ := st.Prepare("x", session.Options{})
	var mu sync.Mutex
	var flushed []session.ID
	for range 2 {
		st.Flush.Use(func(_ context.Context, s *session.Session) error {
			mu.Lock()
			flushed = append(flushed, s.ID())
			mu.Unlock()
			return nil
		})
	}
	boom := errors.New("disk full")
	st.Flush.Use(func(context.Context, *session.Session) error { return boom })
	if err := st.FlushSession(ctx, s); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if len(flushed) != 2 {
		t.Fatalf("flushed %v", flushed)
	}
}

func TestTurnQueries(t *testing.T) {
	s := newSession(t)
	if s.LastTurn() != 0 || s.TurnOpen() || s.HasTurnStart(1) {
		t.Fatal("empty session")
	}
	appendEvent(t, s, session.TypeTurnStart, session.TurnStart{Turn: 1})
	if s.LastTurn() != 1 || !s.TurnOpen() || !s.HasTurnStart(1) || s.HasTurnStart(2) {
		t.Fatal("open turn 1")
	}
	appendEvent(t, s, session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndCompleted}})
	if s.TurnOpen() || s.LastTurn() != 1 {
		t.Fatal("closed turn 1")
	}
	if e, ok := s.Last(session.TypeTurnStart); !ok || e.Seq != 0 {
		t.Fatalf("Last %+v %v", e, ok)
	}
	if _, ok := s.Last("nope"); ok {
		t.Fatal("Last of a missing type")
	}
}

// closed reports whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// WhenLonger's channel closes once the log holds more than n events.
func TestWhenLonger(t *testing.T) {
	s := newSession(t)
	ch := s.WhenLonger(0)
	if closed(ch) {
		t.Fatal("closed on an empty log")
	}
	appendEvent(t, s, "plugin/x", 1)
	if !closed(ch) || !closed(s.WhenLonger(0)) {
		t.Fatal("not closed after an append")
	}
	if ch := s.WhenLonger(1); closed(ch) {
		t.Fatal("closed although the log holds exactly n events")
	}
}

// WatchTurns' channel closes when a turn opens or closes, and only then.
func TestWatchTurns(t *testing.T) {
	s := newSession(t)
	st, ch := s.WatchTurns()
	if st.Open || st.Last != 0 || closed(ch) {
		t.Fatalf("empty session: %+v, closed %v", st, closed(ch))
	}
	appendEvent(t, s, "plugin/x", 1)
	if closed(ch) {
		t.Fatal("closed by an event that is no turn boundary")
	}
	appendEvent(t, s, session.TypeTurnStart, session.TurnStart{Turn: 1})
	if !closed(ch) {
		t.Fatal("not closed when the turn opened")
	}
	st, ch = s.WatchTurns()
	if !st.Open || st.Last != 1 {
		t.Fatalf("after turn/start: %+v", st)
	}
	_, same := s.WatchTurns()
	if same != ch {
		t.Fatal("two watchers of the same state got different channels")
	}
	user(t, s, "hi")
	if closed(ch) {
		t.Fatal("closed by a message")
	}
	appendEvent(t, s, session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndCompleted}})
	if !closed(ch) {
		t.Fatal("not closed when the turn closed")
	}
	if st, _ := s.WatchTurns(); st.Open || st.Last != 1 {
		t.Fatalf("after turn/end: %+v", st)
	}
}

// --- benchmark ------------------------------------------------------------

// history builds a log of n tool-using steps (11 events, 3 surface nodes each).
func history(b *testing.B, n int) []session.Event {
	s := newSession(b)
	for i := range n {
		turn := i + 1
		appendEvent(b, s, session.TypeTurnStart, session.TurnStart{Turn: turn})
		user(b, s, fmt.Sprintf("prompt %d", i))
		appendEvent(b, s, session.TypeStepStart, session.StepBoundary{Turn: turn, Step: 1})
		for range 3 {
			appendEvent(b, s, session.TypeAssistantChunk, session.AssistantChunk{Turn: turn, Step: 1, Chunk: llm.TextChunk(0, "x")})
		}
		id := llm.CallID(fmt.Sprintf("call-%d", i))
		assistant(b, s, llm.Text("let me look"), llm.ToolCall(id, "read", `{"path":"/etc/hosts"}`))
		toolCall(b, s, id, `{"path":"/etc/hosts"}`, nil)
		toolResult(b, s, id, strings.Repeat("127.0.0.1 localhost\n", 20))
		appendEvent(b, s, session.TypeStepEnd, session.StepBoundary{Turn: turn, Step: 1})
		appendEvent(b, s, session.TypeTurnEnd, session.TurnEnd{Turn: turn, Reason: session.EndReason{Kind: session.EndCompleted}})
	}
	return s.Events()
}

// BenchmarkMessagesAtDepth measures what building one step's history costs:
// one new surface event, then Messages(). Derivation is incremental, so the
// figure must not depend on how long the session already is. Every 10,000
// operations the session is rebuilt from its base log (timer stopped), which
// keeps the depth near its nominal value and makes both depths pay about the
// same amortised log growth (some two event copies per append). ns/op is
// append plus derivation; messages-ns/op is the Messages() call alone.
func BenchmarkMessagesAtDepth(b *testing.B) {
	for _, steps := range []int{10, 2000} {
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			base := history(b, steps)
			msg := session.Prompt{Content: text("one more"), Source: llm.UserSource}
			var s *session.Session
			reset := func() {
				s = seeded(b, base)
				if _, err := s.Messages(); err != nil { // warm the cache
					b.Fatal(err)
				}
			}
			reset()
			b.ReportAllocs()
			b.ResetTimer()
			n := 0
			var derive time.Duration // inside Messages() alone
			for b.Loop() {
				if n++; n%10_000 == 0 {
					b.StopTimer()
					reset()
					b.StartTimer()
				}
				if _, err := s.Writer(ownership.Fixtures).AppendSurface(ctx, session.TypeUserMessage, msg, session.AppendOp, nil); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				m, err := s.Messages()
				derive += time.Since(start)
				if err != nil || len(m) < 3*steps {
					b.Fatal(len(m), err)
				}
			}
			b.ReportMetric(float64(derive.Nanoseconds())/float64(n), "messages-ns/op")
		})
	}
}

// Lineage walks a subagent's session up to its root through the live
// sessions, at any depth, and stops at a parent that is not live or at a
// cycle.
func TestLiveLineage(t *testing.T) {
	st := session.NewLive(fixedClock)
	scope := kernel.NewScope("t")
	defer scope.Close()
	mk := func(id, parent session.ID) *session.Session {
		s, err := st.Create(ctx, scope, id, session.Options{Header: session.Header{ParentSession: parent}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	root := mk("root", "")
	child := mk("child", "root")
	grand := mk("grand", "child")
	orphan := mk("orphan", "gone")
	loop := mk("loop", "loop")
	ids := func(ss []*session.Session) (out []session.ID) {
		for _, s := range ss {
			out = append(out, s.ID())
		}
		return out
	}
	if got := ids(st.Lineage(grand)); !slices.Equal(got, []session.ID{"grand", "child", "root"}) {
		t.Errorf("lineage %v", got)
	}
	if st.Root(grand) != root || st.Root(child) != root || st.Root(root) != root {
		t.Error("root")
	}
	if st.Root(orphan) != orphan || st.Root(loop) != loop || len(st.Lineage(loop)) != 1 {
		t.Error("a parent not live, or a cycle, ends the walk")
	}
	if st.Lineage(nil) != nil || st.Root(nil) != nil {
		t.Error("nil")
	}
}

// The step limit's end reason is max-steps; logs of earlier builds that
// recorded max-turns read the same.
func TestEndReasonStepLimitLegacy(t *testing.T) {
	for _, raw := range []string{`{"kind":"max-steps"}`, `{"kind":"max-turns"}`} {
		var r session.EndReason
		if err := json.Unmarshal([]byte(raw), &r); err != nil || r.Kind != session.EndMaxSteps {
			t.Errorf("%s: %+v %v", raw, r, err)
		}
	}
	b, _ := json.Marshal(session.EndReason{Kind: session.EndMaxSteps})
	if string(b) != `{"kind":"max-steps"}` {
		t.Errorf("written as %s", b)
	}
}
