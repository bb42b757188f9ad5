package tool_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/tool"
)

// checked is a tool whose precheck refuses some calls.
type checked struct {
	tool.Tool
	refuse bool
}

func (c checked) Precheck(context.Context, tool.Call) error {
	if c.refuse {
		return errors.New("you have not read it; read it first")
	}
	return nil
}

// A call that would ask, but whose tool says it cannot succeed, is not put
// to the approver: the model reads the tool's reason, and nothing runs.
// A call that passes the precheck is asked about as before.
func TestPrecheckBeforeAsking(t *testing.T) {
	for _, refuse := range []bool{true, false} {
		reg := tool.NewRegistry()
		ran := 0
		inner := tool.Func(tool.Info{Name: "edit"}, func(context.Context, tool.Call, struct{}) (tool.Result, error) {
			ran++
			return tool.TextResult("edited"), nil
		})
		if _, err := reg.Register(checked{Tool: inner, refuse: refuse}); err != nil {
			t.Fatal(err)
		}
		reg.PreExecute.Use(func(ctx context.Context, c tool.Call, next kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
			return tool.Decision{Kind: tool.Ask, Reason: "edits need approval"}, nil
		})
		asked := 0
		ap := tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.Approval, error) {
			asked++
			return tool.Approval{Allow: true, By: "user"}, nil
		})
		out := reg.Execute(context.Background(), tool.NewCall("c1", "edit", "{}", nil), tool.ExecOptions{Approver: ap})
		text := out.Result.Content[0].Text
		switch {
		case refuse && (asked != 0 || ran != 0 || !out.Result.IsError || !strings.Contains(text, "read it first") || out.Approval != nil):
			t.Errorf("refused precheck: asked %d, ran %d, result %q, approval %+v", asked, ran, text, out.Approval)
		case !refuse && (asked != 1 || ran != 1 || out.Result.IsError):
			t.Errorf("passing precheck: asked %d, ran %d, result %q", asked, ran, text)
		}
	}
}
