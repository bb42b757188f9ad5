package tool_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/tool"
)

// Post-execute listeners learn whether the tool itself ran: a denied call,
// an unknown tool and arguments that fail the schema never reached it; a
// tool that returned an error did.
func TestPostInputSaysWhetherTheToolRan(t *testing.T) {
	reg := tool.NewRegistry()
	type args struct {
		N int `json:"n"`
	}
	if _, err := reg.Register(tool.Func(tool.Info{Name: "probe"}, func(ctx context.Context, _ tool.Call, a args) (tool.Result, error) {
		if a.N < 0 {
			return tool.Result{}, errors.New("negative")
		}
		return tool.TextResult("ok"), nil
	})); err != nil {
		t.Fatal(err)
	}
	reg.PreExecute.Use(func(ctx context.Context, c tool.Call, next kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
		if c.Raw == `{"n":99}` {
			return tool.Decision{Kind: tool.Deny, Reason: "no"}, nil
		}
		return next(ctx, c)
	})
	var got tool.PostInput
	reg.PostExecute.Use(func(ctx context.Context, in tool.PostInput, next kernel.Next[tool.PostInput, tool.PostDecision]) (tool.PostDecision, error) {
		got = in
		return next(ctx, in)
	})
	for _, c := range []struct {
		name, raw string
		ran, err  bool
	}{
		{"probe", `{"n":1}`, true, false},
		{"probe", `{"n":-1}`, true, true},
		{"probe", `{"n":99}`, false, true},
		{"probe", `{"n":"x"}`, false, true},
		{"missing", `{}`, false, true},
	} {
		reg.Execute(context.Background(), tool.NewCall("c", c.name, c.raw, nil), tool.ExecOptions{})
		if got.Ran != c.ran || got.Result.IsError != c.err {
			t.Errorf("%s %s: ran=%v error=%v, want ran=%v error=%v", c.name, c.raw, got.Ran, got.Result.IsError, c.ran, c.err)
		}
		if !got.Ran && got.Duration != 0 {
			t.Errorf("%s %s: a call that did not run has duration %v", c.name, c.raw, got.Duration)
		}
	}
}
