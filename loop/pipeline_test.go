package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

type chainNext[I, O any] = func(context.Context, I) (O, error)

func toolResults(t *testing.T, s *session.Session) []session.ToolResult {
	var out []session.ToolResult
	for _, e := range ofType(s, session.TypeToolResult) {
		out = append(out, mustDecode[session.ToolResult](t, e))
	}
	return out
}

// §16 E45: tool failures stay in-band; malformed arguments get a precise
// error and the loop goes on.
func TestToolFailuresInBand(t *testing.T) {
	hs := newHarness(t,
		scripted.Call("c1", "boom", map[string]any{}, ""),
		scripted.Call("c2", "echo", "not json", ""),
		scripted.Call("c3", "echo", map[string]any{"text": 5}, ""),
		scripted.Call("c4", "nope", map[string]any{}, ""),
		scripted.Call("c5", "panics", "", ""),
		scripted.Text("done"))
	register(t, hs, echoTool(),
		funcTool{info: tool.Info{Name: "boom"}, fn: func(context.Context, tool.Call) (tool.Result, error) {
			return tool.Result{}, &llm.Error{Name: "HarnessError", Code: "BOOM", Message: "exploded"}
		}},
		funcTool{info: tool.Info{Name: "panics"}, fn: func(_ context.Context, c tool.Call) (tool.Result, error) {
			if string(c.Args) != "{}" {
				t.Errorf("empty arguments should arrive as {}: %q", c.Args)
			}
			panic("kaboom")
		}})
	a := hs.agent(agent.Options{})
	run(t, a, "go")
	rs := toolResults(t, a.Session())
	if len(rs) != 5 {
		t.Fatalf("%d results", len(rs))
	}
	if r := rs[0]; !r.IsError || llm.TextOf(r.Content) != "Error: exploded" || r.Error == nil || r.Error.Code != "BOOM" {
		t.Fatalf("boom %+v", r)
	}
	if r := rs[1]; !r.IsError || !strings.Contains(llm.TextOf(r.Content), "not valid JSON") || r.Error.Code != "INVALID_ARGS" {
		t.Fatalf("bad json %+v", r)
	}
	tc := mustDecode[session.ToolCall](t, ofType(a.Session(), session.TypeToolCall)[1])
	if tc.Arguments != "not json" {
		t.Fatalf("tool/call must log the raw text: %q", tc.Arguments)
	}
	if r := rs[2]; !r.IsError || !strings.Contains(llm.TextOf(r.Content), `want "string"`) {
		t.Fatalf("schema %+v", r)
	}
	if r := rs[3]; !strings.Contains(llm.TextOf(r.Content), `unknown tool "nope"; available tools: boom, echo, panics`) || r.Error.Code != "UNKNOWN_TOOL" {
		t.Fatalf("unknown %+v", r)
	}
	if r := rs[4]; !r.IsError || !strings.Contains(llm.TextOf(r.Content), "kaboom") {
		t.Fatalf("panic %+v", r)
	}
	if lastEnd(t, a.Session()).Kind != session.EndCompleted {
		t.Fatal("turn must complete")
	}
}

// Duplicate and missing call ids from a model are made unique so every
// result pairs with one call.
func TestDuplicateCallIDs(t *testing.T) {
	hs := newHarness(t, scripted.Calls("", scripted.ToolCall{ID: "x", Name: "echo", Args: map[string]string{"text": "1"}},
		scripted.ToolCall{ID: "x", Name: "echo", Args: map[string]string{"text": "2"}}), scripted.Text("ok"))
	register(t, hs, echoTool())
	a := hs.agent(agent.Options{})
	run(t, a, "go")
	rs := toolResults(t, a.Session())
	if len(rs) != 2 || rs[0].CallID == rs[1].CallID {
		t.Fatalf("results %+v", rs)
	}
	msgs, _ := a.Session().Messages()
	if msgs[1].Content[1].ID != "x-2" {
		t.Fatalf("history ids %+v", msgs[1].Content)
	}
}

// A chunk after finish is a protocol error, not silently accepted.
func TestChunkAfterFinish(t *testing.T) {
	hs := newHarness(t, scripted.Entry{Chunks: []llm.Chunk{llm.FinishChunk(llm.FinishStop), llm.TextChunk(0, "late")}})
	a := hs.agent(agent.Options{})
	run(t, a, "go")
	if r := lastEnd(t, a.Session()); r.Kind != session.EndError || r.Code != llm.CodeProtocol {
		t.Fatalf("%+v", r)
	}
}

