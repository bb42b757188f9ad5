package loop_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/prompt"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// §16 A1: a simple text turn.
func TestSimpleTurn(t *testing.T) {
	hs := newHarness(t, scripted.Text("hello there"))
	a := hs.agent(agent.Options{})
	run(t, a, "hi")
	eq(t, types(a.Session().Events()), []string{"turn/start", "user/message", "step/start", "chunk×15", "assistant/message", "step/end", "turn/end"})
	am := mustDecode[session.AssistantMessage](t, ofType(a.Session(), session.TypeAssistantMessage)[0])
	if llm.TextOf(am.Content) != "hello there" || am.Usage == nil || am.Usage.OutputTokens != 11 {
		t.Fatalf("assistant message %+v", am)
	}
	ev := ofType(a.Session(), session.TypeAssistantMessage)[0]
	if len(ev.SourceEventSeqs) != 15 || ev.SourceEventSeqs[0] != 3 {
		t.Fatalf("sourceEventSeqs %v", ev.SourceEventSeqs)
	}
	msgs, err := a.Session().Messages()
	if err != nil || len(msgs) != 2 || msgs[0].Role != llm.RoleUser || llm.TextOf(msgs[1].Content) != "hello there" {
		t.Fatalf("derived %v %v", msgs, err)
	}
	if got := lastEnd(t, a.Session()).Kind; got != session.EndCompleted {
		t.Fatalf("reason %s", got)
	}
	st := hs.statuses()
	if len(st) != 2 || st[0] != agent.Running || st[1] != agent.Idle {
		t.Fatalf("status trace %v", st)
	}
}

// §16 A2: a tool round trip; request 2 carries the tool result.
func TestToolRoundTrip(t *testing.T) {
	hs := newHarness(t, scripted.Call("c1", "echo", map[string]string{"text": "ping"}, "calling echo"), scripted.Text("done"))
	register(t, hs, echoTool())
	a := hs.agent(agent.Options{})
	run(t, a, "go")
	eq(t, types(a.Session().Events()), []string{"turn/start", "user/message", "step/start", "chunk×9", "assistant/message",
		"tool/call", "tool/result", "step/end", "step/start", "chunk×8", "assistant/message", "step/end", "turn/end"})
	res := ofType(a.Session(), session.TypeToolResult)[0]
	tr := mustDecode[session.ToolResult](t, res)
	call := ofType(a.Session(), session.TypeToolCall)[0]
	if tr.IsError || llm.TextOf(tr.Content) != "echo: ping" || res.SourceEventSeqs[0] != call.Seq {
		t.Fatalf("result %+v %v", tr, res.SourceEventSeqs)
	}
	reqs := hs.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls", len(reqs))
	}
	m := reqs[1].Messages
	if len(m) != 3 || m[2].Content[0].Type != llm.BlockToolResult || m[2].Content[0].ToolCallID != "c1" {
		t.Fatalf("request 2 %+v", m)
	}
	if reqs[0].Tools[0].Name != "echo" {
		t.Fatalf("tools %v", reqs[0].Tools)
	}
}

// §16 A3: system prompt sections and the agent suffix.
func TestSystemPromptAndTools(t *testing.T) {
	hs := newHarness(t, scripted.Text("ok"), scripted.Text("ok"))
	hs.h.Prompt.Section(prompt.Section{Name: "persona", Text: "You are a test agent."})
	a := hs.agent(agent.Options{SystemPrompt: "Agent-specific suffix."})
	run(t, a, "x")
	r := hs.model.Requests()[0]
	if r.System != "You are a test agent.\n\nAgent-specific suffix." || r.SessionID != string(a.Session().ID()) {
		t.Fatalf("system %q session %q", r.System, r.SessionID)
	}
	if r.Tools != nil {
		t.Fatalf("tools should be absent: %v", r.Tools)
	}
}

