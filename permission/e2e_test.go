package permission_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// loopHost is a spine with the invariants checker, a scripted model
// ("mock"), a bash tool counting its runs, and a permission checker
// installed; it returns the host, the checker and the project root.
func loopHost(t *testing.T, runs *int, replies ...scripted.Entry) (*core.Host, *permission.Checker, string) {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	h, err := core.New(core.Options{Invariants: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	if _, err := h.LLM.RegisterModels([]string{"mock"}, scripted.New(replies...)); err != nil {
		t.Fatal(err)
	}
	bash := tool.Func(tool.Info{Name: "bash", Kind: tool.KindExecute}, func(context.Context, tool.Call, map[string]any) (tool.Result, error) {
		if runs != nil {
			*runs++
		}
		return tool.TextResult("ok"), nil
	})
	if err := h.Tools.RegisterAll(h.Scope, bash); err != nil {
		t.Fatal(err)
	}
	c, err := permission.New(permission.Config{Cwd: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Use(ctx, "permission", c.Plugin()); err != nil {
		t.Fatal(err)
	}
	return h, c, root
}

// TestAgentLoop runs the permission layer inside the real spine (loop,
// sessions, invariants checker): the decision is recorded just before
// tool/call, a remembered answer becomes a permission/rule event, and a
// session seeded from that log (resume, fork) starts with the rule.
func TestAgentLoop(t *testing.T) {
	ctx := context.Background()
	args := map[string]string{"command": "make test", "description": "run the tests"}
	runs := 0
	h, c, root := loopHost(t, &runs,
		scripted.Call("t1", "bash", args, ""), scripted.Text("done"),
		scripted.Call("t2", "bash", args, ""), scripted.Text("done again"))
	asked := 0
	ap := tool.ApproverFunc(func(_ context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
		asked++
		return tool.Approval{Allow: true, Rules: req.Suggestions, By: "user"}, nil
	})
	hd, err := h.Agents.Create(ctx, agent.CreateOptions{AgentID: "a1", SessionID: "s1", Header: session.Header{Cwd: root},
		Options: agent.Options{Model: "mock", Approver: ap}})
	if err != nil {
		t.Fatal(err)
	}
	a := hd.Agent
	run := func(text string) {
		t.Helper()
		if err := a.Send(ctx, []llm.Block{llm.Text(text)}, llm.Source{}); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := a.WhenIdle(wctx); err != nil {
			t.Fatal(err)
		}
	}
	run("test it")
	run("again")
	if asked != 1 || runs != 2 {
		t.Fatalf("asked %d times, ran %d times; want 1 and 2", asked, runs)
	}
	events := a.Session().Events()
	var decisions, rules int
	for i, e := range events {
		switch e.Type {
		case permission.EventDecision:
			decisions++
			if i+1 >= len(events) || events[i+1].Type != session.TypeToolCall {
				t.Errorf("permission/decision at %d is not followed by tool/call", i)
			}
			var d permission.DecisionEvent
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			want := permission.Ask
			if decisions == 2 {
				want = permission.Allow
			}
			if d.Behavior != want || d.Tool != "bash" {
				t.Errorf("decision %d: %+v", decisions, d)
			}
		case permission.EventRule:
			rules++
		}
	}
	if decisions != 2 || rules != 1 {
		t.Errorf("%d decisions, %d rules recorded", decisions, rules)
	}
	if got := permission.SessionRules(events); len(got) != 1 || got[0].Text != "Bash(make test)" {
		t.Errorf("SessionRules = %v", got)
	}

	// A session started from this log keeps the rule.
	hd2, err := h.Agents.Create(ctx, agent.CreateOptions{AgentID: "a2", SessionID: "s2", Header: session.Header{Cwd: root}, Seed: session.CompletedPrefix(events),
		Options: agent.Options{Model: "mock"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Rules("s2"); len(got) != 1 || got[0] != (permission.Rule{Text: "Bash(make test)", Behavior: permission.Allow, Source: permission.SourceSession}) {
		t.Errorf("Rules(s2) = %v", got)
	}
	if err := hd2.Dispose(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.Rules("s2"); len(got) != 0 {
		t.Errorf("rules of a disposed agent's session kept: %v", got)
	}
	if err := hd.Dispose(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSessionModesAreIndependent runs two agents on one checker, as the ACP
// server does for two sessions of one workspace: plan mode set on one
// session reaches that session's prompt and calls only, a subagent's
// session follows its parent's mode, and approving the plan ends plan mode
// for that session alone.
func TestSessionModesAreIndependent(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	h, err := core.New(core.Options{Invariants: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	write := map[string]string{"path": "a.txt"}
	plan := map[string]string{"plan": "1. write a.txt"}
	models := map[string]*scripted.Adapter{
		"plain":   scripted.New(scripted.Call("w1", "write", write, ""), scripted.Text("wrote")),
		"planner": scripted.New(scripted.Call("w2", "write", write, ""), scripted.Call("p1", permission.ExitPlanTool, plan, ""), scripted.Text("planned")),
	}
	for name, m := range models {
		if _, err := h.LLM.RegisterModels([]string{name}, m); err != nil {
			t.Fatal(err)
		}
	}
	writes := 0
	wr := tool.Func(tool.Info{Name: "write", Kind: tool.KindEdit}, func(context.Context, tool.Call, map[string]any) (tool.Result, error) {
		writes++
		return tool.TextResult("ok"), nil
	})
	if err := h.Tools.RegisterAll(h.Scope, wr); err != nil {
		t.Fatal(err)
	}
	c, err := permission.New(permission.Config{Cwd: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Use(ctx, "permission", c.Plugin()); err != nil {
		t.Fatal(err)
	}
	var changes []permission.ModeChange
	c.ModeChanged.Listen(func(_ context.Context, ch permission.ModeChange) error { changes = append(changes, ch); return nil })
	var asked []string
	ap := tool.ApproverFunc(func(_ context.Context, r tool.ApprovalRequest) (tool.Approval, error) {
		asked = append(asked, r.Call.Name)
		return tool.Approval{Allow: true, By: "user"}, nil
	})
	start := func(id, model string, parent session.ID) agent.Agent {
		t.Helper()
		hd, err := h.Agents.Create(ctx, agent.CreateOptions{AgentID: agent.ID(id), SessionID: session.ID(id),
			Header: session.Header{Cwd: root, ParentSession: parent}, Options: agent.Options{Model: model, Approver: ap}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = hd.Dispose(ctx) })
		return hd.Agent
	}
	run := func(a agent.Agent) {
		t.Helper()
		if err := a.Send(ctx, []llm.Block{llm.Text("go")}, llm.Source{}); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := a.WhenIdle(wctx); err != nil {
			t.Fatal(err)
		}
	}
	plain, planner := start("plain", "plain", ""), start("planner", "planner", "")
	child := start("child", "plain", "planner")
	if err := c.SetSessionMode("planner", permission.ModePlan); err != nil {
		t.Fatal(err)
	}
	if got := []permission.Mode{c.Mode(), c.SessionMode("plain"), c.SessionMode("planner"), c.SessionMode("child")}; !slices.Equal(got,
		[]permission.Mode{permission.ModeDefault, permission.ModeDefault, permission.ModePlan, permission.ModePlan}) {
		t.Fatalf("checker, plain, planner, child modes = %v", got)
	}
	host, ok := child.(tool.Host)
	if !ok {
		t.Fatalf("%T is not a tool host", child)
	}
	writeCall := tool.Call{ID: "x", Name: "write", Args: json.RawMessage(`{"path":"a.txt"}`), Host: host}
	if d := c.Decide(ctx, writeCall, ""); d.Behavior != permission.Deny || d.Mode != permission.ModePlan {
		t.Fatalf("a write in the planning session's subagent: %+v, want denied by plan mode", d)
	}

	run(plain) // default mode: the write asks, and runs once allowed
	if !slices.Equal(asked, []string{"write"}) || writes != 1 {
		t.Fatalf("plain session: asked %v, %d writes", asked, writes)
	}
	if sys := models["plain"].Requests()[0].System; strings.Contains(sys, "Plan mode is active") {
		t.Errorf("the plan-mode prompt reached a session in default mode")
	}
	asked = nil
	run(planner) // plan mode: the write is refused without asking; the plan is asked about
	if !slices.Equal(asked, []string{permission.ExitPlanTool}) || writes != 1 {
		t.Fatalf("planning session: asked %v, %d writes", asked, writes)
	}
	if sys := models["planner"].Requests()[0].System; !strings.Contains(sys, "Plan mode is active") {
		t.Errorf("the planning session's prompt lacks the plan-mode section")
	}
	if got := []permission.Mode{c.SessionMode("plain"), c.SessionMode("planner"), c.SessionMode("child")}; !slices.Equal(got,
		[]permission.Mode{permission.ModeDefault, permission.ModeDefault, permission.ModeDefault}) {
		t.Fatalf("after the plan: plain, planner, child modes = %v", got)
	}
	want := []permission.ModeChange{
		{Session: "planner", From: permission.ModeDefault, To: permission.ModePlan, By: "user"},
		{Session: "planner", From: permission.ModePlan, To: permission.ModeDefault, By: permission.ExitPlanTool},
	}
	if !slices.Equal(changes, want) {
		t.Errorf("mode changes %+v, want %+v", changes, want)
	}
	if d := c.Decide(ctx, writeCall, ""); d.Behavior != permission.Ask {
		t.Fatalf("a write in the subagent after the plan: %+v, want ask", d)
	}
}

// A subagent's question answered "for this session" holds for the session
// the user works in: the rule is recorded in the root session's log and
// covers the root and every subagent of it.
func TestSubagentAnswerHoldsForTheRoot(t *testing.T) {
	ctx := context.Background()
	args := map[string]string{"command": "make test", "description": "run the tests"}
	h, c, root := loopHost(t, nil, scripted.Call("t1", "bash", args, ""), scripted.Text("child done"), scripted.Text("parent done"))
	ap := tool.ApproverFunc(func(_ context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
		return tool.Approval{Allow: true, Rules: req.Suggestions, By: "user"}, nil
	})
	create := func(id string, parent session.ID) agent.Agent {
		hd, err := h.Agents.Create(ctx, agent.CreateOptions{AgentID: agent.ID("a-" + id), SessionID: session.ID(id),
			Header: session.Header{Cwd: root, ParentSession: parent}, Options: agent.Options{Model: "mock", Approver: ap}})
		if err != nil {
			t.Fatal(err)
		}
		return hd.Agent
	}
	run := func(a agent.Agent, text string) {
		t.Helper()
		if err := a.Send(ctx, []llm.Block{llm.Text(text)}, llm.Source{}); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := a.WhenIdle(wctx); err != nil {
			t.Fatal(err)
		}
	}
	parent := create("p", "")
	child := create("c", "p")
	run(child, "test it")
	want := permission.Rule{Text: "Bash(make test)", Behavior: permission.Allow, Source: permission.SourceSession}
	if got := c.Rules("p"); !slices.Contains(got, want) {
		t.Fatalf("the root's rules %v, want %v", got, want)
	}
	sibling := create("c2", "p")
	call := tool.NewCall("t9", "bash", `{"command":"make test","description":"again"}`, sibling.(tool.Host))
	if d := c.Decide(ctx, call, root); d.Behavior != permission.Allow {
		t.Errorf("another subagent of the root: %+v", d)
	}
	// The root was idle: its log records the rule at its next step.
	run(parent, "carry on")
	if got := permission.SessionRules(parent.Session().Events()); !slices.Contains(got, want) {
		t.Errorf("the root's log has no rule: %v", got)
	}
	if got := permission.SessionRules(child.Session().Events()); len(got) != 0 {
		t.Errorf("the rule went to the subagent's log: %v", got)
	}
}
