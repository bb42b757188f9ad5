package term

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/subagent"
)

// taskRouter answers the parent session (whose first prompt is PARENT-GO)
// and its task children (whose prompt is CHILD-PROMPT) differently. The
// child's last step waits for gate, so the test sees it while it runs.
type taskRouter struct {
	mu    sync.Mutex
	steps map[string]int
	gate  chan struct{}
}

func firstUserText(req *llm.Request) string {
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser {
			return llm.TextOf(m.Content)
		}
	}
	return ""
}

func (r *taskRouter) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	r.mu.Lock()
	n := r.steps[req.SessionID]
	r.steps[req.SessionID] = n + 1
	r.mu.Unlock()
	var chunks []llm.Chunk
	wait := false
	switch first := firstUserText(req); {
	case strings.Contains(first, "PARENT-GO") && n == 0:
		chunks = scripted.CallChunks("", scripted.ToolCall{ID: "task-1", Name: "task",
			Args: map[string]string{"description": "look around", "prompt": "CHILD-PROMPT list the files"}})
	case strings.Contains(first, "PARENT-GO"):
		chunks = scripted.TextChunks("parent is all done", llm.FinishStop)
	case strings.Contains(first, "CHILD-PROMPT") && n == 0:
		chunks = scripted.CallChunks("looking around the tree", scripted.ToolCall{ID: "c-1", Name: "bash",
			Args: map[string]string{"command": "echo nested-hi", "description": "say hi"}})
	case strings.Contains(first, "CHILD-PROMPT"):
		chunks, wait = scripted.TextChunks("child found nested-hi\nsecond line", llm.FinishStop), true
	default:
		return nil, scripted.ErrExhausted
	}
	return func(yield func(llm.Chunk, error) bool) {
		if wait {
			select {
			case <-r.gate:
			case <-ctx.Done():
				yield(llm.Chunk{}, context.Cause(ctx))
				return
			}
		}
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	}, nil
}

func TestRunNestedSubagentActivity(t *testing.T) {
	r := &taskRouter{steps: map[string]int{}, gate: make(chan struct{})}
	h := startUI(t, func(a *app.App) {
		if _, err := a.Host.LLM.Register([]llm.ModelInfo{{ID: "router/m"}}, r); err != nil {
			t.Fatal(err)
		}
	})
	h.send("/model router/m\r")
	h.wait("model set to router/m")
	h.send("PARENT-GO\r")
	// While the task card runs, the child's activity shows under it.
	h.wait("Task", "running", "↳ (child) looking around the tree", "↳ Bash echo nested-hi")
	h.wait("↳ Bash echo nested-hi · say hi · ") // the finished call with its time
	close(r.gate)
	h.wait("subagent made 1 tool call", "parent is all done", "✻ ")

	// The child ran on the switched model, under the parent's task call.
	var child session.ID
	for _, e := range h.events(subagent.TypeStart) {
		st, _ := session.Decode[subagent.StartEvent](e)
		if st.CallID == "task-1" {
			child = st.ChildSession
		}
	}
	if child == "" {
		t.Fatal("no subagent/start for the task call")
	}
	r.mu.Lock()
	steps := r.steps[string(child)]
	r.mu.Unlock()
	if steps != 2 {
		t.Fatalf("the child made %d requests to the router, want 2", steps)
	}
	// Completed, the card keeps a count and the nested lines are gone.
	s := h.screen()
	if done := s[strings.LastIndex(s, "● Task"):]; strings.Contains(done, "↳ Bash") {
		t.Fatalf("nested lines left under the completed card:\n%s", done)
	}
	h.exit()
}

func ev(t *testing.T, typ string, at int64, data any) session.Event {
	t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return session.Event{Type: typ, Time: at, Data: b}
}

// TestTranscriptNestedLines drives the nested rendering directly: lines
// are kept per child (grandchildren indented deeper), shown under the task
// card whatever order the child's events and subagent/start arrive in, and
// dropped when the card completes.
func TestTranscriptNestedLines(t *testing.T) {
	tr := newTestTranscript(t, 100)
	tr.Apply(ev(t, session.TypeTurnStart, 1000, session.TurnStart{Turn: 1}))
	tr.Apply(ev(t, session.TypeToolCall, 1000, session.ToolCall{CallID: "t1", Name: "task", Arguments: `{"description":"look","prompt":"p"}`}))
	// The child's first call arrives before subagent/start links it.
	tr.ApplyChild([]session.ID{"kid"}, ev(t, session.TypeToolCall, 1100, session.ToolCall{CallID: "k1", Name: "bash", Arguments: `{"command":"ls -la","description":"list"}`}))
	if rows := strings.Join(tr.Live(100, 1200, "*", 10), "\n"); strings.Contains(rows, "↳") {
		t.Fatalf("unlinked child lines shown:\n%s", rows)
	}
	tr.Apply(ev(t, subagent.TypeStart, 1100, subagent.StartEvent{Provider: "spawn", CallID: "t1", ChildSession: "kid", Depth: 1}))
	tr.ApplyChild([]session.ID{"kid"}, ev(t, session.TypeToolResult, 1300, session.ToolResult{CallID: "k1", Content: []llm.Block{llm.Text("ok")}}))
	tr.ApplyChild([]session.ID{"kid", "grandkid"}, ev(t, session.TypeToolCall, 1400, session.ToolCall{CallID: "g1", Name: "bash", Arguments: `{"command":"pwd","description":"where"}`}))
	tr.ApplyChild([]session.ID{"kid", "grandkid"}, ev(t, session.TypeAssistantMessage, 1500, session.AssistantMessage{Content: []llm.Block{llm.Text("grandkid says\nmore")}}))
	rows := stripANSI(strings.Join(tr.Live(100, 1600, "*", 10), "\n"))
	for _, want := range []string{"\n  ↳ Bash ls -la · list · 0.2s", "\n    ↳ Bash pwd · where · * 0.2s", "\n    ↳ (child) grandkid says"} {
		if !strings.Contains(rows, want) {
			t.Fatalf("live rows lack %q:\n%s", want, rows)
		}
	}
	if strings.Contains(rows, "more") {
		t.Fatalf("only the first line of a child message is shown:\n%s", rows)
	}
	tr.Apply(ev(t, session.TypeToolResult, 1700, session.ToolResult{CallID: "t1", Content: []llm.Block{llm.Text("grandkid says")}}))
	out := stripANSI(tr.Take())
	if strings.Contains(out, "↳ Bash") || !strings.Contains(out, "subagent made 2 tool calls") {
		t.Fatalf("completed card:\n%s", out)
	}
	if rows := tr.Live(100, 1800, "*", 10); len(rows) != 0 {
		t.Fatalf("live rows after completion: %q", rows)
	}
	// Late events of a finished child are ignored.
	tr.ApplyChild([]session.ID{"kid"}, ev(t, session.TypeToolCall, 1900, session.ToolCall{CallID: "k2", Name: "bash", Arguments: `{"command":"true"}`}))
	if len(tr.nested) != 0 {
		t.Fatalf("late child events kept: %v", tr.nested)
	}
}