// §16 A5: a burst of sends while idle becomes one turn.
func TestBurstBatching(t *testing.T) {
	hs := newHarness(t, scripted.Text("ok"))
	a := hs.agent(agent.Options{})
	gate := make(chan struct{})
	// Hold the driver in the running-status listener so all three sends
	// queue before the turn drains the inbox.
	var once atomic.Bool
	hs.h.Agents.Hub.Status.Listen(func(_ context.Context, c agent.StatusChange) error {
		if c.Status == agent.Running && once.CompareAndSwap(false, true) {
			<-gate
		}
		return nil
	})
	send(t, a, "a")
	send(t, a, "b")
	send(t, a, "c")
	close(gate)
	idle(t, a)
	eq(t, types(a.Session().Events())[:4], []string{"turn/start", "user/message", "user/message", "user/message"})
	if hs.model.Calls() != 1 || a.Session().LastTurn() != 1 {
		t.Fatalf("calls %d turns %d", hs.model.Calls(), a.Session().LastTurn())
	}
}

// §16 A7: a prompt queued during a turn forms the next turn.
func TestQueuedDuringTurn(t *testing.T) {
	hs := newHarness(t, scripted.Text("one"), scripted.Text("two"))
	a := hs.agent(agent.Options{})
	var once atomic.Bool
	hs.h.Sessions.Appended.Listen(func(ctx context.Context, ap session.Appended) error {
		if ap.Event.Type == session.TypeAssistantChunk && once.CompareAndSwap(false, true) {
			return a.Send(ctx, text("second"), llm.Source{})
		}
		return nil
	})
	run(t, a, "first")
	idle(t, a)
	if a.Session().LastTurn() != 2 || hs.model.Calls() != 2 {
		t.Fatalf("turns %d calls %d", a.Session().LastTurn(), hs.model.Calls())
	}
	st := hs.statuses()
	if len(st) != 2 {
		t.Fatalf("status should stay running between chained turns: %v", st)
	}
}

// §16 A8: a missing model fails the step with a clear message; a request
// listener can supply the model.
func TestMissingModel(t *testing.T) {
	hs := newHarness(t, scripted.Text("ok"))
	a := hs.agentRaw("a1", agent.Options{})
	run(t, a, "x")
	eq(t, types(a.Session().Events()), []string{"turn/start", "user/message", "step/start", "step/end", "turn/end"})
	r := lastEnd(t, a.Session())
	if r.Kind != session.EndError || r.Step != 1 || !strings.Contains(r.Message, `agent "a1" has no model`) || r.Code != "" {
		t.Fatalf("reason %+v", r)
	}
	if n := len(hs.errors()); n != 1 {
		t.Fatalf("%d agent errors", n)
	}
	hs.h.Agents.Hub.Request.Use(func(ctx context.Context, in agent.RequestInput, next func(context.Context, agent.RequestInput) (*llm.Request, error)) (*llm.Request, error) {
		in.Request.Model = "mock"
		return next(ctx, in)
	})
	run(t, a, "again")
	if lastEnd(t, a.Session()).Kind != session.EndCompleted {
		t.Fatal("request listener did not supply the model")
	}
}

// §16 A10: an adapter that fails before any chunk ends the turn with an
// error and the loop keeps working.
func TestAdapterThrows(t *testing.T) {
	hs := newHarness(t)
	a := hs.agent(agent.Options{})
	run(t, a, "x")
	r := lastEnd(t, a.Session())
	if r.Kind != session.EndError || !strings.Contains(r.Message, "script exhausted") {
		t.Fatalf("reason %+v", r)
	}
	hs.model.Push(scripted.Text("back"))
	run(t, a, "y")
	if lastEnd(t, a.Session()).Kind != session.EndCompleted {
		t.Fatal("loop did not recover")
	}
}

