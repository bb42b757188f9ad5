package invariants_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/session/invariants"
)

var ctx = context.Background()

// ev describes one event of a hand-built log; log assigns seq = index
// unless at overrides it.
type ev struct {
	typ  string
	data string
	op   *session.SurfaceOp
	src  []int64
	at   *int64
}

func (e ev) withSrc(s ...int64) ev         { e.src = s; return e }
func (e ev) withOp(o session.SurfaceOp) ev { e.op = &o; return e }
func (e ev) replace(start, end int64) ev   { return e.withOp(session.ReplaceOp(start, end)) }
func (e ev) atSeq(seq int64) ev            { e.at = &seq; return e }
func (e ev) emptySrc() ev                  { e.src = []int64{}; return e }
func surfaceEv(typ, data string) ev        { return ev{typ: typ, data: data}.withOp(session.AppendOp) }
func turnStart(n int) ev {
	return ev{typ: session.TypeTurnStart, data: fmt.Sprintf(`{"turn":%d,"trigger":{"kind":"message"}}`, n)}
}
func turnEnd(n int) ev {
	return ev{typ: session.TypeTurnEnd, data: fmt.Sprintf(`{"turn":%d,"reason":{"kind":"completed"}}`, n)}
}
func stepStart(t, s int) ev {
	return ev{typ: session.TypeStepStart, data: fmt.Sprintf(`{"turn":%d,"step":%d}`, t, s)}
}
func stepEnd(t, s int) ev {
	return ev{typ: session.TypeStepEnd, data: fmt.Sprintf(`{"turn":%d,"step":%d}`, t, s)}
}
func chunk(t, s int) ev {
	return ev{typ: session.TypeAssistantChunk, data: fmt.Sprintf(`{"turn":%d,"step":%d,"chunk":{"type":"finish","reason":{"kind":"stop"}}}`, t, s)}
}
func call(t, s int, id string) ev {
	return ev{typ: session.TypeToolCall, data: fmt.Sprintf(`{"turn":%d,"step":%d,"callId":%q,"name":"x","arguments":"{}"}`, t, s, id)}
}
func plugin(typ string) ev { return ev{typ: typ, data: `{}`} }
func userMsg() ev {
	return surfaceEv(session.TypeUserMessage, `{"content":[{"type":"text","text":"u"}],"source":{"kind":"user"}}`)
}
func assistantMsg(t, s int, callIDs ...string) ev {
	content := []llm.Block{llm.Text("a")}
	for _, id := range callIDs {
		content = append(content, llm.ToolCall(llm.CallID(id), "x", "{}"))
	}
	b, _ := json.Marshal(session.AssistantMessage{Turn: t, Step: s, Content: content})
	return surfaceEv(session.TypeAssistantMessage, string(b))
}
func result(t, s int, id string) ev {
	return surfaceEv(session.TypeToolResult, fmt.Sprintf(`{"turn":%d,"step":%d,"callId":%q,"content":[],"isError":false}`, t, s, id))
}
func notRun(t, s int, id string) ev {
	return surfaceEv(session.TypeToolResult, fmt.Sprintf(`{"turn":%d,"step":%d,"callId":%q,"content":[{"type":"text","text":"not run: the turn was cancelled (x)"}],"isError":true,"error":{"name":"NotRunError","code":%q}}`, t, s, id, session.CodeNotRun))
}
func interrupted(t, s int, id string) ev {
	return surfaceEv(session.TypeToolResult, fmt.Sprintf(`{"turn":%d,"step":%d,"callId":%q,"content":[],"isError":true,"error":{"name":"InterruptedError","code":"interrupted"}}`, t, s, id))
}

func log(evs ...ev) []session.Event {
	out := make([]session.Event, len(evs))
	for i, e := range evs {
		seq := int64(i)
		if e.at != nil {
			seq = *e.at
		}
		out[i] = session.Event{Type: e.typ, Seq: seq, Time: int64(i), Data: json.RawMessage(e.data), SurfaceOp: e.op, SourceEventSeqs: e.src}
	}
	return out
}

