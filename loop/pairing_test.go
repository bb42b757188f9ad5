package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dshq/dsh/agent"
	bashlocal "github.com/dshq/dsh/bash/local"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
	"github.com/dshq/dsh/tools/bashtool"
)

// checkPairing fails unless every assistant tool call in msgs is directly
// followed by its results: only tool-result messages may come between an
// assistant's tool calls and the last of their results, and every call has
// exactly one. Providers reject histories that break this (OpenAI and
// DeepSeek answer 400; Anthropic wants tool_result right after tool_use).
func checkPairing(t *testing.T, msgs []llm.Message) {
	t.Helper()
	for i, m := range msgs {
		if m.Role != llm.RoleAssistant {
			continue
		}
		open := map[llm.CallID]bool{}
		for _, b := range m.Content {
			if b.Type == llm.BlockToolCall {
				open[b.ID] = true
			}
		}
		for j := i + 1; len(open) > 0; j++ {
			if j == len(msgs) {
				t.Fatalf("message %d: tool calls %v have no result\n%s", i, open, dump(msgs))
			}
			for _, b := range msgs[j].Content {
				if b.Type != llm.BlockToolResult {
					t.Fatalf("message %d (%s %q) sits between the tool calls of message %d and their results %v\n%s",
						j, msgs[j].Role, llm.TextOf(msgs[j].Content), i, open, dump(msgs))
				}
				if !open[b.ToolCallID] {
					t.Fatalf("message %d: result for %s, which is not an open call of message %d\n%s", j, b.ToolCallID, i, dump(msgs))
				}
				delete(open, b.ToolCallID)
			}
		}
	}
}