// §16 A11: an in-band finish error.
func TestInBandFinishError(t *testing.T) {
	hs := newHarness(t,
		scripted.Entry{Chunks: []llm.Chunk{llm.ErrorFinish("provider 401", "AUTH")}},
		scripted.Entry{Chunks: []llm.Chunk{llm.FinishChunk(llm.FinishAborted)}},
		scripted.Entry{Chunks: []llm.Chunk{llm.ErrorFinish("no code", "")}})
	a := hs.agent(agent.Options{})
	run(t, a, "x")
	eq(t, types(a.Session().Events()), []string{"turn/start", "user/message", "step/start", "chunk×1", "step/end", "turn/end"})
	if r := lastEnd(t, a.Session()); r.Kind != session.EndError || r.Message != "provider 401" || r.Code != "AUTH" {
		t.Fatalf("reason %+v", r)
	}
	run(t, a, "y")
	if r := lastEnd(t, a.Session()); r.Message != "model stream aborted" || r.Code != "ABORTED" {
		t.Fatalf("reason %+v", r)
	}
	run(t, a, "z")
	if r := lastEnd(t, a.Session()); r.Code != "" {
		t.Fatalf("reason %+v", r)
	}
}

// §16 A12: an empty stop stream records no assistant message; a step-result
// listener may fabricate one (then no provenance is recorded).
func TestEmptyStream(t *testing.T) {
	hs := newHarness(t, scripted.Entry{Chunks: []llm.Chunk{llm.FinishChunk(llm.FinishStop)}}, scripted.Entry{})
	a := hs.agent(agent.Options{})
	run(t, a, "go")
	if len(ofType(a.Session(), session.TypeAssistantMessage)) != 0 || lastEnd(t, a.Session()).Kind != session.EndCompleted {
		t.Fatal("empty stream must not record an assistant message")
	}
	hs.h.Agents.Hub.StepResult.Use(func(ctx context.Context, in agent.StepResult, next func(context.Context, agent.StepResult) (llm.Message, error)) (llm.Message, error) {
		return llm.Message{Role: llm.RoleAssistant, Content: text("injected")}, nil
	})
	run(t, a, "again")
	ams := ofType(a.Session(), session.TypeAssistantMessage)
	if len(ams) != 1 || ams[0].SourceEventSeqs != nil {
		t.Fatalf("fabricated message %+v", ams)
	}
}

// §16 A13: a step-result rewrite is what gets logged and executed.
func TestStepResultRewrite(t *testing.T) {
	hs := newHarness(t, scripted.Text("original"), scripted.Text("after"))
	var ran atomic.Bool
	register(t, hs, funcTool{info: tool.Info{Name: "injected-tool"}, fn: func(context.Context, tool.Call) (tool.Result, error) {
		ran.Store(true)
		return tool.TextResult("ok"), nil
	}})
	var once atomic.Bool
	hs.h.Agents.Hub.StepResult.Use(func(ctx context.Context, in agent.StepResult, next func(context.Context, agent.StepResult) (llm.Message, error)) (llm.Message, error) {
		if once.CompareAndSwap(false, true) {
			return llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("rewritten"), llm.ToolCall("c-injected", "injected-tool", "{}")}}, nil
		}
		return next(ctx, in)
	})
	a := hs.agent(agent.Options{})
	run(t, a, "go")
	am := mustDecode[session.AssistantMessage](t, ofType(a.Session(), session.TypeAssistantMessage)[0])
	if llm.TextOf(am.Content) != "rewritten" || !ran.Load() {
		t.Fatalf("logged %+v ran %v", am, ran.Load())
	}
	if tc := mustDecode[session.ToolCall](t, ofType(a.Session(), session.TypeToolCall)[0]); tc.CallID != "c-injected" {
		t.Fatalf("call %+v", tc)
	}
}