// §16 F46: pipeline outcomes through the registry directly.
func TestPipelineOutcomes(t *testing.T) {
	reg := tool.NewRegistry()
	if _, err := reg.Register(echoTool()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	call := tool.NewCall("c1", "echo", `{"text":"hi"}`, nil)
	var order []string
	reg.PreExecute.Use(func(ctx context.Context, c tool.Call, next chainNext[tool.Call, tool.Decision]) (tool.Decision, error) {
		order = append(order, "pre:before")
		d, err := next(ctx, c)
		order = append(order, "pre:after")
		return d, err
	})
	reg.PostExecute.Use(func(ctx context.Context, in tool.PostInput, next chainNext[tool.PostInput, tool.PostDecision]) (tool.PostDecision, error) {
		order = append(order, "post:before")
		in.Result.IsError = true // mutation has no effect
		in.Result.Content[0].Text = "tampered"
		d, err := next(ctx, in)
		order = append(order, "post:after")
		return d, err
	})
	out := reg.Execute(ctx, call, tool.ExecOptions{})
	if out.Result.IsError || llm.TextOf(out.Result.Content) != "echo: hi" || strings.Join(order, ",") != "pre:before,pre:after,post:before,post:after" {
		t.Fatalf("outcome %+v order %v", out, order)
	}
	// deny, ask without approver, post block, pre throw
	cases := []struct {
		name string
		pre  tool.Decision
		post *tool.PostDecision
		want string
	}{
		{"deny", tool.Decision{Kind: tool.Deny, Reason: "denied by policy"}, nil, "Error: denied by policy"},
		{"ask", tool.Decision{Kind: tool.Ask, Reason: "needs approval"}, nil, "Error: needs approval, but no approver is attached"},
		{"block", tool.Decision{Kind: tool.Allow}, &tool.PostDecision{Block: true, Content: text("blocked feedback")}, "blocked feedback"},
		{"accept-replace", tool.Decision{Kind: tool.Allow}, &tool.PostDecision{Content: text("rewritten")}, "rewritten"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := tool.NewRegistry()
			var ran atomic.Bool
			reg.Register(funcTool{info: tool.Info{Name: "echo"}, fn: func(context.Context, tool.Call) (tool.Result, error) {
				ran.Store(true)
				return tool.TextResult("ran"), nil
			}})
			reg.PreExecute.Use(func(context.Context, tool.Call, chainNext[tool.Call, tool.Decision]) (tool.Decision, error) {
				return c.pre, nil
			})
			if c.post != nil {
				reg.PostExecute.Use(func(context.Context, tool.PostInput, chainNext[tool.PostInput, tool.PostDecision]) (tool.PostDecision, error) {
					return *c.post, nil
				})
			}
			out := reg.Execute(ctx, call, tool.ExecOptions{})
			if !strings.HasPrefix(llm.TextOf(out.Result.Content), c.want) {
				t.Fatalf("got %q", llm.TextOf(out.Result.Content))
			}
			if c.pre.Kind != tool.Allow && ran.Load() {
				t.Fatal("a denied call must not run")
			}
			if c.name == "accept-replace" && out.Result.IsError {
				t.Fatal("accept keeps isError")
			}
		})
	}
	t.Run("pre throws", func(t *testing.T) {
		reg := tool.NewRegistry()
		reg.Register(echoTool())
		reg.PreExecute.Use(func(context.Context, tool.Call, chainNext[tool.Call, tool.Decision]) (tool.Decision, error) {
			return tool.Decision{}, errors.New("permission hook broke")
		})
		out := reg.Execute(ctx, call, tool.ExecOptions{})
		if llm.TextOf(out.Result.Content) != "Error: permission hook broke" || !out.Result.IsError {
			t.Fatalf("%+v", out.Result)
		}
	})
}