func dump(msgs []llm.Message) string {
	var sb strings.Builder
	for i, m := range msgs {
		fmt.Fprintf(&sb, "  %d %s:", i, m.Role)
		for _, b := range m.Content {
			switch b.Type {
			case llm.BlockToolCall:
				fmt.Fprintf(&sb, " call(%s)", b.ID)
			case llm.BlockToolResult:
				fmt.Fprintf(&sb, " result(%s %q)", b.ToolCallID, llm.TextOf(b.Content))
			default:
				fmt.Fprintf(&sb, " %q", b.Text)
			}
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// checkLogPairing fails unless every tool call block of every
// assistant/message has a tool/result in the same step, before step/end,
// and every tool/call event has its tool/result.
func checkLogPairing(t *testing.T, s *session.Session) {
	t.Helper()
	owed := map[llm.CallID]int64{}
	called := map[llm.CallID]int64{}
	for _, e := range s.Events() {
		switch e.Type {
		case session.TypeAssistantMessage:
			for _, b := range mustDecode[session.AssistantMessage](t, e).Content {
				if b.Type == llm.BlockToolCall {
					owed[b.ID] = e.Seq
				}
			}
		case session.TypeToolCall:
			called[mustDecode[session.ToolCall](t, e).CallID] = e.Seq
		case session.TypeToolResult:
			id := mustDecode[session.ToolResult](t, e).CallID
			delete(owed, id)
			delete(called, id)
		case session.TypeStepEnd:
			if len(owed) > 0 || len(called) > 0 {
				t.Fatalf("step/end (seq %d) with calls owed %v, tool/calls without result %v:\n%v", e.Seq, owed, called, types(s.Events()))
			}
		}
	}
	if len(owed) > 0 || len(called) > 0 {
		t.Fatalf("calls owed %v, tool/calls without result %v", owed, called)
	}
}

func notRun(t *testing.T, s *session.Session, id llm.CallID) session.ToolResult {
	t.Helper()
	for _, e := range ofType(s, session.TypeToolResult) {
		tr := mustDecode[session.ToolResult](t, e)
		if tr.CallID != id {
			continue
		}
		if !tr.IsError || tr.Error == nil || tr.Error.Code != session.CodeNotRun {
			t.Fatalf("result of %s is not a not-run result: %+v", id, tr)
		}
		return tr
	}
	t.Fatalf("no result for %s", id)
	return session.ToolResult{}
}

// Cancel during sequential tool execution: the call that never started
// gets a synthetic error result before step/end, so the next turn's request
// pairs every call with a result.
func TestReviewCancelLeavesUnansweredCall(t *testing.T) {
	hs := newHarness(t,
		scripted.Calls("", scripted.ToolCall{ID: "c1", Name: "stop", Args: map[string]any{}}, scripted.ToolCall{ID: "c2", Name: "never", Args: map[string]any{}}),
		scripted.Text("next turn"))
	var a agent.Agent
	var neverRan atomic.Bool
	register(t, hs,
		funcTool{info: tool.Info{Name: "stop"}, fn: func(ctx context.Context, c tool.Call) (tool.Result, error) {
			a.Cancel("user interrupt")
			return tool.TextResult("stopped"), nil
		}},
		funcTool{info: tool.Info{Name: "never"}, fn: func(ctx context.Context, c tool.Call) (tool.Result, error) {
			neverRan.Store(true)
			return tool.Result{}, nil
		}})
	a = hs.agent(agent.Options{})
	run(t, a, "go")
	if neverRan.Load() {
		t.Fatal("the second tool must not run")
	}
	if r := lastEnd(t, a.Session()); r.Kind != session.EndAborted || r.Reason != "user interrupt" {
		t.Fatalf("%+v", r)
	}
	if errs := hs.errors(); len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
	eq(t, types(a.Session().Events()), []string{"turn/start", "user/message", "step/start", "chunk×10", "assistant/message",
		"tool/call", "tool/result", "tool/result", "step/end", "context/message", "turn/end"})
	checkLogPairing(t, a.Session())
	tr := notRun(t, a.Session(), "c2")
	if got := llm.TextOf(tr.Content); got != "not run: the turn was cancelled (user interrupt)" {
		t.Fatalf("synthetic result %q", got)
	}
	if res := ofType(a.Session(), session.TypeToolResult)[1]; res.SourceEventSeqs != nil {
		t.Fatalf("a call that never started has no tool/call to point at: %v", res.SourceEventSeqs)
	}
	run(t, a, "again")
	reqs := hs.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	checkPairing(t, reqs[1].Messages)
	if lastEnd(t, a.Session()).Kind != session.EndCompleted {
		t.Fatal("the next turn must complete")
	}
}

// Cancel while a parallel batch is being prepared: the calls already
// recorded as tool/call and the call never prepared all get results.
func TestReviewCancelDuringParallelPrepare(t *testing.T) {
	hs := newHarness(t,
		scripted.Calls("",
			scripted.ToolCall{ID: "p1", Name: "peek", Args: map[string]any{}},
			scripted.ToolCall{ID: "p2", Name: "peek", Args: map[string]any{}},
			scripted.ToolCall{ID: "p3", Name: "peek", Args: map[string]any{}}),
		scripted.Text("next turn"))
	var a agent.Agent
	var ran atomic.Int32
	register(t, hs, funcTool{info: tool.Info{Name: "peek", ReadOnly: true, Concurrent: true}, fn: func(ctx context.Context, c tool.Call) (tool.Result, error) {
		ran.Add(1)
		return tool.TextResult("peeked"), nil
	}})
	hs.h.Tools.PreExecute.Use(func(ctx context.Context, c tool.Call, next func(context.Context, tool.Call) (tool.Decision, error)) (tool.Decision, error) {
		if c.ID == "p2" {
			a.Cancel("user interrupt")
		}
		return next(ctx, c)
	})
	a = hs.agent(agent.Options{})
	run(t, a, "go")
	if r := lastEnd(t, a.Session()); r.Kind != session.EndAborted || r.Reason != "user interrupt" {
		t.Fatalf("%+v", r)
	}
	if ran.Load() != 0 {
		t.Fatalf("%d tools ran after the cancel", ran.Load())
	}
	eq(t, types(a.Session().Events()), []string{"turn/start", "user/message", "step/start", "chunk×14", "assistant/message",
		"tool/call", "tool/call", "tool/result", "tool/result", "tool/result", "step/end", "context/message", "turn/end"})
	checkLogPairing(t, a.Session())
	for _, id := range []llm.CallID{"p1", "p2", "p3"} {
		notRun(t, a.Session(), id)
	}
	res := ofType(a.Session(), session.TypeToolResult)
	calls := ofType(a.Session(), session.TypeToolCall)
	if res[0].SourceEventSeqs[0] != calls[0].Seq || res[1].SourceEventSeqs[0] != calls[1].Seq || res[2].SourceEventSeqs != nil {
		t.Fatalf("provenance %v %v %v", res[0].SourceEventSeqs, res[1].SourceEventSeqs, res[2].SourceEventSeqs)
	}
	run(t, a, "again")
	checkPairing(t, hs.model.Requests()[1].Messages)
}

// A step whose assistant/message listener fails never reaches its tools;
// its calls are still answered before step/end.
func TestStepErrorAfterAssistantMessageAnswersCalls(t *testing.T) {
	hs := newHarness(t, scripted.Call("c1", "echo", map[string]string{"text": "x"}, ""), scripted.Text("ok"))
	register(t, hs, echoTool())
	var fail atomic.Bool
	fail.Store(true)
	hs.h.Sessions.Appended.Listen(func(_ context.Context, ap session.Appended) error {
		if ap.Event.Type == session.TypeAssistantMessage && fail.CompareAndSwap(true, false) {
			return errBoom
		}
		return nil
	})
	a := hs.agent(agent.Options{})
	run(t, a, "go")
	if r := lastEnd(t, a.Session()); r.Kind != session.EndError {
		t.Fatalf("%+v", r)
	}
	checkLogPairing(t, a.Session())
	tr := notRun(t, a.Session(), "c1")
	if got := llm.TextOf(tr.Content); !strings.HasPrefix(got, "not run: the step failed") {
		t.Fatalf("synthetic result %q", got)
	}
	run(t, a, "again")
	checkPairing(t, hs.model.Requests()[1].Messages)
}

// Context injected while a step's tools run (here by the tool itself, and
// by another goroutine) is held until the step's results are recorded, in
// arrival order, after post-execute context.
func TestInjectDuringToolsIsHeld(t *testing.T) {
	hs := newHarness(t,
		scripted.Calls("", scripted.ToolCall{ID: "c1", Name: "chatty", Args: map[string]any{}}, scripted.ToolCall{ID: "c2", Name: "chatty", Args: map[string]any{}}),
		scripted.Text("done"))
	var a agent.Agent
	register(t, hs, funcTool{info: tool.Info{Name: "chatty"}, fn: func(ctx context.Context, c tool.Call) (tool.Result, error) {
		if err := c.Host.Inject(ctx, text("from "+string(c.ID)), llm.PluginSource("test")); err != nil {
			return tool.Result{}, err
		}
		// Held context is still checked: the log would refuse this.
		if err := c.Host.Inject(ctx, []llm.Block{{Type: "weird", Raw: []byte("{not json")}}, llm.PluginSource("test")); err == nil {
			return tool.Result{}, fmt.Errorf("non-JSON context was accepted")
		}
		done := make(chan error)
		go func() { done <- a.Inject(context.Background(), text("async "+string(c.ID)), llm.PluginSource("test")) }()
		if err := <-done; err != nil {
			return tool.Result{}, err
		}
		return tool.TextResult("ok " + string(c.ID)), nil
	}})
	hs.h.Tools.PostExecute.Use(func(ctx context.Context, in tool.PostInput, next func(context.Context, tool.PostInput) (tool.PostDecision, error)) (tool.PostDecision, error) {
		out, err := next(ctx, in)
		out.Context = &tool.Context{Content: text("post " + string(in.Call.ID)), Source: llm.PluginSource("test")}
		return out, err
	})
	a = hs.agent(agent.Options{})
	run(t, a, "go")
	eq(t, types(a.Session().Events()), []string{"turn/start", "user/message", "step/start", "chunk×10", "assistant/message",
		"tool/call", "tool/result", "tool/call", "tool/result",
		"context/message", "context/message", "context/message", "context/message", "context/message", "context/message",
		"step/end", "step/start", "chunk×8", "assistant/message", "step/end", "turn/end"})
	var got []string
	for _, e := range ofType(a.Session(), session.TypeContextMessage) {
		got = append(got, llm.TextOf(mustDecode[session.Prompt](t, e).Content))
	}
	eq(t, got, []string{"from c1", "async c1", "post c1", "from c2", "async c2", "post c2"})
	checkPairing(t, hs.model.Requests()[1].Messages)
	// Held context is released: injects after the step land at once.
	if err := a.Inject(context.Background(), text("later"), llm.Source{}); err != nil {
		t.Fatal(err)
	}
	if e, _ := a.Session().Last(session.TypeContextMessage); llm.TextOf(mustDecode[session.Prompt](t, e).Content) != "later" {
		t.Fatal("inject after the turn was not recorded")
	}
}

// A background bash task's completion notice that arrives while a
// foreground bash call runs lands after that call's result.
func TestReviewBashNoticeSplitsToolPair(t *testing.T) {
	hs := newHarness(t,
		scripted.Calls("", scripted.ToolCall{ID: "b1", Name: "bash", Args: map[string]any{"command": "sleep 0.1", "description": "bg", "run_in_background": true}}),
		scripted.Calls("", scripted.ToolCall{ID: "b2", Name: "bash", Args: map[string]any{"command": "sleep 0.6", "description": "fg"}}),
		scripted.Text("done"))
	ex, err := bashlocal.New(bashlocal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ex.Close() })
	register(t, hs, bashtool.Tools(ex, bashtool.Options{})...)
	hd, err := hs.h.Agents.Create(context.Background(), agent.CreateOptions{AgentID: "a1", SessionID: "a1-session",
		Header: session.Header{Cwd: t.TempDir()}, Options: agent.Options{Model: "mock"}})
	if err != nil {
		t.Fatal(err)
	}
	a := hd.Agent
	run(t, a, "go")
	reqs := hs.model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	last := reqs[2].Messages
	checkPairing(t, last)
	found := false
	for i, m := range last {
		if m.Role == llm.RoleAssistant && len(m.Content) > 0 && m.Content[len(m.Content)-1].ID == "b2" {
			if i+1 >= len(last) || last[i+1].Content[0].ToolCallID != "b2" {
				t.Fatalf("the message after the b2 call is not its result:\n%s", dump(last))
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("no b2 call in the last request:\n%s", dump(last))
	}
	if !strings.Contains(requestText(reqs[2]), "background bash task") {
		t.Fatalf("the completion notice is missing from the last request:\n%s", dump(last))
	}
	checkLogPairing(t, a.Session())
}

// A session written by an older build, whose cancelled step left a call
// without a result, resumes and its next request is well-formed.
func TestResumeOldLogWithUnansweredCall(t *testing.T) {
	hs := newHarness(t, scripted.Text("ok"))
	ev := func(seq int64, typ string, data any, surface bool) session.Event {
		b, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		e := session.Event{Seq: seq, Type: typ, Data: b}
		if surface {
			op := session.AppendOp
			e.SurfaceOp = &op
		}
		return e
	}
	seed := []session.Event{
		ev(0, session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: session.TriggerMessage}}, false),
		ev(1, session.TypeUserMessage, session.Prompt{Content: text("go")}, true),
		ev(2, session.TypeStepStart, session.StepBoundary{Turn: 1, Step: 1}, false),
		ev(3, session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1, Content: []llm.Block{
			llm.ToolCall("c1", "stop", "{}"), llm.ToolCall("c2", "never", "{}")}}, true),
		ev(4, session.TypeToolCall, session.ToolCall{Turn: 1, Step: 1, CallID: "c1", Name: "stop", Arguments: "{}"}, false),
		ev(5, session.TypeToolResult, session.ToolResult{Turn: 1, Step: 1, CallID: "c1", Content: text("stopped")}, true),
		ev(6, session.TypeStepEnd, session.StepBoundary{Turn: 1, Step: 1}, false),
		ev(7, session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndAborted, Reason: "user interrupt"}}, false),
	}
	seed[5].SourceEventSeqs = []int64{4}
	hd, err := hs.h.Agents.Create(context.Background(), agent.CreateOptions{AgentID: "old", SessionID: "old-session", Seed: seed, Options: agent.Options{Model: "mock"}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, hd.Agent, "again")
	msgs := hs.model.Requests()[0].Messages
	checkPairing(t, msgs)
	if r := msgs[3].Content[0]; r.ToolCallID != "c2" || !r.IsError || llm.TextOf(r.Content) != session.UnansweredText {
		t.Fatalf("synthetic result %+v", r)
	}
}
