package compact

import (
	"context"
	"strings"
	"testing"

	"github.com/dshq/dsh/internal/ownership"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
)

// TestNodeTokensMatchEventTokens: weighing a node from its derived message
// gives what decoding its event gave, for every kind of surface event
// (context and steering messages arrive wrapped in an envelope), live and
// after a resume decodes the log.
func TestNodeTokensMatchEventTokens(t *testing.T) {
	s, w, must := newTestLog(t)
	ctx := context.Background()
	must(w.Append(ctx, session.TypeTurnStart, session.TurnStart{Turn: 1}))
	must(w.AppendSurface(ctx, session.TypeUserMessage, session.Prompt{Content: []llm.Block{llm.Text("do the thing, please"), {Type: llm.BlockImage, URL: "https://x/y.png"}}}, session.AppendOp, nil))
	must(w.AppendSurface(ctx, session.TypeContextMessage, session.Prompt{Content: []llm.Block{llm.Text("a file changed on disk")}, Source: llm.PluginSource("watch")}, session.AppendOp, nil))
	must(w.AppendSurface(ctx, session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1, Content: []llm.Block{
		llm.Reasoning("hmm"), llm.Text("calling"), llm.ToolCall("c1", "read", `{"path":"a.go"}`)}}, session.AppendOp, nil))
	must(w.AppendSurface(ctx, session.TypeToolResult, session.ToolResult{Turn: 1, Step: 1, CallID: "c1", Content: []llm.Block{llm.Text("package a\n\nfunc A() {}\n")}}, session.AppendOp, nil))
	must(w.AppendSurface(ctx, session.TypeToolResult, session.ToolResult{Turn: 1, Step: 1, CallID: "c2"}, session.AppendOp, nil))
	must(w.AppendSurface(ctx, session.TypeSteeringMessage, session.Steering{Turn: 1, Content: []llm.Block{llm.Text("use tabs")}}, session.AppendOp, nil))
	must(w.AppendSurface(ctx, session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 2}, session.AppendOp, nil))
	// A resumed session derives from the payloads alone.
	var seed []session.Event
	for _, e := range s.Events() {
		seed = append(seed, session.Event{Type: e.Type, Seq: e.Seq, Time: e.Time, Data: e.Data, SourceEventSeqs: e.SourceEventSeqs, SurfaceOp: e.SurfaceOp})
	}
	resumed, err := session.New("r", session.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	for name, sess := range map[string]*session.Session{"live": s, "resumed": resumed} {
		nodes, err := sess.SurfaceNodes(-1)
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != 7 {
			t.Fatalf("%s: %d surface nodes, want 7", name, len(nodes))
		}
		for _, n := range nodes {
			ev, _ := sess.Event(n.Seq)
			if got, want := nodeTokens(n), EventTokens(ev); got != want {
				t.Errorf("%s: %s (seq %d): nodeTokens %d, EventTokens %d", name, n.Type, n.Seq, got, want)
			}
		}
	}
}

// TestResultHeader: the step and harness error of a tool/result come from
// its payload whatever the field order (dsh writes the step first; another
// writer may not), and an error result keeps its error.
func TestResultHeader(t *testing.T) {
	cases := []struct {
		name, data string
		isError    bool
		step       int
		code       string
	}{
		{"dsh order", `{"turn":3,"step":7,"callId":"c1","content":[{"type":"text","text":"` + strings.Repeat("x", 5000) + `"}],"isError":false}`, false, 7, ""},
		{"step after content", `{"content":[{"type":"text","text":"big"}],"callId":"c1","turn":3,"step":9}`, false, 9, ""},
		{"error result", `{"turn":1,"step":2,"callId":"c1","content":[],"isError":true,"error":{"name":"ToolError","code":"timeout"}}`, true, 2, "timeout"},
	}
	for _, c := range cases {
		tr, err := resultHeader(session.Event{Type: session.TypeToolResult, Data: []byte(c.data)}, c.isError)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		code := ""
		if tr.Error != nil {
			code = tr.Error.Code
		}
		if tr.Step != c.step || code != c.code {
			t.Errorf("%s: step %d, error code %q; want %d, %q", c.name, tr.Step, code, c.step, c.code)
		}
	}
	if _, err := resultHeader(session.Event{Type: session.TypeToolResult, Data: []byte(`{"turn":1,`)}, false); err == nil {
		t.Error("a torn payload was read without an error")
	}
}

// newTestLog is a fresh in-memory session, its loop writer, and a check
// that fails the test on an append error — the shape every internal test
// here builds its log with.
func newTestLog(t *testing.T) (*session.Session, session.Writer, func(session.Event, error)) {
	t.Helper()
	s, err := session.New("s", session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	must := func(_ session.Event, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	return s, s.Writer(ownership.Loop), must
}