// Guard: a denial is final; no pre-execute listener or approver overturns it.
func TestGuardIsFinal(t *testing.T) {
	reg := tool.NewRegistry()
	var ran atomic.Bool
	reg.Register(funcTool{info: tool.Info{Name: "rm"}, fn: func(context.Context, tool.Call) (tool.Result, error) { ran.Store(true); return tool.Result{}, nil }})
	reg.GuardPoint.Use(func(_ context.Context, g *tool.Guard) error { return g.Deny("sandbox", "outside the sandbox") })
	reg.GuardPoint.Use(func(context.Context, *tool.Guard) error { t.Error("guards after a denial must not run"); return nil })
	reg.PreExecute.Use(func(context.Context, tool.Call, chainNext[tool.Call, tool.Decision]) (tool.Decision, error) {
		t.Error("pre-execute must not run after a guard denial")
		return tool.Decision{Kind: tool.Allow}, nil
	})
	approver := tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.Approval, error) {
		return tool.Approval{Allow: true}, nil
	})
	out := reg.Execute(context.Background(), tool.NewCall("c", "rm", "{}", nil), tool.ExecOptions{Approver: approver})
	if ran.Load() || llm.TextOf(out.Result.Content) != "Error: outside the sandbox" || out.Decision.By != "sandbox" {
		t.Fatalf("%+v", out)
	}
}

// Restrict hides tools from schemas and from execution; disposing restores.
func TestRestrict(t *testing.T) {
	hs := newHarness(t, scripted.Call("c1", "echo", map[string]string{"text": "x"}, ""), scripted.Text("ok"), scripted.Text("ok"))
	register(t, hs, echoTool(), funcTool{info: tool.Info{Name: "other"}, fn: func(context.Context, tool.Call) (tool.Result, error) { return tool.Result{}, nil }})
	undo := hs.h.Tools.Restrict(func(i tool.Info) bool { return i.Name != "echo" })
	a := hs.agent(agent.Options{})
	run(t, a, "go")
	r := hs.model.Requests()[0]
	if len(r.Tools) != 1 || r.Tools[0].Name != "other" {
		t.Fatalf("tools %v", r.Tools)
	}
	if res := toolResults(t, a.Session())[0]; res.Error == nil || res.Error.Code != "UNKNOWN_TOOL" {
		t.Fatalf("hidden tool must not run: %+v", res)
	}
	undo()
	run(t, a, "again")
	if n := len(hs.model.Requests()[2].Tools); n != 2 {
		t.Fatalf("restriction not lifted: %d tools", n)
	}
	// Per-agent visibility.
	b := hs.agentRaw("b", agent.Options{Model: "mock", Tools: func(i tool.Info) bool { return i.Name == "echo" }})
	hs.model.Push(scripted.Text("ok"))
	run(t, b, "x")
	if r := hs.model.Requests()[3]; len(r.Tools) != 1 || r.Tools[0].Name != "echo" {
		t.Fatalf("agent filter %v", r.Tools)
	}
}

// Approvals: ask goes to the agent's approver; the exchange is logged; a
// denial's reason reaches the model; no approver fails closed.
func TestApprovals(t *testing.T) {
	hs := newHarness(t,
		scripted.Call("c1", "echo", map[string]string{"text": "a"}, ""),
		scripted.Call("c2", "echo", map[string]string{"text": "b"}, ""),
		scripted.Text("done"))
	register(t, hs, echoTool())
	hs.h.Tools.PreExecute.Use(func(context.Context, tool.Call, chainNext[tool.Call, tool.Decision]) (tool.Decision, error) {
		return tool.Decision{Kind: tool.Ask, Reason: "echo needs approval"}, nil
	})
	var asked []string
	approver := tool.ApproverFunc(func(_ context.Context, r tool.ApprovalRequest) (tool.Approval, error) {
		asked = append(asked, string(r.Call.ID))
		if r.Call.ID == "c1" {
			return tool.Approval{Allow: true, By: "user"}, nil
		}
		return tool.Approval{Allow: false, Reason: "not now, use a different word", By: "user"}, nil
	})
	a := hs.agent(agent.Options{Approver: approver})
	run(t, a, "go")
	rs := toolResults(t, a.Session())
	if len(asked) != 2 || rs[0].IsError || !rs[1].IsError || llm.TextOf(rs[1].Content) != "The user denied this tool call: not now, use a different word" {
		t.Fatalf("asked %v results %+v", asked, rs)
	}
	req := ofType(a.Session(), session.TypeApprovalRequest)
	ans := ofType(a.Session(), session.TypeApprovalAnswer)
	if len(req) != 2 || len(ans) != 2 || !mustDecode[session.ApprovalAnswer](t, ans[0]).Allow || mustDecode[session.ApprovalAnswer](t, ans[1]).Allow {
		t.Fatal("approval exchange not recorded")
	}
	// No approver: fails closed with a clear reason, recorded too.
	hs.model.Push(scripted.Call("c3", "echo", map[string]string{"text": "c"}, ""), scripted.Text("ok"))
	b := hs.agentRaw("b", agent.Options{Model: "mock"})
	run(t, b, "go")
	r := toolResults(t, b.Session())[0]
	if !r.IsError || !strings.Contains(llm.TextOf(r.Content), "no approver is attached") {
		t.Fatalf("%+v", r)
	}
	if len(ofType(b.Session(), session.TypeApprovalAnswer)) != 1 {
		t.Fatal("fail-closed answer must be recorded")
	}
}