// toolTurn is a complete, valid turn with one tool round trip.
func toolTurn(n int) []ev {
	return []ev{
		turnStart(n),
		userMsg(),
		stepStart(n, 1),
		chunk(n, 1),
		assistantMsg(n, 1, "c1"),
		call(n, 1, "c1"),
		result(n, 1, "c1"),
		stepEnd(n, 1),
		stepStart(n, 2),
		chunk(n, 2),
		assistantMsg(n, 2),
		stepEnd(n, 2),
		turnEnd(n),
	}
}

func TestRejects(t *testing.T) {
	cases := []struct {
		name string
		log  []ev
		want string
	}{
		{"non-increasing seq", []ev{turnStart(1), plugin("x/y").atSeq(0)},
			"seq must strictly increase: saw 0 after 0"},
		{"decreasing seq", []ev{turnStart(1), plugin("x/y").atSeq(5), plugin("x/y").atSeq(3)},
			"seq must strictly increase: saw 3 after 5"},
		{"nested turn/start", []ev{turnStart(1), turnStart(2)},
			"turn/start 2 while turn 1 is open"},
		{"mismatched turn/end", []ev{turnStart(1), turnEnd(2)},
			"turn/end 2 does not match the open turn"},
		{"turn/end without a turn", []ev{turnEnd(1)},
			"turn/end 1 does not match the open turn"},
		{"first turn is not 1", []ev{turnStart(2)},
			"turn/start 2, expected turn 1"},
		{"skipped turn number", []ev{turnStart(1), turnEnd(1), turnStart(3)},
			"turn/start 3, expected turn 2"},
		{"skipped step number", []ev{turnStart(1), stepStart(1, 2)},
			"step/start 2, expected step 1"},
		{"skipped step after a step", []ev{turnStart(1), stepStart(1, 1), stepEnd(1, 1), stepStart(1, 3)},
			"step/start 3, expected step 2"},
		{"step/start for another turn", []ev{turnStart(1), stepStart(2, 1)},
			"step/start for turn 2 outside that turn"},
		{"nested step/start", []ev{turnStart(1), stepStart(1, 1), stepStart(1, 2)},
			"step/start 2 while step 1 is open"},
		{"turn/end with an open step", []ev{turnStart(1), stepStart(1, 1), turnEnd(1)},
			"turn/end 1 while step 1 is open"},
		{"step/end for another step", []ev{turnStart(1), stepStart(1, 1), stepEnd(1, 2)},
			"step/end (seq 2) for turn 1 step 2 is outside the open step"},
		{"chunk outside a step", []ev{turnStart(1), chunk(1, 1)},
			"assistant/chunk (seq 1) for turn 1 step 1 is outside the open step"},
		{"chunk for a closed step", []ev{turnStart(1), stepStart(1, 1), stepEnd(1, 1), chunk(1, 1)},
			"assistant/chunk (seq 3) for turn 1 step 1 is outside the open step"},
		{"assistant message naming another step", []ev{turnStart(1), stepStart(1, 1), assistantMsg(1, 2)},
			"assistant/message (seq 2) for turn 1 step 2 is outside the open step"},
		{"tool/call outside a step", []ev{turnStart(1), call(1, 1, "c1")},
			"tool/call (seq 1) for turn 1 step 1 is outside the open step"},
		{"message outside a turn", []ev{userMsg()},
			"user/message (seq 0) appended outside any open turn (every event must be turn-enclosed)"},
		{"plugin event after the turn closed", []ev{turnStart(1), turnEnd(1), plugin("todo/write")},
			"todo/write (seq 2) appended outside any open turn (every event must be turn-enclosed)"},
		{"tool/result without a tool/call", []ev{turnStart(1), stepStart(1, 1), assistantMsg(1, 1, "c1"), result(1, 1, "c1")},
			"tool/result c1 (seq 3) has no tool/call in this step"},
		{"tool/result for a previous step's call", []ev{turnStart(1), stepStart(1, 1), call(1, 1, "c1"), stepEnd(1, 1), stepStart(1, 2), result(1, 2, "c1")},
			"tool/result c1 (seq 5) has no tool/call in this step"},
		{"second tool/result for one call", []ev{turnStart(1), stepStart(1, 1), call(1, 1, "c1"), result(1, 1, "c1"), result(1, 1, "c1")},
			"tool/result c1 (seq 4) has no tool/call in this step"},
		{"tool/call without a result at step/end", []ev{
			turnStart(1), userMsg(), stepStart(1, 1), assistantMsg(1, 1, "c1"), call(1, 1, "c1"), stepEnd(1, 1), turnEnd(1)},
			"step/end 1 (seq 5) leaves tool call c1 of the step's assistant/message without a tool/result"},
		{"unstarted call without a result at step/end", []ev{
			turnStart(1), stepStart(1, 1), assistantMsg(1, 1, "c1", "c2"), call(1, 1, "c1"), result(1, 1, "c1"), stepEnd(1, 1)},
			"step/end 1 (seq 5) leaves tool call c2 of the step's assistant/message without a tool/result"},
		{"synthetic result outside the open step", []ev{turnStart(1), interrupted(1, 1, "c1")},
			"tool/result (seq 1) for turn 1 step 1 is outside the open step"},
		{"empty sourceEventSeqs", []ev{turnStart(1), userMsg().emptySrc()},
			"user/message (seq 1) has empty sourceEventSeqs"},
		{"duplicate sourceEventSeqs", []ev{turnStart(1), userMsg(), userMsg().withSrc(1, 1)},
			"user/message (seq 2) has duplicate source seq 1"},
		{"forward sourceEventSeqs", []ev{turnStart(1), userMsg().withSrc(1)},
			"user/message (seq 1) references a later event 1"},
		{"unknown sourceEventSeqs", []ev{turnStart(1), plugin("x/y").atSeq(5), userMsg().atSeq(6).withSrc(3)},
			"user/message (seq 6) references unknown event 3"},
		{"replace without shadowed provenance", []ev{turnStart(1), userMsg(), userMsg(), userMsg().replace(1, 2).withSrc(1)},
			"user/message (seq 3) shadows 2 without recording it in sourceEventSeqs"},
		{"replace with reversed positions", []ev{turnStart(1), userMsg(), userMsg(), userMsg().replace(2, 1).withSrc(1, 2)},
			"user/message (seq 3) replace start 2 is after end 1"},
		{"replace off the surface", []ev{turnStart(1), userMsg(), userMsg().replace(0, 1).withSrc(0, 1)},
			"user/message (seq 2) replaces 0..1, which are not on the surface"},
		{"replace of a shadowed node", []ev{turnStart(1), userMsg(), userMsg(), userMsg().replace(1, 1).withSrc(1), userMsg().replace(1, 3).withSrc(1, 3)},
			"user/message (seq 4) replaces 1..3, which are not on the surface"},
		{"sourceEventSeqs on a non-surface event", []ev{turnStart(1), stepStart(1, 1).withSrc(0)},
			"step/start cannot carry sourceEventSeqs (non-surface event)"},
		{"surfaceOp on a non-surface event", []ev{turnStart(1).withOp(session.AppendOp)},
			"turn/start cannot carry surfaceOp (non-surface event)"},
		{"surfaceOp on a plugin event", []ev{turnStart(1), plugin("todo/write").withOp(session.AppendOp)},
			"todo/write cannot carry surfaceOp (non-surface event)"},
		{"undecodable boundary", []ev{{typ: session.TypeTurnStart, data: `{"turn":"one"}`}},
			"session: decoding turn/start (seq 0)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := invariants.CheckLog(log(c.log...))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v\nwant %q", err, c.want)
			}
			var ie *invariants.Error
			if !strings.HasPrefix(c.want, "session:") && (!errors.As(err, &ie) || err.Error() != "invariant violated: "+c.want) {
				t.Fatalf("err %T %q, want *invariants.Error %q", err, err, c.want)
			}
		})
	}
}

