package tool_test

import (
	"context"
	"testing"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/tool"
)

// The caller's Visible filter reaches pre-execute listeners and the tool's
// Run through the context, so a dispatcher tool can hold the tools it runs
// by name to what its caller may see; a nested call's own options replace
// an enclosing call's filter.
func TestVisibleFromReachesListenersAndRun(t *testing.T) {
	reg := tool.NewRegistry()
	var got struct{ pre, run func(tool.Info) bool }
	var nested func(tool.Info) bool
	if _, err := reg.Register(tool.Func(tool.Info{Name: "probe"}, func(ctx context.Context, _ tool.Call, _ struct{}) (tool.Result, error) {
		got.run = tool.VisibleFrom(ctx)
		return tool.TextResult("ok"), nil
	})); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(tool.Func(tool.Info{Name: "outer"}, func(ctx context.Context, c tool.Call, _ struct{}) (tool.Result, error) {
		// A nested call without a filter must not inherit the outer one.
		reg.Execute(ctx, tool.NewCall("n1", "inner", "{}", nil), tool.ExecOptions{})
		return tool.TextResult("ok"), nil
	})); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(tool.Func(tool.Info{Name: "inner"}, func(ctx context.Context, _ tool.Call, _ struct{}) (tool.Result, error) {
		nested = tool.VisibleFrom(ctx)
		return tool.TextResult("ok"), nil
	})); err != nil {
		t.Fatal(err)
	}
	reg.PreExecute.Use(func(ctx context.Context, c tool.Call, next kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
		if c.Name == "probe" {
			got.pre = tool.VisibleFrom(ctx)
		}
		return next(ctx, c)
	})
	if tool.VisibleFrom(context.Background()) != nil {
		t.Fatal("a bare context has a filter")
	}
	filter := func(i tool.Info) bool { return i.Name != "secret" }
	out := reg.Execute(context.Background(), tool.NewCall("c1", "probe", "{}", nil), tool.ExecOptions{Visible: filter})
	if out.Result.IsError {
		t.Fatalf("probe failed: %+v", out.Result)
	}
	for what, f := range map[string]func(tool.Info) bool{"pre-execute": got.pre, "run": got.run} {
		if f == nil || f(tool.Info{Name: "secret"}) || !f(tool.Info{Name: "read"}) {
			t.Errorf("%s did not see the caller's filter", what)
		}
	}
	out = reg.Execute(context.Background(), tool.NewCall("c2", "outer", "{}", nil), tool.ExecOptions{Visible: func(i tool.Info) bool { return true }})
	if out.Result.IsError {
		t.Fatalf("outer failed: %+v", out.Result)
	}
	if nested != nil {
		t.Error("a nested call without a filter inherited the enclosing call's filter")
	}
}