// Input rewrite: the audit record, the next request's history and the
// presentation all agree with the arguments that ran.
func TestRewriteConsistency(t *testing.T) {
	hs := newHarness(t, scripted.Call("c1", "echo", map[string]string{"text": "rm -rf /"}, ""), scripted.Text("ok"))
	var ranWith atomic.Value
	type args struct {
		Text string `json:"text"`
	}
	register(t, hs, tool.Func(tool.Info{Name: "echo"}, func(_ context.Context, c tool.Call, a args) (tool.Result, error) {
		ranWith.Store(a.Text)
		return tool.TextResult("echo: " + a.Text), nil
	}))
	hs.h.Tools.PreExecute.Use(func(ctx context.Context, c tool.Call, next chainNext[tool.Call, tool.Decision]) (tool.Decision, error) {
		c.Args = json.RawMessage(`{"text":"tampered"}`) // a copy: changes nothing
		return tool.Decision{Kind: tool.Allow, Args: json.RawMessage(`{"text":"safe"}`), By: "guardrail"}, nil
	})
	var observed tool.Outcome
	hs.h.Tools.Observed.Listen(func(_ context.Context, o tool.Outcome) error { observed = o; return nil })
	a := hs.agent(agent.Options{})
	run(t, a, "go")
	if ranWith.Load() != "safe" {
		t.Fatalf("ran with %v", ranWith.Load())
	}
	// 1. audit
	tc := mustDecode[session.ToolCall](t, ofType(a.Session(), session.TypeToolCall)[0])
	if tc.Arguments != `{"text":"safe"}` || tc.OriginalArguments == nil || *tc.OriginalArguments != `{"text":"rm -rf /"}` || tc.RewrittenBy != "guardrail" {
		t.Fatalf("audit %+v", tc)
	}
	// 2. the next request's history
	h := hs.model.Requests()[1].Messages[1].Content[0]
	if h.Arguments != `{"text":"safe"}` {
		t.Fatalf("history shows %q", h.Arguments)
	}
	// and the derived history of a reloaded copy agrees
	re, err := session.New("copy", session.Options{Seed: a.Session().Events()})
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := re.Messages()
	if msgs[1].Content[0].Arguments != `{"text":"safe"}` {
		t.Fatalf("re-derived history %q", msgs[1].Content[0].Arguments)
	}
	// 3. presentation reads the effective call
	if string(observed.Call.Args) != `{"text":"safe"}` || observed.Original != `{"text":"rm -rf /"}` {
		t.Fatalf("observed %+v", observed)
	}
}

// The execute wrapper may impose a deadline and retry; observers see the
// final outcome.
func TestExecuteWrapper(t *testing.T) {
	reg := tool.NewRegistry()
	var attempts atomic.Int32
	reg.Register(funcTool{info: tool.Info{Name: "flaky"}, fn: func(ctx context.Context, c tool.Call) (tool.Result, error) {
		if attempts.Add(1) == 1 {
			<-ctx.Done()
			return tool.Result{}, ctx.Err()
		}
		return tool.TextResult("ok"), nil
	}})
	reg.Wrap.Use(func(ctx context.Context, c tool.Call, next chainNext[tool.Call, tool.Result]) (tool.Result, error) {
		for i := 0; ; i++ {
			dctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			res, err := next(dctx, c)
			cancel()
			if err == nil || i == 2 {
				return res, err
			}
		}
	})
	var seen []tool.Outcome
	var mu sync.Mutex
	reg.Observed.Listen(func(_ context.Context, o tool.Outcome) error {
		mu.Lock()
		seen = append(seen, o)
		mu.Unlock()
		return errors.New("ignored")
	})
	out := reg.Execute(context.Background(), tool.NewCall("c", "flaky", "{}", nil), tool.ExecOptions{})
	if out.Result.IsError || attempts.Load() != 2 || len(seen) != 1 || llm.TextOf(seen[0].Result.Content) != "ok" {
		t.Fatalf("out %+v attempts %d seen %d", out, attempts.Load(), len(seen))
	}
}

