package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/replay"
	"github.com/dshq/dsh/session"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// logBuilder assembles a session log by hand.
type logBuilder struct{ events []session.Event }

func (b *logBuilder) add(typ string, data any) *logBuilder {
	raw, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	e := session.Event{Type: typ, Seq: int64(len(b.events)), Time: 1, Data: raw}
	if session.SurfaceEligible(typ) {
		op := session.AppendOp
		e.SurfaceOp = &op
	}
	b.events = append(b.events, e)
	return b
}

func (b *logBuilder) chunks(turn, step int, cs ...llm.Chunk) *logBuilder {
	for _, c := range cs {
		b.add(session.TypeAssistantChunk, session.AssistantChunk{Turn: turn, Step: step, Chunk: c})
	}
	return b
}

func textCall(s, finish string) []llm.Chunk {
	return []llm.Chunk{llm.StartChunk(0, llm.BlockText), llm.TextChunk(0, s), llm.EndChunk(0, llm.Text(s)), llm.FinishChunk(finish)}
}

// jsonl renders a header and events as a session.jsonl file.
func jsonl(t *testing.T, h session.Header, events []session.Event) []byte {
	t.Helper()
	hb, err := json.Marshal(struct {
		Type string `json:"type"`
		session.Header
	}{"session", h})
	if err != nil {
		t.Fatal(err)
	}
	out := append(hb, '\n')
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, b...), '\n')
	}
	return out
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func wantText(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant  %s", err, want)
	}
}

// --- deriving scripts -----------------------------------------------------

func TestFromEventsGroupsByTurnAndStep(t *testing.T) {
	call1 := textCall("one", llm.FinishToolCalls)
	call2 := textCall("two", llm.FinishStop)
	call3 := []llm.Chunk{llm.ErrorFinish("provider said no", llm.CodeServer)}
	b := &logBuilder{}
	b.add(session.TypeTurnStart, session.TurnStart{Turn: 1}).
		add(session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text("go")}}).
		add(session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 1}).
		chunks(1, 1, call1[:2]...).
		add("plugin/interleaved", map[string]int{"x": 1}). // does not split the run
		chunks(1, 1, call1[2:]...).
		add(session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1}).
		add(session.TypeStepEnd, session.StepBoundary{Turn: 1, Step: 1}).
		chunks(1, 2, call2...).
		add(session.TypeTurnEnd, session.TurnEnd{Turn: 1}).
		chunks(2, 1, call3...) // an in-band error finish replays as recorded
	sc, err := replay.FromEvents(b.events)
	if err != nil {
		t.Fatal(err)
	}
	want := []replay.Entry{
		{Kind: replay.KindChunks, Chunks: call1},
		{Kind: replay.KindChunks, Chunks: call2},
		{Kind: replay.KindChunks, Chunks: call3},
	}
	if !reflect.DeepEqual(sc.Entries, want) {
		t.Fatalf("entries\n got %+v\nwant %+v", sc.Entries, want)
	}
	if sc, err := replay.FromEvents(nil); err != nil || len(sc.Entries) != 0 {
		t.Fatalf("empty log: %+v %v", sc, err)
	}
}

func TestFromEventsRequiresFinish(t *testing.T) {
	thrown := []llm.Chunk{llm.StartChunk(0, llm.BlockText), llm.TextChunk(0, "par")}
	cases := []struct {
		name string
		b    *logBuilder
		want string
	}{
		{"last call", (&logBuilder{}).chunks(1, 1, textCall("ok", llm.FinishStop)...).chunks(3, 2, thrown...),
			"replay: model call 3/2 ended without a finish chunk (a thrown stream); this scenario needs a replay.override.json sidecar"},
		{"middle call", (&logBuilder{}).chunks(1, 1, thrown...).chunks(1, 2, textCall("ok", llm.FinishStop)...),
			"replay: model call 1/1 ended without a finish chunk (a thrown stream); this scenario needs a replay.override.json sidecar"},
		{"finish not last", (&logBuilder{}).chunks(2, 4, llm.FinishChunk(llm.FinishStop), llm.TextChunk(0, "late")),
			"replay: model call 2/4 ended without a finish chunk (a thrown stream); this scenario needs a replay.override.json sidecar"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := replay.FromEvents(c.b.events)
			wantText(t, err, c.want)
		})
	}
}

