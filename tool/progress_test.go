package tool_test

import (
	"context"
	"testing"

	"github.com/dshq/dsh/tool"
)

// Output a tool reports while it runs reaches the registry's Progress
// listeners with the call it belongs to, copied (the tool may reuse its
// buffer); without listeners reporting costs nothing and goes nowhere.
func TestReportOutputReachesProgress(t *testing.T) {
	reg := tool.NewRegistry()
	if _, err := reg.Register(tool.Func(tool.Info{Name: "noisy"}, func(ctx context.Context, _ tool.Call, _ struct{}) (tool.Result, error) {
		buf := []byte("line 1\n")
		tool.ReportOutput(ctx, buf)
		copy(buf, "XXXXXX\n")
		tool.ReportOutput(ctx, []byte("line 2\n"))
		tool.ReportOutput(ctx, nil)
		return tool.TextResult("ok"), nil
	})); err != nil {
		t.Fatal(err)
	}
	reg.Execute(context.Background(), tool.NewCall("c0", "noisy", `{}`, nil), tool.ExecOptions{}) // nobody listens
	var got []tool.Progress
	reg.Progress.Listen(func(_ context.Context, p tool.Progress) error {
		got = append(got, p)
		return nil
	})
	out := reg.Execute(context.Background(), tool.NewCall("c1", "noisy", `{}`, nil), tool.ExecOptions{})
	if out.Result.IsError {
		t.Fatalf("the call failed: %+v", out.Result)
	}
	if len(got) != 2 || got[0].Call.ID != "c1" || string(got[0].Output) != "line 1\n" || string(got[1].Output) != "line 2\n" {
		t.Fatalf("progress %+v", got)
	}
	tool.ReportOutput(context.Background(), []byte("outside a call")) // no panic, nothing sent
	if len(got) != 2 {
		t.Fatalf("output outside a call was reported: %+v", got)
	}
}