// Concurrent tools run in parallel, results recorded in call order.
func TestParallelTools(t *testing.T) {
	hs := newHarness(t, scripted.Calls("", scripted.ToolCall{ID: "p1", Name: "par", Args: map[string]int{"n": 1}},
		scripted.ToolCall{ID: "p2", Name: "par", Args: map[string]int{"n": 2}},
		scripted.ToolCall{ID: "p3", Name: "par", Args: map[string]int{"n": 3}}), scripted.Text("ok"))
	var inflight, peak atomic.Int32
	barrier := make(chan struct{})
	var arrived atomic.Int32
	register(t, hs, funcTool{info: tool.Info{Name: "par", Concurrent: true, ReadOnly: true}, fn: func(ctx context.Context, c tool.Call) (tool.Result, error) {
		n := inflight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if arrived.Add(1) == 3 {
			close(barrier)
		}
		select {
		case <-barrier:
		case <-time.After(5 * time.Second):
		}
		inflight.Add(-1)
		return tool.TextResult(string(c.Args)), nil
	}})
	a := hs.agent(agent.Options{})
	run(t, a, "go")
	if peak.Load() != 3 {
		t.Fatalf("peak concurrency %d", peak.Load())
	}
	rs := toolResults(t, a.Session())
	if rs[0].CallID != "p1" || rs[1].CallID != "p2" || rs[2].CallID != "p3" {
		t.Fatalf("order %+v", rs)
	}
	eq(t, types(a.Session().Events())[5:11], []string{"tool/call", "tool/call", "tool/call", "tool/result", "tool/result", "tool/result"})
}

// §16 F49: post-execute context lands after all results of the step.
func TestPostExecuteContextAdjacency(t *testing.T) {
	hs := newHarness(t, scripted.Calls("", scripted.ToolCall{ID: "c1", Name: "echo", Args: map[string]string{"text": "1"}},
		scripted.ToolCall{ID: "c2", Name: "echo", Args: map[string]string{"text": "2"}}), scripted.Text("ok"))
	register(t, hs, echoTool())
	hs.h.Tools.PostExecute.Use(func(ctx context.Context, in tool.PostInput, next chainNext[tool.PostInput, tool.PostDecision]) (tool.PostDecision, error) {
		return tool.PostDecision{Context: &tool.Context{Content: text("ctx-" + string(in.Call.ID)), Source: llm.PluginSource("hooks")}}, nil
	})
	a := hs.agent(agent.Options{})
	run(t, a, "go")
	ty := types(a.Session().Events())
	eq(t, ty[5:12], []string{"tool/call", "tool/result", "tool/call", "tool/result", "context/message", "context/message", "step/end"})
}