// §16 B14–B18: max-tokens handling.
func TestMaxTokens(t *testing.T) {
	t.Run("single", func(t *testing.T) {
		hs := newHarness(t, scripted.MaxTokens("truncat"))
		a := hs.agent(agent.Options{})
		run(t, a, "go")
		if lastEnd(t, a.Session()).Kind != session.EndMaxTokens || hs.model.Calls() != 1 {
			t.Fatal("want max-tokens after one call")
		}
	})
	t.Run("truncated tool call dropped", func(t *testing.T) {
		var ran atomic.Bool
		chunks := []llm.Chunk{llm.StartChunk(0, llm.BlockToolCall), llm.ToolDeltaChunk(0, "c1", "echo", `{"text":"x"}`),
			llm.EndChunk(0, llm.ToolCall("c1", "echo", `{"text":"x"}`)), llm.UsageChunk(llm.Usage{InputTokens: 10, OutputTokens: 5}), llm.FinishChunk(llm.FinishMaxTokens)}
		hs := newHarness(t, scripted.Entry{Chunks: chunks}, scripted.Entry{Chunks: append(append([]llm.Chunk(nil), chunks[:3]...), chunks[4])})
		register(t, hs, funcTool{info: tool.Info{Name: "echo"}, fn: func(context.Context, tool.Call) (tool.Result, error) { ran.Store(true); return tool.Result{}, nil }})
		a := hs.agent(agent.Options{})
		run(t, a, "go")
		if ran.Load() || len(ofType(a.Session(), session.TypeToolCall)) != 0 {
			t.Fatal("a truncated tool call must never run")
		}
		am := mustDecode[session.AssistantMessage](t, ofType(a.Session(), session.TypeAssistantMessage)[0])
		if len(am.Content) != 0 || am.Usage == nil {
			t.Fatalf("usage-only message expected: %+v", am)
		}
		msgs, _ := a.Session().Messages()
		if len(msgs) != 1 {
			t.Fatalf("derived %v", msgs)
		}
		run(t, a, "again") // no usage chunk: no assistant message at all
		if n := len(ofType(a.Session(), session.TypeAssistantMessage)); n != 1 {
			t.Fatalf("%d assistant messages", n)
		}
	})
	t.Run("sticky and not leaking", func(t *testing.T) {
		hs := newHarness(t, scripted.MaxTokens("first half"), scripted.Text("second half"), scripted.Text("clean"))
		var n atomic.Int32
		hs.h.Agents.Hub.Continuation.Use(func(ctx context.Context, in agent.ContinuationInput, next func(context.Context, agent.ContinuationInput) (agent.ContinuationDecision, error)) (agent.ContinuationDecision, error) {
			if n.Add(1) == 1 {
				return agent.ContinuationDecision{Continue: true}, nil
			}
			return next(ctx, in)
		})
		a := hs.agent(agent.Options{})
		run(t, a, "go")
		if lastEnd(t, a.Session()).Kind != session.EndMaxTokens {
			t.Fatal("max-tokens must be sticky within a turn")
		}
		if txt := requestText(hs.model.Requests()[1]); !strings.Contains(txt, "first half") {
			t.Fatalf("request 2: %s", txt)
		}
		run(t, a, "next")
		if lastEnd(t, a.Session()).Kind != session.EndCompleted {
			t.Fatal("max-tokens leaked into the next turn")
		}
	})
}

