package term

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// recorder builds a realistic event log through a real session.
type recorder struct {
	t   *testing.T
	s   *session.Session
	now time.Time
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{t: t, now: time.UnixMilli(1_700_000_000_000)}
	s, err := session.New("s1", session.Options{Clock: func() time.Time { r.now = r.now.Add(100 * time.Millisecond); return r.now }})
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	return r
}

func (r *recorder) add(typ string, data any) {
	r.t.Helper()
	var err error
	if session.SurfaceEligible(typ) {
		_, err = r.s.Writer(ownership.Fixtures).AppendSurface(context.Background(), typ, data, session.AppendOp, nil)
	} else {
		_, err = r.s.Writer(ownership.Fixtures).Append(context.Background(), typ, data)
	}
	if err != nil {
		r.t.Fatal(err)
	}
}

func (r *recorder) chunk(turn, step int, c llm.Chunk) {
	r.t.Helper()
	if _, err := r.s.Writer(ownership.Fixtures).AppendChunk(context.Background(), turn, step, c); err != nil {
		r.t.Fatal(err)
	}
}

func newTestTranscript(t *testing.T, width int) *Transcript {
	return NewTranscript(plain, newMarkdown(true, func(string) string { return "" }), realTools(t), func() int { return width })
}

func TestTranscriptFromEvents(t *testing.T) {
	r := newRecorder(t)
	bashArgs := `{"command":"go test ./...","description":"Run the tests"}`
	r.add(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: session.TriggerMessage}})
	r.add(session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text("fix the tests")}})
	r.add(session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 1})
	r.chunk(1, 1, llm.StartChunk(0, llm.BlockReasoning))
	r.chunk(1, 1, llm.ReasoningChunk(0, "The user wants tests fixed.\n"))
	r.chunk(1, 1, llm.ReasoningChunk(0, "First run them."))
	tr := newTestTranscript(t, 80)
	apply := func(from int) int {
		evs := r.s.Events()
		for _, e := range evs[from:] {
			tr.Apply(e)
		}
		return len(evs)
	}
	n := apply(0)
	if live := joinRows(tr.Live(80, 0, "⠋", 5)); live != "✻ First run them." {
		t.Fatalf("live while thinking: %q", live)
	}
	r.chunk(1, 1, llm.StartChunk(1, llm.BlockText))
	r.chunk(1, 1, llm.TextChunk(1, "Running the "))
	r.chunk(1, 1, llm.TextChunk(1, "tests now."))
	r.chunk(1, 1, llm.ToolDeltaChunk(2, "c1", "bash", bashArgs[:10]))
	n = apply(n)
	if live := joinRows(tr.Live(80, 0, "⠋", 5)); live != "  Running the tests now.\n⠋ preparing bash (10 bytes)" {
		t.Fatalf("live while streaming: %q", live)
	}
	r.add(session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1, Model: "demo/offline",
		Content: []llm.Block{llm.Reasoning("The user wants tests fixed.\nFirst run them."), llm.Text("Running the tests now."), llm.ToolCall("c1", "bash", bashArgs)},
		Usage:   &llm.Usage{InputTokens: 1200, OutputTokens: 80, CacheReadTokens: 1000, CacheWriteTokens: 200}})
	r.add(session.TypeToolCall, session.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: "bash", Arguments: bashArgs})
	n = apply(n)
	if live := joinRows(tr.Live(80, r.now.UnixMilli()+1500, "⠋", 5)); live != "⠋ Bash go test ./... · Run the tests · running 1.5s" {
		t.Fatalf("live while running: %q", live)
	}
	r.add(session.TypeToolResult, session.ToolResult{Turn: 1, Step: 1, CallID: "c1",
		Content: []llm.Block{llm.Text("ok  \tpkg\t0.1s\n")}, Meta: []byte(`{"exitCode":0}`)})
	r.add(TodoType, map[string]any{"todos": []session.TodoItem{
		{Content: "Run the tests", Status: "completed"},
		{Content: "Fix the failure", Status: "in_progress", ActiveForm: "Fixing the failure"},
		{Content: "Re-run", Status: "pending"},
	}})
	r.add(session.TypeStepEnd, session.StepBoundary{Turn: 1, Step: 1})
	r.add(session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 2})
	r.add(session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 2,
		Content: []llm.Block{llm.Text("All tests pass.")}, Usage: &llm.Usage{InputTokens: 1300, OutputTokens: 20}})
	r.add(session.TypeStepEnd, session.StepBoundary{Turn: 1, Step: 2})
	r.add(session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndCompleted}})
	apply(n)
	if live := tr.Live(80, 0, "⠋", 5); len(live) != 0 {
		t.Fatalf("live after the turn: %q", live)
	}
	got := tr.Take()
	want := `› fix the tests

✻ The user wants tests fixed. … (2 lines, /thinking to show)

  Running the tests now.

● Bash go test ./... · Run the tests · 0.1s
  ⎿ ok      pkg    0.1s

☰ Todos 1/3
  [x] Run the tests
  [~] Fixing the failure
  [ ] Re-run

  All tests pass.

✻ 1.8s · 2 steps · in 2.5k · out 100 · cache read 1.0k · cache write 200
`
	if got != want {
		t.Fatalf("transcript:\n%s\nwant:\n%s", got, want)
	}
	if tr.Total.InputTokens != 2500 || tr.Model != "demo/offline" || tr.Busy() {
		t.Fatalf("totals: %+v model %q busy %v", tr.Total, tr.Model, tr.Busy())
	}
	tr.ShowThinking = true
	if th := tr.thinking(tr.LastReasoning); th != "✻ Thinking\n│ The user wants tests fixed.\n│ First run them." {
		t.Fatalf("full thinking: %q", th)
	}
}

