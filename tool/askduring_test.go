package tool_test

import (
	"context"
	"testing"

	"github.com/dshq/dsh/tool"
)

// A running tool asks its agent's approver through AskDuring: the question
// carries the tool's reason and suggestions, the exchange is recorded
// through OnAsk and OnAnswer like the decision's own, and without an
// approver the answer is a refusal that says why.
func TestAskDuringARun(t *testing.T) {
	reg := tool.NewRegistry()
	var answers []tool.Approval
	if _, err := reg.Register(tool.Func(tool.Info{Name: "net"}, func(ctx context.Context, _ tool.Call, _ struct{}) (tool.Result, error) {
		a, ok := tool.AskDuring(ctx, "reach example.org", []string{"WebFetch(domain:example.org)"})
		if !ok {
			return tool.TextResult("no asker"), nil
		}
		answers = append(answers, a)
		return tool.TextResult("asked"), nil
	})); err != nil {
		t.Fatal(err)
	}
	var asked []string
	var got []tool.ApprovalRequest
	opts := tool.ExecOptions{
		Approver: tool.ApproverFunc(func(_ context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
			got = append(got, req)
			return tool.Approval{Allow: true, Rules: req.Suggestions, By: "user"}, nil
		}),
		OnAsk:    func(_ context.Context, p *tool.Pending) { asked = append(asked, p.Decision.Reason) },
		OnAnswer: func(_ context.Context, p *tool.Pending, a tool.Approval) { asked = append(asked, a.By) },
	}
	out := reg.Execute(context.Background(), tool.NewCall("c1", "net", `{}`, nil), opts)
	if out.Result.IsError || len(got) != 1 || got[0].Call.ID != "c1" || got[0].Reason != "reach example.org" ||
		len(got[0].Suggestions) != 1 || !answers[0].Allow || len(answers[0].Rules) != 1 {
		t.Fatalf("result %+v, requests %+v, answers %+v", out.Result, got, answers)
	}
	if len(asked) != 2 || asked[0] != "reach example.org" || asked[1] != "user" {
		t.Fatalf("recorded %v", asked)
	}
	if out.Approval != nil {
		t.Fatalf("a question during the run is not the call's approval: %+v", out.Approval)
	}

	answers = nil
	reg.Execute(context.Background(), tool.NewCall("c2", "net", `{}`, nil), tool.ExecOptions{})
	if len(answers) != 1 || answers[0].Allow || answers[0].By != "none" {
		t.Fatalf("headless answers %+v", answers)
	}
	if _, ok := tool.AskDuring(context.Background(), "x", nil); ok {
		t.Fatal("AskDuring outside a call found an approver")
	}
}
