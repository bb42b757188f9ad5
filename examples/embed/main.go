// Command embed runs a dsh agent inside a Go program: one custom tool, an
// approval function of its own, and the agent's answer streamed as the
// model writes it. The model is scripted, so it runs offline.
//
//	go run ./examples/embed
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/tool"
)

func main() {
	ctx := context.Background()
	h, err := core.New(core.Options{})
	check(err)
	defer h.Close(ctx)
	check(setup(ctx, h))
	hd, err := h.Agents.Create(ctx, agent.CreateOptions{AgentID: "main",
		Options: agent.Options{Model: "scripted/demo", Approver: tool.ApproverFunc(approve)}})
	check(err)
	for ev, err := range hd.Agent.Prompt(ctx, "How many words are in 'the quick brown fox'?") {
		check(err)
		if text, ok := ev.TextDelta(); ok {
			fmt.Print(text)
		}
		if call, ok := ev.ToolCall(); ok {
			fmt.Printf("\n● %s %s\n", call.Name, call.Arguments)
		}
		if ans, ok := ev.Approval(); ok {
			fmt.Printf("  approval: allow=%v by %s\n", ans.Allow, ans.By)
		}
		if res, ok := ev.ToolResult(); ok {
			fmt.Printf("  └ %s\n", llm.TextOf(res.Content))
		}
		if end, ok := ev.TurnEnd(); ok {
			fmt.Printf("\n[%s after %d steps, %d output tokens]\n", end.Reason.Kind, end.Steps, end.Usage.OutputTokens)
		}
	}
	check(hd.Dispose(ctx))
}

// approve is the program's own approval policy. dsh asks it about every
// call the permission layer would put to a user: word counts of short texts
// run, anything else is refused with a reason the model reads.
func approve(_ context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
	if req.Call.Name == "word_count" && len(req.Call.Args) < 200 {
		return tool.Approval{Allow: true, By: "embed"}, nil
	}
	return tool.Approval{Allow: false, By: "embed", Reason: "only short word counts are allowed"}, nil
}

type countArgs struct {
	Text string `json:"text" jsonschema:"the text whose words to count"`
}

// setup registers the tool, a scripted model that calls it, and dsh's
// permission layer in its default mode, where a tool that is not read-only
// asks before it runs.
func setup(ctx context.Context, h *core.Host) error {
	wordCount := tool.Func(tool.Info{Name: "word_count", Description: "Count the words of a text."},
		func(_ context.Context, _ tool.Call, a countArgs) (tool.Result, error) {
			return tool.TextResult(fmt.Sprintf("%d words", len(strings.Fields(a.Text)))), nil
		})
	model := scripted.New(
		scripted.Call("call-1", "word_count", countArgs{Text: "the quick brown fox"}, "Let me count them."),
		scripted.Entry{Fn: func(req *llm.Request) []llm.Chunk {
			result := req.Messages[len(req.Messages)-1].Content[0] // the tool-result block
			if result.IsError {
				return scripted.TextChunks("I was not allowed to count them.", llm.FinishStop)
			}
			return scripted.TextChunks("The sentence has "+llm.TextOf(result.Content)+".", llm.FinishStop)
		}})
	if _, err := h.LLM.RegisterModels([]string{"scripted/demo"}, model); err != nil {
		return err
	}
	if err := h.Tools.RegisterAll(h.Scope, wordCount); err != nil {
		return err
	}
	perm, err := permission.New(permission.Config{})
	if err != nil {
		return err
	}
	_, err = h.Use(ctx, "permission", perm.Plugin())
	return err
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}