func TestTranscriptInterruptedTurn(t *testing.T) {
	r := newRecorder(t)
	r.add(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: session.TriggerMessage}})
	r.add(session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text("long\nprompt")}})
	r.add(session.TypeSteeringMessage, session.Steering{Turn: 1, Content: []llm.Block{llm.Text("also this")}})
	r.add(session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 1})
	r.chunk(1, 1, llm.TextChunk(0, "partial answ"))
	r.add(session.TypeToolCall, session.ToolCall{Turn: 1, Step: 1, CallID: "c9", Name: "bash", Arguments: `{"command":"sleep 30"}`})
	r.add(session.TypeApprovalRequest, session.ApprovalRequest{Turn: 1, Step: 1, CallID: "c9", Name: "bash"})
	r.add(session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndAborted, Reason: "interrupted by user"}})
	tr := newTestTranscript(t, 60)
	for _, e := range r.s.Events() {
		tr.Apply(e)
	}
	got := tr.Take()
	want := `› long
  prompt

› also this  (steering)

  partial answ
  (incomplete)

● Bash command=sleep 30 · failed · 0.2s
  ⎿ no result (aborted)

⏹ Interrupted · interrupted by user
✻ 0.7s · in 0 · out 0 · cache read 0 · cache write 0
`
	if got != want {
		t.Fatalf("transcript:\n%s\nwant:\n%s", got, want)
	}
}

func TestTranscriptErrorTurnAndBlocked(t *testing.T) {
	r := newRecorder(t)
	r.add(session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: session.TriggerMessage}})
	r.add(session.TypePromptBlocked, session.PromptBlocked{Reason: "hook said no"})
	r.add(session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndError, Message: "401 unauthorized", Code: "auth"}})
	tr := newTestTranscript(t, 60)
	for _, e := range r.s.Events() {
		tr.Apply(e)
	}
	if got := tr.Take(); got != "✗ prompt blocked: hook said no\n\n✗ Error: 401 unauthorized (auth)\n" {
		t.Fatalf("got %q", got)
	}
}

func TestTranscriptMarkdownAndLongStream(t *testing.T) {
	tr := newTestTranscript(t, 40)
	tr.Apply(mkEvent(t, session.TypeAssistantMessage, session.AssistantMessage{Content: []llm.Block{llm.Text("# Title\n\n- one\n- two\n\n```go\nx := 1\n```")}}))
	got := tr.Take()
	for _, s := range []string{"Title", "one", "two", "x := 1"} {
		if !strings.Contains(got, s) {
			t.Fatalf("markdown output lacks %q:\n%s", s, got)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if w := len([]rune(stripANSI(l))); w > 40 {
			t.Errorf("row wider than 40 (%d): %q", w, l)
		}
	}
	// Streaming text shows only its tail in the live region (here an
	// open code block: nothing is complete yet).
	var sb strings.Builder
	sb.WriteString("```\n")
	for i := range 30 {
		sb.WriteString("line " + string(rune('A'+i)) + "\n")
	}
	tr.Apply(mkEvent(t, session.TypeAssistantChunk, session.AssistantChunk{Chunk: llm.TextChunk(0, sb.String())}))
	live := tr.Live(40, 0, "", 4)
	if len(live) != 4 || !strings.Contains(live[0], "…") || live[3] != "    line ^" || live[2] != "    line ]" {
		t.Fatalf("live tail: %q", live)
	}
}

func mkEvent(t *testing.T, typ string, data any) session.Event {
	t.Helper()
	s, err := session.New("x", session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var e session.Event
	if session.SurfaceEligible(typ) {
		e, err = s.Writer(ownership.Fixtures).AppendSurface(context.Background(), typ, data, session.AppendOp, nil)
	} else {
		e, err = s.Writer(ownership.Fixtures).Append(context.Background(), typ, data)
	}
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestRenderTodosColour(t *testing.T) {
	got := RenderTodos([]session.TodoItem{{Content: "a", Status: "completed"}, {Content: "b", Status: "in_progress"}, {Content: "c", Status: "pending"}}, NewStyles(false))
	if plain := stripANSI(got); plain != "☰ Todos 1/3\n  [x] a\n  [~] b\n  [ ] c" {
		t.Fatalf("todos: %q", plain)
	}
}

func TestMarkdownTrimsPadding(t *testing.T) {
	m := newMarkdown(false, func(string) string { return "" })
	out := m.Render("Hello `code` here.\n\n- a\n- b", 60)
	for _, l := range strings.Split(out, "\n") {
		if p := stripANSI(l); strings.TrimRight(p, " ") != p {
			t.Errorf("padded row %q", p)
		}
	}
	if p := stripANSI(out); !strings.Contains(p, "Hello") || !strings.Contains(p, "• a") {
		t.Fatalf("rendered: %q", p)
	}
}