// §16 C20–C24: prompt-submit rewrite, context, block, mixed, throw.
func TestPromptSubmit(t *testing.T) {
	t.Run("rewrite and context", func(t *testing.T) {
		hs := newHarness(t, scripted.Text("ok"))
		hs.h.Agents.Hub.PromptSubmit.Use(func(ctx context.Context, in agent.PromptInput, next func(context.Context, agent.PromptInput) (agent.PromptDecision, error)) (agent.PromptDecision, error) {
			return agent.PromptDecision{Content: text("REWRITTEN"), Context: &tool.Context{Content: text("extra ctx"), Source: llm.PluginSource("test")}}, nil
		})
		a := hs.agent(agent.Options{})
		run(t, a, "original")
		eq(t, types(a.Session().Events())[:4], []string{"turn/start", "user/message", "context/message", "step/start"})
		txt := requestText(hs.model.Requests()[0])
		if strings.Contains(txt, "original") || !strings.Contains(txt, "REWRITTEN") || !strings.Contains(txt, `\u003ccontext source=\"plugin\"\u003e`) {
			t.Fatalf("request %s", txt)
		}
	})
	t.Run("blocked batch", func(t *testing.T) {
		hs := newHarness(t)
		hs.h.Agents.Hub.PromptSubmit.Use(func(ctx context.Context, in agent.PromptInput, next func(context.Context, agent.PromptInput) (agent.PromptDecision, error)) (agent.PromptDecision, error) {
			return agent.PromptDecision{Block: true, Reason: "blocked by policy"}, nil
		})
		a := hs.agent(agent.Options{})
		run(t, a, "do something")
		eq(t, types(a.Session().Events()), []string{"turn/start", "prompt/blocked", "turn/end"})
		if r := lastEnd(t, a.Session()); r.Kind != session.EndRejected || r.Reason != "blocked by policy" || hs.model.Calls() != 0 {
			t.Fatalf("reason %+v", r)
		}
	})
	t.Run("throwing", func(t *testing.T) {
		hs := newHarness(t, scripted.Text("ok"))
		var once atomic.Bool
		hs.h.Agents.Hub.PromptSubmit.Use(func(ctx context.Context, in agent.PromptInput, next func(context.Context, agent.PromptInput) (agent.PromptDecision, error)) (agent.PromptDecision, error) {
			if once.CompareAndSwap(false, true) {
				panic("prompt hook broke")
			}
			return next(ctx, in)
		})
		a := hs.agent(agent.Options{})
		run(t, a, "x")
		eq(t, types(a.Session().Events()), []string{"turn/start", "turn/end"})
		if r := lastEnd(t, a.Session()); r.Kind != session.EndError || r.Step != 0 || !strings.Contains(r.Message, "prompt hook broke") {
			t.Fatalf("reason %+v", r)
		}
		run(t, a, "y")
		if lastEnd(t, a.Session()).Kind != session.EndCompleted {
			t.Fatal("next prompt must work")
		}
	})
}

// §16 C25–C28: continuation.
func TestContinuation(t *testing.T) {
	t.Run("with reason", func(t *testing.T) {
		hs := newHarness(t, scripted.Text("step 1"), scripted.Text("step 2"))
		var n atomic.Int32
		hs.h.Agents.Hub.Continuation.Use(func(ctx context.Context, in agent.ContinuationInput, next func(context.Context, agent.ContinuationInput) (agent.ContinuationDecision, error)) (agent.ContinuationDecision, error) {
			if n.Add(1) == 1 {
				return agent.ContinuationDecision{Continue: true, Reason: &tool.Context{Content: text("keep going on the goal"), Source: llm.PluginSource("goal")}}, nil
			}
			return next(ctx, in)
		})
		a := hs.agent(agent.Options{})
		run(t, a, "go")
		eq(t, types(a.Session().Events()), []string{"turn/start", "user/message", "step/start", "chunk×10", "assistant/message", "step/end",
			"steering/message", "step/start", "chunk×10", "assistant/message", "step/end", "turn/end"})
		if txt := requestText(hs.model.Requests()[1]); !strings.Contains(txt, "keep going on the goal") || !strings.Contains(txt, `steering source=\"plugin\"`) {
			t.Fatalf("request 2 %s", txt)
		}
	})
	t.Run("veto still runs tools", func(t *testing.T) {
		hs := newHarness(t, scripted.Call("c1", "echo", map[string]string{"text": "x"}, ""))
		register(t, hs, echoTool())
		hs.h.Agents.Hub.Continuation.Use(func(context.Context, agent.ContinuationInput, func(context.Context, agent.ContinuationInput) (agent.ContinuationDecision, error)) (agent.ContinuationDecision, error) {
			return agent.ContinuationDecision{}, nil
		})
		a := hs.agent(agent.Options{})
		run(t, a, "go")
		if hs.model.Calls() != 1 || len(ofType(a.Session(), session.TypeToolResult)) != 1 {
			t.Fatal("veto: one call, tool ran")
		}
	})
	t.Run("throwing", func(t *testing.T) {
		hs := newHarness(t, scripted.Text("a"), scripted.Text("b"))
		var once atomic.Bool
		hs.h.Agents.Hub.Continuation.Use(func(ctx context.Context, in agent.ContinuationInput, next func(context.Context, agent.ContinuationInput) (agent.ContinuationDecision, error)) (agent.ContinuationDecision, error) {
			if once.CompareAndSwap(false, true) {
				return agent.ContinuationDecision{}, errors.New("broken continuation plugin")
			}
			return next(ctx, in)
		})
		a := hs.agent(agent.Options{})
		run(t, a, "x")
		if r := lastEnd(t, a.Session()); r.Kind != session.EndError || len(hs.errors()) != 1 {
			t.Fatalf("reason %+v", r)
		}
		run(t, a, "y")
		if lastEnd(t, a.Session()).Kind != session.EndCompleted || a.Status() != agent.Idle {
			t.Fatal("loop must survive")
		}
	})
}

