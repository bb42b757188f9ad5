// Command frontend is a minimal dsh front-end. A front-end does three
// things and nothing else:
//
//   - it sends the user's input to an agent (Agent.Send);
//   - it renders what happens by listening to session events
//     (session.Live.Appended) and agent status (agent.Hub.Status): here,
//     streamed text deltas are written to stdout as they arrive;
//   - it answers approval requests, by giving the agent a tool.Approver:
//     here a tool.ApproverFunc that asks on stdout and reads y/N from stdin.
//
// A small policy plugin makes every delete-kind tool ask first, so the
// scripted model's call to delete_file needs the user's approval. Nothing
// is deleted for real.
//
//	go run ./examples/frontend            # answer the question yourself
//	echo y | go run ./examples/frontend
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

type deleteArgs struct {
	Path string `json:"path" jsonschema:"the file to delete"`
}

// deleteFile pretends to delete a file.
func deleteFile() tool.Tool {
	return tool.Func(tool.Info{Name: "delete_file", Description: "Delete a file.", Kind: tool.KindDelete},
		func(_ context.Context, _ tool.Call, a deleteArgs) (tool.Result, error) {
			return tool.TextResult("deleted " + a.Path), nil
		})
}

// askBeforeDeleting is a policy plugin: delete-kind tools need approval.
func askBeforeDeleting(_ context.Context, h *core.Host, scope *kernel.Scope) error {
	return scope.Add(h.Tools.PreExecute.Use(func(ctx context.Context, c tool.Call, next kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
		if t, ok := h.Tools.Get(c.Name); ok && t.Info().Kind == tool.KindDelete {
			return tool.Decision{Kind: tool.Ask, Reason: "deleting files needs your approval", By: "policy"}, nil
		}
		return next(ctx, c)
	}, kernel.Named("ask-before-deleting")))
}

// ui is the front-end's state. Listeners run on the agent's goroutine, one
// event at a time and in order, so rendering needs no locking of its own.
type ui struct {
	out      io.Writer
	in       *bufio.Reader
	midLine  bool          // streamed text left the cursor mid-line
	idle     chan struct{} // receives when the agent goes idle
	turnDone string
}

func (u *ui) newline() {
	if u.midLine {
		fmt.Fprintln(u.out)
		u.midLine = false
	}
}

// onEvent renders one session event.
func (u *ui) onEvent(_ context.Context, a session.Appended) error {
	e := a.Event
	switch e.Type {
	case session.TypeAssistantChunk:
		c, err := session.Decode[session.AssistantChunk](e)
		if err != nil {
			return err
		}
		if c.Chunk.Type == llm.ChunkTextDelta {
			fmt.Fprint(u.out, c.Chunk.Text)
			u.midLine = true
		}
	case session.TypeToolCall:
		c, _ := session.Decode[session.ToolCall](e)
		u.newline()
		fmt.Fprintf(u.out, "● %s %s\n", c.Name, c.Arguments)
	case session.TypeApprovalAnswer:
		ans, _ := session.Decode[session.ApprovalAnswer](e)
		verdict := "denied"
		if ans.Allow {
			verdict = "allowed"
		}
		fmt.Fprintf(u.out, "  approval: %s by %s\n", verdict, ans.By)
	case session.TypeToolResult:
		r, _ := session.Decode[session.ToolResult](e)
		fmt.Fprintf(u.out, "  └ %s\n", llm.TextOf(r.Content))
	case session.TypeTurnEnd:
		t, _ := session.Decode[session.TurnEnd](e)
		u.newline()
		u.turnDone = t.Reason.Kind
	}
	return nil
}

// onStatus renders status changes and tells main when the agent is idle.
func (u *ui) onStatus(_ context.Context, c agent.StatusChange) error {
	u.newline()
	fmt.Fprintf(u.out, "[%s]\n", c.Status)
	if c.Status == agent.Idle {
		select {
		case u.idle <- struct{}{}:
		default:
		}
	}
	return nil
}

// approve asks the user. Anything but "y" or "yes" (end of input included)
// is a denial: when in doubt, do not run the tool.
func (u *ui) approve(_ context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
	u.newline()
	fmt.Fprintf(u.out, "? %s — allow %s %s? [y/N] ", req.Reason, req.Call.Name, req.Call.Args)
	line, err := u.in.ReadString('\n')
	fmt.Fprintln(u.out)
	if err != nil && line == "" {
		return tool.Approval{Allow: false, By: "user", Reason: "no answer (end of input)"}, nil
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return tool.Approval{Allow: true, By: "user"}, nil
	}
	return tool.Approval{Allow: false, By: "user"}, nil
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "frontend:", err)
		os.Exit(1)
	}
}

func run(stdin io.Reader, stdout io.Writer) error {
	ctx := context.Background()
	h, err := core.New(core.Options{Invariants: true})
	if err != nil {
		return err
	}
	defer h.Close(ctx)

	model := scripted.New(
		scripted.Call("call-1", "delete_file", deleteArgs{Path: "draft.txt"}, "Let me clean that up."),
		scripted.Entry{Fn: func(req *llm.Request) []llm.Chunk {
			last := req.Messages[len(req.Messages)-1].Content[0]
			if last.IsError {
				return scripted.TextChunks("Understood, I left draft.txt alone.", llm.FinishStop)
			}
			return scripted.TextChunks("Done: draft.txt is gone.", llm.FinishStop)
		}},
	)
	if _, err := h.LLM.RegisterModels([]string{"scripted/demo"}, model); err != nil {
		return err
	}
	if err := h.Tools.RegisterAll(h.Scope, deleteFile()); err != nil {
		return err
	}
	if _, err := h.Use(ctx, "ask-before-deleting", askBeforeDeleting); err != nil {
		return err
	}

	u := &ui{out: stdout, in: bufio.NewReader(stdin), idle: make(chan struct{}, 1)}
	if err := h.Scope.Add(h.Sessions.Appended.Listen(u.onEvent)); err != nil {
		return err
	}
	if err := h.Scope.Add(h.Agents.Hub.Status.Listen(u.onStatus)); err != nil {
		return err
	}

	hd, err := h.Agents.Create(ctx, agent.CreateOptions{
		AgentID: "main", SessionID: "frontend-demo",
		Options: agent.Options{Model: "scripted/demo", Approver: tool.ApproverFunc(u.approve)},
	})
	if err != nil {
		return err
	}
	prompt := "Please delete draft.txt."
	fmt.Fprintf(stdout, "> %s\n", prompt)
	if err := hd.Agent.Send(ctx, []llm.Block{llm.Text(prompt)}, llm.UserSource); err != nil {
		return err
	}
	<-u.idle
	fmt.Fprintf(stdout, "turn ended: %s\n", u.turnDone)
	return hd.Dispose(ctx)
}
