package permission_test

import (
	"context"
	"encoding/json"
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

// TestAgentLoop runs the permission layer inside the real spine (loop,
// sessions, invariants checker): the decision is recorded just before
// tool/call, a remembered answer becomes a permission/rule event, and a
// session seeded from that log (resume, fork) starts with the rule.
func TestAgentLoop(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	h, err := core.New(core.Options{Invariants: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	args := map[string]string{"command": "make test", "description": "run the tests"}
	model := scripted.New(
		scripted.Call("t1", "bash", args, ""), scripted.Text("done"),
		scripted.Call("t2", "bash", args, ""), scripted.Text("done again"),
	)
	if _, err := h.LLM.RegisterModels([]string{"mock"}, model); err != nil {
		t.Fatal(err)
	}
	runs := 0
	bash := tool.Func(tool.Info{Name: "bash", Kind: tool.KindExecute}, func(context.Context, tool.Call, map[string]any) (tool.Result, error) {
		runs++
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
	asked := 0
	ap := tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.Approval, error) {
		asked++
		return tool.Approval{Allow: true, Remember: true, By: "user"}, nil
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