// §16 A4: every chunk is recorded, so a session can be replayed.
func TestChunksRecorded(t *testing.T) {
	hs := newHarness(t, scripted.Text("abc"))
	a := hs.agent(agent.Options{})
	run(t, a, "x")
	var text string
	chunks := ofType(a.Session(), session.TypeAssistantChunk)
	for _, e := range chunks {
		c := mustDecode[session.AssistantChunk](t, e)
		if c.Chunk.Type == llm.ChunkTextDelta {
			text += c.Chunk.Text
		}
	}
	if len(chunks) != 7 || text != "abc" {
		t.Fatalf("%d chunks, text %q", len(chunks), text)
	}
}

// §16 A6: sequential sends make contiguous turns.
func TestSequentialTurns(t *testing.T) {
	hs := newHarness(t, scripted.Text("1"), scripted.Text("2"))
	a := hs.agent(agent.Options{})
	run(t, a, "a")
	run(t, a, "b")
	var turns []int
	for _, e := range ofType(a.Session(), session.TypeTurnStart) {
		turns = append(turns, mustDecode[session.TurnStart](t, e).Turn)
	}
	if len(turns) != 2 || turns[0] != 1 || turns[1] != 2 {
		t.Fatalf("turns %v", turns)
	}
}

// §16 A9: a request listener may switch the model.
func TestModelSwitch(t *testing.T) {
	hs := newHarness(t)
	other := scripted.New(scripted.Text("from other"))
	if _, err := hs.h.LLM.RegisterModels([]string{"other-model"}, other); err != nil {
		t.Fatal(err)
	}
	hs.h.Agents.Hub.Request.Use(func(ctx context.Context, in agent.RequestInput, next func(context.Context, agent.RequestInput) (*llm.Request, error)) (*llm.Request, error) {
		in.Request.Model = "other-model"
		return next(ctx, in)
	})
	a := hs.agent(agent.Options{})
	run(t, a, "x")
	if other.Calls() != 1 || hs.model.Calls() != 0 || other.Requests()[0].Model != "other-model" {
		t.Fatal("the request listener did not route to the other model")
	}
}

// §16 C30: pre-step fires per step with the prompt; context appended there
// lands before step/start and reaches that step's request.
func TestPreStep(t *testing.T) {
	hs := newHarness(t, scripted.Call("c1", "echo", map[string]string{"text": "x"}, ""), scripted.Text("ok"))
	register(t, hs, echoTool())
	var seen []string
	hs.h.Agents.Hub.PreStep.Use(func(ctx context.Context, ps agent.PreStep) error {
		seen = append(seen, fmt.Sprintf("%d/%d", ps.Turn, ps.Step))
		if ps.Step == 1 {
			return ps.Agent.Inject(ctx, text("pre-step note"), llm.PluginSource("t"))
		}
		return nil
	})
	a := hs.agent(agent.Options{})
	run(t, a, "go")
	if strings.Join(seen, ",") != "1/1,1/2" {
		t.Fatalf("pre-step calls %v", seen)
	}
	eq(t, types(a.Session().Events())[:4], []string{"turn/start", "user/message", "context/message", "step/start"})
	if !strings.Contains(requestText(hs.model.Requests()[0]), "pre-step note") {
		t.Fatal("context missing from step 1's request")
	}
}