// §16 E43/E44: containment of boundary listeners and flush failures.
func TestContainment(t *testing.T) {
	t.Run("turn/start listener", func(t *testing.T) {
		hs := newHarness(t, scripted.Text("ok"))
		a := hs.agent(agent.Options{})
		var once atomic.Bool
		hs.h.Sessions.Appended.Listen(func(_ context.Context, ap session.Appended) error {
			if ap.Event.Type == session.TypeTurnStart && once.CompareAndSwap(false, true) {
				panic("naked string error")
			}
			return nil
		})
		run(t, a, "x")
		eq(t, types(a.Session().Events()), []string{"turn/start", "turn/end"})
		if r := lastEnd(t, a.Session()); r.Kind != session.EndError || r.Message != "naked string error" || r.Code != "UNKNOWN" {
			t.Fatalf("%+v", r)
		}
		run(t, a, "y")
		if lastEnd(t, a.Session()).Kind != session.EndCompleted {
			t.Fatal("next turn must work")
		}
	})
	t.Run("step/start listener", func(t *testing.T) {
		hs := newHarness(t, scripted.Text("ok"))
		a := hs.agent(agent.Options{})
		var once atomic.Bool
		hs.h.Sessions.Appended.Listen(func(_ context.Context, ap session.Appended) error {
			if ap.Event.Type == session.TypeStepStart && once.CompareAndSwap(false, true) {
				return errors.New("step-start broke")
			}
			return nil
		})
		run(t, a, "x")
		eq(t, types(a.Session().Events()), []string{"turn/start", "user/message", "step/start", "step/end", "turn/end"})
	})
	t.Run("request listener with harness error", func(t *testing.T) {
		hs := newHarness(t, scripted.Text("ok"))
		hs.h.Agents.Hub.Request.Use(func(context.Context, agent.RequestInput, chainNext[agent.RequestInput, *llm.Request]) (*llm.Request, error) {
			return nil, llm.NewError(llm.CodeRateLimit, "server overloaded")
		})
		a := hs.agent(agent.Options{})
		run(t, a, "x")
		if r := lastEnd(t, a.Session()); r.Code != "RATE_LIMIT" || r.Step != 1 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("turn/end listener", func(t *testing.T) {
		hs := newHarness(t, scripted.Text("ok"), scripted.Text("ok"))
		a := hs.agent(agent.Options{})
		hs.h.Sessions.Appended.Listen(func(_ context.Context, ap session.Appended) error {
			if ap.Event.Type == session.TypeTurnEnd {
				return errors.New("bad observer")
			}
			return nil
		})
		run(t, a, "x")
		run(t, a, "y")
		if a.Session().LastTurn() != 2 || hs.model.Calls() != 2 {
			t.Fatal("a turn/end listener failure must be contained")
		}
	})
	t.Run("flush failure", func(t *testing.T) {
		hs := newHarness(t, scripted.Text("ok"), scripted.Text("ok"))
		var once atomic.Bool
		hs.h.Sessions.Flush.Use(func(context.Context, *session.Session) error {
			if once.CompareAndSwap(false, true) {
				return errors.New("disk full")
			}
			return nil
		})
		a := hs.agent(agent.Options{})
		run(t, a, "x")
		// The prompt could not be recorded: the turn stops before the
		// model is called, as one error naming the cause.
		errs := hs.errors()
		var ns *session.NotSavedError
		if len(errs) != 1 || !errors.As(errs[0].Err, &ns) || ns.Err.Error() != "disk full" {
			t.Fatalf("errors %v", errs)
		}
		if hs.model.Calls() != 0 {
			t.Fatalf("the model was called %d times with a prompt the log could not record", hs.model.Calls())
		}
		if r := lastEnd(t, a.Session()); r.Kind != session.EndError || r.Code != session.CodeNotSaved || !strings.Contains(r.Message, "disk full") {
			t.Fatalf("end reason %+v", r)
		}
		run(t, a, "y")
		if lastEnd(t, a.Session()).Kind != session.EndCompleted || hs.model.Calls() != 1 {
			t.Fatal("next turn must run")
		}
	})
	t.Run("flush failure after a step", func(t *testing.T) {
		hs := newHarness(t, scripted.Call("c1", "nosuchtool", map[string]any{}, ""), scripted.Text("never asked"))
		// Flushes: the prompt, before the first request, after step 1.
		var flushes atomic.Int32
		hs.h.Sessions.Flush.Use(func(context.Context, *session.Session) error {
			if flushes.Add(1) >= 3 {
				return errors.New("disk full")
			}
			return nil
		})
		a := hs.agent(agent.Options{})
		run(t, a, "x")
		if hs.model.Calls() != 1 {
			t.Fatalf("the model was called %d times after a step the log could not record", hs.model.Calls())
		}
		if r := lastEnd(t, a.Session()); r.Code != session.CodeNotSaved || r.Step != 1 {
			t.Fatalf("end reason %+v", r)
		}
	})
	t.Run("flush failure before the request", func(t *testing.T) {
		// The flush that fails is the one after pre-step listeners ran
		// (a compaction appends there): the model is not asked.
		hs := newHarness(t, scripted.Text("never asked"))
		var flushes atomic.Int32
		hs.h.Sessions.Flush.Use(func(context.Context, *session.Session) error {
			if flushes.Add(1) == 2 {
				return errors.New("disk full")
			}
			return nil
		})
		a := hs.agent(agent.Options{})
		run(t, a, "x")
		if hs.model.Calls() != 0 {
			t.Fatalf("the model was called %d times", hs.model.Calls())
		}
		if r := lastEnd(t, a.Session()); r.Code != session.CodeNotSaved || r.Step != 1 {
			t.Fatalf("end reason %+v", r)
		}
		eq(t, types(a.Session().Events()), []string{"turn/start", "user/message", "step/start", "step/end", "turn/end"})
	})
	t.Run("pre-step listener", func(t *testing.T) {
		hs := newHarness(t, scripted.Text("ok"))
		var once atomic.Bool
		hs.h.Agents.Hub.PreStep.Use(func(context.Context, agent.PreStep) error {
			if once.CompareAndSwap(false, true) {
				return errors.New("boom in pre-step")
			}
			return nil
		})
		a := hs.agent(agent.Options{})
		run(t, a, "x")
		eq(t, types(a.Session().Events()), []string{"turn/start", "user/message", "turn/end"})
		if r := lastEnd(t, a.Session()); r.Step != 1 || hs.model.Calls() != 0 {
			t.Fatalf("%+v", r)
		}
	})
}

// §16 C29: session-start fires once before any turn; an injection from it
// is turn 1 and reaches the first request.
func TestSessionStart(t *testing.T) {
	hs := newHarness(t, scripted.Text("ok"))
	var sources []agent.SessionStartSource
	hs.h.Agents.Hub.SessionStart.Listen(func(ctx context.Context, s agent.SessionStart) error {
		sources = append(sources, s.Source)
		if err := s.Agent.Inject(ctx, text("session preamble"), llm.PluginSource("test")); err != nil {
			return err
		}
		return errors.New("a failing listener does not stop creation")
	})
	a := hs.agent(agent.Options{})
	run(t, a, "go")
	if len(sources) != 1 || sources[0] != agent.StartStartup || a.Session().LastTurn() != 2 {
		t.Fatalf("sources %v turns %d", sources, a.Session().LastTurn())
	}
	if !strings.Contains(requestText(hs.model.Requests()[0]), "session preamble") {
		t.Fatal("preamble missing")
	}
}

// The step limit ends a turn with max-steps.
func TestMaxSteps(t *testing.T) {
	hs := newHarness(t, scripted.Call("c1", "echo", map[string]string{"text": "a"}, ""), scripted.Call("c2", "echo", map[string]string{"text": "b"}, ""))
	register(t, hs, echoTool())
	a := hs.agent(agent.Options{MaxSteps: 1})
	run(t, a, "go")
	if r := lastEnd(t, a.Session()); r.Kind != session.EndMaxSteps || hs.model.Calls() != 1 {
		t.Fatalf("%+v", r)
	}
}

// Arguments are sealed: a pre-execute listener that writes into the bytes it
// was given, or an execute wrapper that hands next a different call, does
// not change what runs or what the log records.
func TestArgumentsSealed(t *testing.T) {
	hs := newHarness(t, scripted.Call("c1", "echo", map[string]string{"text": "original"}, ""), scripted.Text("ok"))
	var ran atomic.Value
	type args struct {
		Text string `json:"text"`
	}
	register(t, hs, tool.Func(tool.Info{Name: "echo"}, func(_ context.Context, c tool.Call, a args) (tool.Result, error) {
		ran.Store(a.Text)
		return tool.TextResult(a.Text), nil
	}))
	hs.h.Tools.PreExecute.Use(func(ctx context.Context, c tool.Call, next chainNext[tool.Call, tool.Decision]) (tool.Decision, error) {
		copy(c.Args, []byte(`{"text":"HACKED!!"}`))
		return next(ctx, c)
	})
	hs.h.Tools.Wrap.Use(func(ctx context.Context, c tool.Call, next chainNext[tool.Call, tool.Result]) (tool.Result, error) {
		c.Args = json.RawMessage(`{"text":"swapped"}`)
		return next(ctx, c)
	})
	a := hs.agent(agent.Options{})
	run(t, a, "go")
	tc := mustDecode[session.ToolCall](t, ofType(a.Session(), session.TypeToolCall)[0])
	if ran.Load() != "original" || tc.Arguments != `{"text":"original"}` {
		t.Fatalf("ran %v, logged %s", ran.Load(), tc.Arguments)
	}
}