func TestAccepts(t *testing.T) {
	cases := []struct {
		name string
		log  []ev
	}{
		{"two full tool turns", append(toolTurn(1), toolTurn(2)...)},
		{"not-run results with and without a tool/call (a cancelled step)", []ev{
			turnStart(1), userMsg(), stepStart(1, 1), assistantMsg(1, 1, "c1", "c2", "c3"), call(1, 1, "c1"), result(1, 1, "c1"),
			call(1, 1, "c2"), notRun(1, 1, "c2"), notRun(1, 1, "c3"), stepEnd(1, 1), turnEnd(1),
		}},
		{"synthetic interrupted result without a tool/call", []ev{
			turnStart(1), stepStart(1, 1), assistantMsg(1, 1, "c1"), interrupted(1, 1, "c1"), stepEnd(1, 1), turnEnd(1),
		}},
		{"replace whose start seq is greater than its end seq", []ev{
			turnStart(1), userMsg(), userMsg(), userMsg(),
			userMsg().replace(1, 2).withSrc(1, 2), // surface [4, 3]
			userMsg().replace(4, 3).withSrc(4, 3), // start 4 > end 3, positions 0..1
		}},
		{"replace with extra provenance", []ev{
			turnStart(1), plugin("compact/start"), userMsg(), userMsg(),
			userMsg().replace(2, 3).withSrc(1, 2, 3),
		}},
		{"seq gaps are allowed when increasing", []ev{turnStart(1), plugin("x/y").atSeq(4), userMsg().atSeq(9).withSrc(4)}},
		{"plugin events inside a turn", []ev{turnStart(1), plugin("todo/write"), plugin("hook/invoked"), plugin("compact/end"), turnEnd(1)}},
		{"empty-step turn", []ev{turnStart(1), plugin("prompt/blocked"), turnEnd(1)}},
		{"the same call id in a later step", []ev{
			turnStart(1), stepStart(1, 1), call(1, 1, "c1"), result(1, 1, "c1"), stepEnd(1, 1),
			stepStart(1, 2), call(1, 2, "c1"), result(1, 2, "c1"), stepEnd(1, 2), turnEnd(1),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := invariants.CheckLog(log(c.log...)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestTrackerClosed(t *testing.T) {
	tr := invariants.NewTracker()
	if !tr.Closed() {
		t.Fatal("an empty log is closed")
	}
	events := log(toolTurn(1)...)
	for i, e := range events {
		if err := tr.Check(e); err != nil {
			t.Fatal(err)
		}
		if want := i == len(events)-1; tr.Closed() != want {
			t.Fatalf("after seq %d: Closed %v", e.Seq, tr.Closed())
		}
	}
}

// The closers crash repair appends keep a log valid.
func TestInterruptedClosersSatisfyInvariants(t *testing.T) {
	events := log(turnStart(1), userMsg(), stepStart(1, 1), assistantMsg(1, 1, "c1", "c2"), call(1, 1, "c1"))
	closers, err := session.InterruptedClosers(events)
	if err != nil || len(closers) != 4 {
		t.Fatalf("closers %d %v", len(closers), err)
	}
	if err := invariants.CheckLog(append(events, closers...)); err != nil {
		t.Fatal(err)
	}
}

// --- live checking --------------------------------------------------------

func installed(t *testing.T) (*session.Live, *kernel.Scope) {
	t.Helper()
	st := session.NewLive(nil)
	scope := kernel.NewScope("invariants")
	if err := invariants.Install(scope, st); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = scope.Close() })
	return st, scope
}

func TestInstallFailsTheViolatingAppend(t *testing.T) {
	st, _ := installed(t)
	var later []int64
	st.Appended.Listen(func(_ context.Context, a session.Appended) error {
		later = append(later, a.Event.Seq)
		return nil
	})
	s, err := st.Create(ctx, kernel.NewScope("owner"), "s", session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Writer(ownership.Fixtures).Append(ctx, session.TypeTurnStart, session.TurnStart{Turn: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Writer(ownership.Fixtures).Append(ctx, session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 2})
	var ie *invariants.Error
	if !errors.As(err, &ie) || ie.Msg != "step/start 2, expected step 1" {
		t.Fatalf("err %v", err)
	}
	// Push, then notify: the bad event is in the log, and listeners
	// registered after the checker never saw it.
	if s.Len() != 2 || !slices.Equal(later, []int64{0}) {
		t.Fatalf("len %d, later listener saw %v", s.Len(), later)
	}
	// The checker runs before listeners registered earlier, too.
	_, err = s.Writer(ownership.Fixtures).AppendSurface(ctx, session.TypeUserMessage, session.Prompt{}, session.AppendOp, []int64{7})
	if !errors.As(err, &ie) || !strings.Contains(ie.Msg, "references a later event 7") {
		t.Fatalf("err %v", err)
	}
}

func TestInstallReplaysSeedOnCreated(t *testing.T) {
	st, _ := installed(t)
	seed := log(toolTurn(1)...)
	s, err := st.Create(ctx, kernel.NewScope("owner"), "resumed", session.Options{Seed: seed})
	if err != nil {
		t.Fatalf("a valid seed was rejected: %v", err)
	}
	// The checker continues from the seed: turn 2 is next, turn 1 is not.
	if _, err := s.Writer(ownership.Fixtures).Append(ctx, session.TypeTurnStart, session.TurnStart{Turn: 1}); err == nil || !strings.Contains(err.Error(), "turn/start 1, expected turn 2") {
		t.Fatalf("err %v", err)
	}
	s2, err := st.Create(ctx, kernel.NewScope("owner"), "resumed-2", session.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Writer(ownership.Fixtures).Append(ctx, session.TypeTurnStart, session.TurnStart{Turn: 2}); err != nil {
		t.Fatalf("continuing a seeded session: %v", err)
	}
}

// A log from an older build whose cancelled step left a call unanswered is
// rejected by CheckLog but still resumes: the seed replay tolerates it, and
// live steps are checked in full.
func TestInstallToleratesUnansweredCallsInSeed(t *testing.T) {
	st, _ := installed(t)
	old := log(turnStart(1), userMsg(), stepStart(1, 1), assistantMsg(1, 1, "c1", "c2"), call(1, 1, "c1"), result(1, 1, "c1"), stepEnd(1, 1), turnEnd(1))
	if err := invariants.CheckLog(old); err == nil || !strings.Contains(err.Error(), "leaves tool call c2") {
		t.Fatalf("CheckLog: %v", err)
	}
	s, err := st.Create(ctx, kernel.NewScope("owner"), "old", session.Options{Seed: old})
	if err != nil {
		t.Fatalf("an old log was refused: %v", err)
	}
	for _, e := range []struct {
		typ  string
		data any
	}{
		{session.TypeTurnStart, session.TurnStart{Turn: 2}},
		{session.TypeStepStart, session.StepBoundary{Turn: 2, Step: 1}},
	} {
		if _, err := s.Writer(ownership.Fixtures).Append(ctx, e.typ, e.data); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Writer(ownership.Fixtures).AppendSurface(ctx, session.TypeAssistantMessage, session.AssistantMessage{Turn: 2, Step: 1, Content: []llm.Block{llm.ToolCall("c3", "x", "{}")}}, session.AppendOp, nil); err != nil {
		t.Fatal(err)
	}
	_, err = s.Writer(ownership.Fixtures).Append(ctx, session.TypeStepEnd, session.StepBoundary{Turn: 2, Step: 1})
	var ie *invariants.Error
	if !errors.As(err, &ie) || !strings.Contains(ie.Msg, "leaves tool call c3") {
		t.Fatalf("live step/end with an unanswered call: %v", err)
	}
}

func TestInstallRejectsBadSeedAndRollsBack(t *testing.T) {
	st, _ := installed(t)
	bad := log(turnStart(1), turnStart(2)) // structurally valid for session.New, nested for the checker
	_, err := st.Create(ctx, kernel.NewScope("owner"), "bad", session.Options{Seed: bad})
	var ie *invariants.Error
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "invariants: seed of bad") {
		t.Fatalf("err %v", err)
	}
	if _, ok := st.Get("bad"); ok {
		t.Fatal("a session with an invalid seed stayed in the store")
	}
}

func TestInstallSeedsSessionsThatEnteredEarlier(t *testing.T) {
	st := session.NewLive(nil)
	early, err := st.Create(ctx, kernel.NewScope("owner"), "early", session.Options{Seed: log(turnStart(1), stepStart(1, 1))})
	if err != nil {
		t.Fatal(err)
	}
	scope := kernel.NewScope("invariants")
	defer scope.Close()
	if err := invariants.Install(scope, st); err != nil {
		t.Fatal(err)
	}
	// The checker replays the log it missed before judging the new event.
	if _, err := early.Writer(ownership.Fixtures).Append(ctx, session.TypeTurnEnd, session.TurnEnd{Turn: 1}); err == nil || !strings.Contains(err.Error(), "turn/end 1 while step 1 is open") {
		t.Fatalf("err %v", err)
	}
	if _, err := early.Writer(ownership.Fixtures).Append(ctx, session.TypeStepEnd, session.StepBoundary{Turn: 1, Step: 1}); err != nil {
		t.Fatal(err)
	}
}

func TestUninstalledCheckerIsSilent(t *testing.T) {
	st, scope := installed(t)
	s, err := st.Create(ctx, kernel.NewScope("owner"), "s", session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = scope.Close()
	if _, err := s.Writer(ownership.Fixtures).Append(ctx, session.TypeTurnEnd, session.TurnEnd{Turn: 9}); err != nil {
		t.Fatalf("checker still active after its scope closed: %v", err)
	}
}

// --- agent status ---------------------------------------------------------

// fakeAgent is only an identity for status notifications.
type fakeAgent struct {
	agent.Agent
	id agent.ID
}

func TestStatusTransitions(t *testing.T) {
	hub := agent.NewHub()
	scope := kernel.NewScope("invariants")
	defer scope.Close()
	if err := invariants.InstallStatus(scope, hub.Status); err != nil {
		t.Fatal(err)
	}
	emit := func(a agent.Agent, s agent.Status) error {
		return hub.Status.Emit(ctx, agent.StatusChange{Agent: a, Status: s})
	}
	a, b := &fakeAgent{id: "a"}, &fakeAgent{id: "b"}
	// The first observation is a baseline, whatever it is.
	for _, s := range []agent.Status{agent.Running, agent.Idle, agent.Running, agent.Idle} {
		if err := emit(a, s); err != nil {
			t.Fatalf("a → %s: %v", s, err)
		}
	}
	if err := emit(b, agent.Idle); err != nil {
		t.Fatalf("b's baseline: %v", err)
	}
	var ie *invariants.Error
	if err := emit(a, agent.Idle); !errors.As(err, &ie) || ie.Msg != "agent/status repeated idle (no-op transition)" {
		t.Fatalf("repeated status: %v", err)
	}
	if err := emit(a, agent.Disposed); err != nil {
		t.Fatal(err)
	}
	if err := emit(a, agent.Running); !errors.As(err, &ie) || ie.Msg != "agent/status left terminal state disposed → running" {
		t.Fatalf("leaving disposed: %v", err)
	}
	if err := emit(a, agent.Disposed); !errors.As(err, &ie) || ie.Msg != "agent/status repeated disposed (no-op transition)" {
		t.Fatalf("disposed twice: %v", err)
	}
	// A new agent reusing a disposed agent's id starts its own baseline.
	if err := emit(&fakeAgent{id: "a"}, agent.Running); err != nil {
		t.Fatalf("new agent with a reused id: %v", err)
	}
}
