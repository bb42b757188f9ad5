package replay_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/replay"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// echoTool is deterministic, so a replay reproduces its results too.
func echoTool() tool.Tool {
	type args struct {
		Text string `json:"text"`
	}
	return tool.Func(tool.Info{Name: "echo", Description: "echo text"}, func(_ context.Context, _ tool.Call, a args) (tool.Result, error) {
		return tool.TextResult("echo: " + a.Text), nil
	})
}

// newHost is the spine with the invariants checker on and the echo tool.
func newHost(t *testing.T) *core.Host {
	t.Helper()
	h, err := core.New(core.Options{Invariants: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("closing host: %v", err)
		}
	})
	if err := h.Tools.RegisterAll(h.Scope, echoTool()); err != nil {
		t.Fatal(err)
	}
	return h
}

// install makes scripts answer h's model calls for the host's lifetime.
func install(t *testing.T, h *core.Host, scripts ...replay.Script) {
	t.Helper()
	if err := h.Scope.Add(replay.Install(h.LLM, scripts...)); err != nil {
		t.Fatal(err)
	}
}

func newAgent(t *testing.T, h *core.Host, id string) agent.Agent {
	t.Helper()
	hd, err := h.Agents.Create(context.Background(), agent.CreateOptions{
		AgentID: agent.ID(id), SessionID: session.ID(id + "-session"), Options: agent.Options{Model: "mock"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return hd.Agent
}

func runPrompt(t *testing.T, a agent.Agent, prompt string) {
	t.Helper()
	if err := a.Send(context.Background(), []llm.Block{llm.Text(prompt)}, llm.Source{}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, a)
}

func waitIdle(t *testing.T, a agent.Agent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.WhenIdle(ctx); err != nil {
		t.Fatalf("agent never went idle: %v", err)
	}
}

// comparable renders events without their wall-clock time, one per line.
func comparable(t *testing.T, events []session.Event) string {
	t.Helper()
	var b strings.Builder
	for _, e := range events {
		e.Time = 0
		j, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func types(events []session.Event) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		out = append(out, e.Type)
	}
	return out
}

// TestRecordThenReplay records a two-turn session with a tool round trip on
// the real loop, writes it as session.jsonl, and replays it on a fresh host
// that has no model adapter at all: the replayed log must be the recorded
// one, event for event.
func TestRecordThenReplay(t *testing.T) {
	prompts := []string{"use the tool", "and once more"}

	rec := newHost(t)
	model := scripted.New(
		scripted.Call("call_00", "echo", map[string]string{"text": "ping"}, "calling echo"),
		scripted.Text("the tool said ping"),
		scripted.Calls("", scripted.ToolCall{ID: "call_01", Name: "echo", Args: map[string]string{"text": "a"}},
			scripted.ToolCall{ID: "call_02", Name: "echo", Args: map[string]string{"text": "b"}}),
		scripted.MaxTokens("truncated answ"),
	)
	if _, err := rec.LLM.RegisterModels([]string{"mock"}, model); err != nil {
		t.Fatal(err)
	}
	recorded := newAgent(t, rec, "main")
	for _, p := range prompts {
		runPrompt(t, recorded, p)
	}
	recEvents := recorded.Session().Events()
	if model.Calls() != 4 {
		t.Fatalf("recording made %d model calls", model.Calls())
	}

	path := filepath.Join(t.TempDir(), "session.jsonl")
	writeFile(t, filepath.Dir(path), filepath.Base(path), jsonl(t, recorded.Session().Header(), recEvents))
	scripts, err := replay.LoadFile(path, filepath.Join(filepath.Dir(path), "replay.override.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(scripts) != 1 || len(scripts[0].Entries) != 4 {
		t.Fatalf("scripts %+v", scripts)
	}

	rep := newHost(t)
	var mu sync.Mutex
	var requests []*llm.Request
	rep.LLM.StreamPoint.Use(func(ctx context.Context, req *llm.Request, next func(context.Context, *llm.Request) (llm.Stream, error)) (llm.Stream, error) {
		mu.Lock()
		requests = append(requests, req)
		mu.Unlock()
		return next(ctx, req)
	})
	install(t, rep, scripts...)
	replayed := newAgent(t, rep, "main")
	for _, p := range prompts {
		runPrompt(t, replayed, p)
	}

	got, want := comparable(t, replayed.Session().Events()), comparable(t, recEvents)
	if got != want {
		t.Fatalf("replayed log differs from the recording\n--- replayed\n%s--- recorded\n%s", got, want)
	}
	// The replay really ran the loop: the model saw the tool results.
	mu.Lock()
	defer mu.Unlock()
	if len(requests) != 4 || !strings.Contains(mustJSON(t, requests[1].Messages), "echo: ping") {
		t.Fatalf("%d requests; second %s", len(requests), mustJSON(t, requests[1].Messages))
	}
	if ends := lastReason(t, replayed.Session()); ends.Kind != session.EndMaxTokens {
		t.Fatalf("turn 2 ended %+v", ends)
	}
}

// The provider-error fixture shape: a throw sidecar and no chunks.
func TestReplayThrowThroughLoop(t *testing.T) {
	h := newHost(t)
	install(t, h, replay.Script{Entries: []replay.Entry{
		{Kind: replay.KindThrow, Chunks: []llm.Chunk{}, Message: "simulated provider error (HTTP 401)", Code: "AUTH", Status: 401},
	}})
	a := newAgent(t, h, "main")
	runPrompt(t, a, "hi")
	events := a.Session().Events()
	if got := strings.Join(types(events), ","); got != "turn/start,user/message,step/start,step/end,turn/end" {
		t.Fatalf("events %s", got)
	}
	want := session.EndReason{Kind: session.EndError, Step: 1, Message: "simulated provider error (HTTP 401)", Code: "AUTH"}
	if got := lastReason(t, a.Session()); got != want {
		t.Fatalf("reason %+v", got)
	}
}

// The cancel fixture shape: a hang sidecar, two chunks, then the cancel.
func TestReplayHangThroughLoop(t *testing.T) {
	h := newHost(t)
	install(t, h, replay.Script{Entries: []replay.Entry{{Kind: replay.KindHang}}})
	streaming := make(chan struct{})
	var once sync.Once
	h.Sessions.Appended.Listen(func(_ context.Context, ap session.Appended) error {
		if ap.Event.Type == session.TypeAssistantChunk && ap.Event.Seq == 4 {
			once.Do(func() { close(streaming) })
		}
		return nil
	})
	a := newAgent(t, h, "main")
	if err := a.Send(context.Background(), []llm.Block{llm.Text("hi")}, llm.Source{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-streaming:
	case <-time.After(10 * time.Second):
		t.Fatal("the hanging call never streamed its partial block")
	}
	a.Cancel("session/cancel")
	waitIdle(t, a)
	events := a.Session().Events()
	// The partial answer is kept and the turn ends with the interrupt
	// marker (loop.InterruptedMarker).
	if got := strings.Join(types(events), ","); got != "turn/start,user/message,step/start,assistant/chunk,assistant/chunk,assistant/message,step/end,context/message,turn/end" {
		t.Fatalf("events %s", got)
	}
	if got := lastReason(t, a.Session()); got != (session.EndReason{Kind: session.EndAborted, Reason: "session/cancel"}) {
		t.Fatalf("reason %+v", got)
	}
}

// Two agents on one host: each session binds its own script on its first
// call, so their model calls cannot cross even when they interleave.
func TestReplayTwoSessions(t *testing.T) {
	h := newHost(t)
	install(t, h,
		replay.Script{Entries: []replay.Entry{entry("first agent")}},
		replay.Script{Entries: []replay.Entry{entry("second agent")}},
	)
	a := newAgent(t, h, "a")
	runPrompt(t, a, "hi")
	b := newAgent(t, h, "b")
	runPrompt(t, b, "hi")
	for ag, want := range map[agent.Agent]string{a: "first agent", b: "second agent"} {
		m, err := ag.Session().Messages()
		if err != nil || len(m) != 2 || llm.TextOf(m[1].Content) != want {
			t.Fatalf("%s: %+v %v", ag.ID(), m, err)
		}
	}
	// A third session was never recorded: its turn fails with the replay error.
	c := newAgent(t, h, "c")
	runPrompt(t, c, "hi")
	if r := lastReason(t, c.Session()); r.Kind != session.EndError || !strings.Contains(r.Message, "unrecorded session (#3") {
		t.Fatalf("reason %+v", r)
	}
}

func lastReason(t *testing.T, s *session.Session) session.EndReason {
	t.Helper()
	e, ok := s.Last(session.TypeTurnEnd)
	if !ok {
		t.Fatal("no turn/end")
	}
	te, err := session.Decode[session.TurnEnd](e)
	if err != nil {
		t.Fatal(err)
	}
	return te.Reason
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