func TestParseLog(t *testing.T) {
	b := (&logBuilder{}).add(session.TypeTurnStart, session.TurnStart{Turn: 1}).chunks(1, 1, llm.FinishChunk(llm.FinishStop))
	data := jsonl(t, session.Header{ID: "abc", CreatedAt: 42, SeedLength: 0}, b.events)
	data = append([]byte("\n  \n"), data...) // leading blank lines are skipped
	data = append(data, "\n\n"...)
	h, events, err := replay.ParseLog(data)
	if err != nil {
		t.Fatal(err)
	}
	if h.ID != "abc" || h.CreatedAt != 42 || len(events) != 2 || events[1].Type != session.TypeAssistantChunk {
		t.Fatalf("header %+v, %d events", h, len(events))
	}

	_, _, err = replay.ParseLog([]byte("{\"type\":\"session\"}\n{\"type\":\"turn/start\",\"seq\":0}\n{not json\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "replay: line 3: malformed event") {
		t.Fatalf("malformed line: %v", err)
	}
	_, _, err = replay.ParseLog([]byte("\n\n"))
	wantText(t, err, "replay: empty session log (no header line)")
	// A header with only a type still parses, with defaults.
	if h, _, err := replay.ParseLog([]byte(`{"type":"session"}`)); err != nil || h.ID != "" || h.CreatedAt != 0 || h.SeedLength != 0 {
		t.Fatalf("minimal header %+v %v", h, err)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	b := (&logBuilder{}).chunks(1, 1, textCall("recorded", llm.FinishStop)...)
	primary := writeFile(t, dir, "session.jsonl", jsonl(t, session.Header{ID: "main", CreatedAt: 5}, b.events))

	t.Run("derived", func(t *testing.T) {
		scripts, err := replay.LoadFile(primary, filepath.Join(dir, "replay.override.json")) // absent override
		if err != nil {
			t.Fatal(err)
		}
		if len(scripts) != 1 || scripts[0].SessionID != "main" || scripts[0].CreatedAt != 5 || len(scripts[0].Entries) != 1 {
			t.Fatalf("scripts %+v", scripts)
		}
	})
	t.Run("override wins", func(t *testing.T) {
		ov := writeFile(t, dir, "throw.json", []byte(`[{"kind":"throw","chunks":[],"message":"simulated provider error (HTTP 401)","code":"AUTH","status":401},{"kind":"hang"}]`))
		scripts, err := replay.LoadFile(primary, ov)
		if err != nil {
			t.Fatal(err)
		}
		want := []replay.Entry{
			{Kind: replay.KindThrow, Chunks: []llm.Chunk{}, Message: "simulated provider error (HTTP 401)", Code: "AUTH", Status: 401},
			{Kind: replay.KindHang},
		}
		if !reflect.DeepEqual(scripts[0].Entries, want) {
			t.Fatalf("entries %+v", scripts[0].Entries)
		}
	})
	t.Run("override not an array", func(t *testing.T) {
		ov := writeFile(t, dir, "object.json", []byte(`{"kind":"hang"}`))
		_, err := replay.LoadFile(primary, ov)
		wantText(t, err, "replay: override is not a JSON array: "+ov)
	})
	t.Run("override with an unknown kind", func(t *testing.T) {
		ov := writeFile(t, dir, "typo.json", []byte(`[{"kind":"chunk"}]`))
		_, err := replay.LoadFile(primary, ov)
		if err == nil || !strings.Contains(err.Error(), `unknown entry kind "chunk"`) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("fixture not found", func(t *testing.T) {
		missing := filepath.Join(dir, "nope.jsonl")
		_, err := replay.LoadFile(missing, "")
		if err == nil || !strings.HasPrefix(err.Error(), "replay: fixture not found: "+missing) || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("path required", func(t *testing.T) {
		_, err := replay.LoadFile("", "")
		wantText(t, err, "replay: a fixture path is required (LoadFile path or $DSH_SNAPSHOT_FILE)")
	})
	t.Run("thrown stream without override", func(t *testing.T) {
		thrown := (&logBuilder{}).chunks(1, 1, llm.StartChunk(0, llm.BlockText))
		p := writeFile(t, dir, "thrown.jsonl", jsonl(t, session.Header{ID: "t"}, thrown.events))
		_, err := replay.LoadFile(p, "")
		if err == nil || !strings.Contains(err.Error(), "model call 1/1 ended without a finish chunk") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("from the environment", func(t *testing.T) {
		child := writeFile(t, dir, "env-child.jsonl", jsonl(t, session.Header{ID: "kid", CreatedAt: 9}, b.events))
		t.Setenv("DSH_SNAPSHOT_FILE", primary)
		t.Setenv("DSH_SNAPSHOT_OVERRIDE", "")
		t.Setenv("DSH_SNAPSHOT_CHILD_FILES", child)
		scripts, err := replay.LoadEnv()
		if err != nil || len(scripts) != 2 || scripts[1].SessionID != "kid" {
			t.Fatalf("scripts %+v %v", scripts, err)
		}
	})
}

func TestLoadFileChildren(t *testing.T) {
	dir := t.TempDir()
	parent := (&logBuilder{}).
		add(session.TypeTurnStart, session.TurnStart{Turn: 1}).
		chunks(1, 1, textCall("parent", llm.FinishStop)...).
		add(session.TypeTurnEnd, session.TurnEnd{Turn: 1})
	primary := writeFile(t, dir, "session.jsonl", jsonl(t, session.Header{ID: "parent", CreatedAt: 1}, parent.events))

	// A fork child inherits the parent's completed turn (seedLength events),
	// model calls included; only what follows is the child's own.
	fork := &logBuilder{events: append([]session.Event(nil), parent.events...)}
	fork.add(session.TypeTurnStart, session.TurnStart{Turn: 2}).
		chunks(2, 1, textCall("fork own 1", llm.FinishToolCalls)...).
		chunks(2, 2, textCall("fork own 2", llm.FinishStop)...).
		add(session.TypeTurnEnd, session.TurnEnd{Turn: 2})
	seedLen := len(parent.events)
	forkPath := writeFile(t, dir, "session.2.jsonl", jsonl(t, session.Header{ID: "fork", CreatedAt: 30, ParentSession: "parent", SeedLength: seedLen}, fork.events))

	early := (&logBuilder{}).chunks(1, 1, textCall("early", llm.FinishStop)...)
	earlyPath := writeFile(t, dir, "session.1.jsonl", jsonl(t, session.Header{ID: "zeta", CreatedAt: 20}, early.events))
	tie := writeFile(t, dir, "session.3.jsonl", jsonl(t, session.Header{ID: "alpha", CreatedAt: 20}, early.events))

	scripts, err := replay.LoadFile(primary, "", forkPath, earlyPath, tie)
	if err != nil {
		t.Fatal(err)
	}
	var ids []session.ID
	for _, s := range scripts {
		ids = append(ids, s.SessionID)
	}
	// Primary first; children by createdAt, then id.
	if fmt.Sprint(ids) != "[parent alpha zeta fork]" {
		t.Fatalf("order %v", ids)
	}
	forkScript := scripts[3]
	if len(forkScript.Entries) != 2 || llm.TextOf([]llm.Block{*forkScript.Entries[0].Chunks[2].Block}) != "fork own 1" {
		t.Fatalf("fork script %+v", forkScript.Entries)
	}

	bad := writeFile(t, dir, "session.9.jsonl", jsonl(t, session.Header{ID: "bad", SeedLength: 99}, early.events))
	_, err = replay.LoadFile(primary, "", bad)
	wantText(t, err, fmt.Sprintf("replay: %s: seedLength 99 exceeds the log's %d events", bad, len(early.events)))
}

// --- playing ----------------------------------------------------------------

func entry(text string) replay.Entry {
	return replay.Entry{Kind: replay.KindChunks, Chunks: textCall(text, llm.FinishStop)}
}

// call makes one model call and folds its stream.
func call(svc *llm.Service, ctx context.Context, sessionID string) (string, error) {
	st, err := svc.Stream(ctx, &llm.Request{Model: "any", SessionID: sessionID})
	if err != nil {
		return "", err
	}
	var as llm.Assembler
	for c, err := range st {
		if err != nil {
			return "", err
		}
		if _, _, err := as.Push(c); err != nil {
			return "", err
		}
	}
	m, err := as.Message()
	return llm.TextOf(m.Content), err
}

func TestBindingAndCursors(t *testing.T) {
	svc := llm.NewService() // no adapter at all: replay never calls next
	dispose := replay.Install(svc,
		replay.Script{SessionID: "rec-1", Entries: []replay.Entry{entry("s1 call 1"), entry("s1 call 2")}},
		replay.Script{SessionID: "rec-2", Entries: []replay.Entry{entry("s2 call 1")}},
	)
	ctx := context.Background()
	steps := []struct {
		session string
		want    string // text, or error text
	}{
		{"B", "s1 call 1"}, // first caller binds the first script, whatever its id
		{"A", "s2 call 1"},
		{"B", "s1 call 2"}, // B's cursor is independent of A's
		{"C", `replay: a model call arrived from an unrecorded session (#3, "C"); the fixture records 2 session(s): replay: unrecorded session`},
		{"A", `replay: script exhausted — session "A" requested model call #2 but its script has only 1; the agent diverged from the recording: replay: script exhausted`},
		{"C", `replay: a model call arrived from an unrecorded session (#3, "C"); the fixture records 2 session(s): replay: unrecorded session`},
		{"B", `replay: script exhausted — session "B" requested model call #3 but its script has only 2; the agent diverged from the recording: replay: script exhausted`},
	}
	for i, s := range steps {
		got, err := call(svc, ctx, s.session)
		if err != nil {
			got = err.Error()
		}
		if got != s.want {
			t.Fatalf("call %d from %s: %q\nwant %q", i, s.session, got, s.want)
		}
	}
	_, err := call(svc, ctx, "A")
	if !errors.Is(err, replay.ErrExhausted) {
		t.Fatalf("errors.Is(ErrExhausted): %v", err)
	}
	_, err = call(svc, ctx, "D")
	if !errors.Is(err, replay.ErrUnrecordedSession) {
		t.Fatalf("errors.Is(ErrUnrecordedSession): %v", err)
	}
	dispose()
	if _, err := call(svc, ctx, "B"); llm.CodeOf(err) != llm.CodeNoAdapter {
		t.Fatalf("after dispose the adapter path is back: %v", err)
	}
}

func TestAnonymousSessionIsOneKey(t *testing.T) {
	svc := llm.NewService()
	replay.Install(svc, replay.Script{Entries: []replay.Entry{entry("first"), entry("second")}})
	for _, want := range []string{"first", "second"} {
		if got, err := call(svc, context.Background(), ""); err != nil || got != want {
			t.Fatalf("got %q %v, want %q", got, err, want)
		}
	}
}

func TestOuterListenersStillRun(t *testing.T) {
	svc := llm.NewService()
	var seen []string
	svc.StreamPoint.Use(func(ctx context.Context, req *llm.Request, next kernel.Next[*llm.Request, llm.Stream]) (llm.Stream, error) {
		seen = append(seen, req.SessionID)
		return next(ctx, req)
	})
	replay.Install(svc, replay.Script{Entries: []replay.Entry{entry("x")}})
	if got, err := call(svc, context.Background(), "s"); err != nil || got != "x" || fmt.Sprint(seen) != "[s]" {
		t.Fatalf("got %q %v seen %v", got, err, seen)
	}
}

func TestThrowReplaysPrefixThenError(t *testing.T) {
	svc := llm.NewService()
	prefix := []llm.Chunk{llm.StartChunk(0, llm.BlockText), llm.TextChunk(0, "half")}
	replay.Install(svc, replay.Script{Entries: []replay.Entry{{Kind: replay.KindThrow, Chunks: prefix, Message: "simulated provider error (HTTP 401)", Code: llm.CodeAuth, Status: 401}}})
	st, err := svc.Stream(context.Background(), &llm.Request{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	var got []llm.Chunk
	var streamErr error
	for c, err := range st {
		if err != nil {
			streamErr = err
			break
		}
		got = append(got, c)
	}
	if !reflect.DeepEqual(got, prefix) {
		t.Fatalf("prefix %+v", got)
	}
	le, ok := llm.AsError(streamErr)
	if !ok || le.Code != llm.CodeAuth || le.Status != 401 || le.Message != "simulated provider error (HTTP 401)" || le.Name != "LlmError" {
		t.Fatalf("err %#v", streamErr)
	}
}

func TestHangEndsOnCancel(t *testing.T) {
	svc := llm.NewService()
	replay.Install(svc, replay.Script{Entries: []replay.Entry{{Kind: replay.KindHang}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := svc.Stream(ctx, &llm.Request{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	var got []llm.Chunk
	var streamErr error
	for c, err := range st {
		if err != nil {
			streamErr = err
			break
		}
		got = append(got, c)
		if len(got) == 2 {
			cancel() // the stream is now blocked; cancelling must end it
		}
	}
	want := []llm.Chunk{llm.StartChunk(0, llm.BlockText), llm.TextChunk(0, "partial")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("chunks %+v", got)
	}
	if llm.CodeOf(streamErr) != llm.CodeAborted || streamErr.Error() != "aborted" || !errors.Is(streamErr, context.Canceled) {
		t.Fatalf("err %v", streamErr)
	}
}

func TestCancelledBeforeFirstChunk(t *testing.T) {
	svc := llm.NewService()
	replay.Install(svc, replay.Script{Entries: []replay.Entry{entry("never")}})
	ctx, cancel := context.WithCancelCause(context.Background())
	st, err := svc.Stream(ctx, &llm.Request{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	cause := errors.New("user pressed escape")
	cancel(cause)
	n := 0
	for c, err := range st {
		n++
		if err == nil {
			t.Fatalf("chunk %+v after cancellation", c)
		}
		if llm.CodeOf(err) != llm.CodeAborted || !errors.Is(err, cause) {
			t.Fatalf("err %v", err)
		}
	}
	if n != 1 {
		t.Fatalf("%d yields", n)
	}
}

func TestConsumerMayStopEarly(t *testing.T) {
	svc := llm.NewService()
	replay.Install(svc, replay.Script{Entries: []replay.Entry{entry("abc"), entry("next")}})
	st, err := svc.Stream(context.Background(), &llm.Request{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	for range st {
		break
	}
	// The abandoned call still consumed its entry.
	if got, err := call(svc, context.Background(), ""); err != nil || got != "next" {
		t.Fatalf("got %q %v", got, err)
	}
}
