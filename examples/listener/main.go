// Command listener shows how a plugin gates what an agent does, using two
// interception points:
//
//   - agent/prompt-submit (agent.Hub.PromptSubmit) blocks a prompt that
//     contains a password before it is recorded or sent to the model;
//   - tools/pre-execute (tool.Registry.PreExecute) denies a destructive
//     command and rewrites a risky one (git push --force becomes
//     --force-with-lease).
//
// A rewrite is a decision, not a mutation: the tool runs the rewritten
// arguments, the tool/call audit event records them together with the
// model's original and the name of the plugin that changed them, and the
// next model request shows the call that actually ran.
//
// The model is scripted and the "shell" tool only reports what it would
// run, so the example is offline and harmless.
//
//	go run ./examples/listener
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

const pluginName = "listener"

type shellArgs struct {
	Command string `json:"command" jsonschema:"the command line to run"`
}

// shell stands in for a real shell tool: it reports what it would run.
func shell() tool.Tool {
	return tool.Func(tool.Info{Name: "shell", Description: "Run a shell command.", Kind: tool.KindExecute},
		func(_ context.Context, _ tool.Call, a shellArgs) (tool.Result, error) {
			return tool.TextResult("would run: " + a.Command), nil
		})
}

// guard is the listener plugin.
func guard(_ context.Context, h *core.Host, scope *kernel.Scope) error {
	// Block prompts that carry credentials. A blocked prompt is recorded as
	// prompt/blocked and never reaches the model.
	blockSecrets := func(ctx context.Context, in agent.PromptInput, next kernel.Next[agent.PromptInput, agent.PromptDecision]) (agent.PromptDecision, error) {
		if strings.Contains(strings.ToLower(llm.TextOf(in.Content)), "password") {
			return agent.PromptDecision{Block: true, Reason: "prompts must not contain passwords"}, nil
		}
		return next(ctx, in)
	}
	if err := scope.Add(h.Agents.Hub.PromptSubmit.Use(blockSecrets, kernel.Named(pluginName))); err != nil {
		return err
	}

	// Deny or rewrite shell commands. The listener lets later listeners
	// decide first, then adds its rewrite to their verdict unless they
	// denied the call.
	gateShell := func(ctx context.Context, call tool.Call, next kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
		if call.Name != "shell" {
			return next(ctx, call)
		}
		a, err := tool.DecodeArgs[shellArgs](call)
		if err != nil {
			return next(ctx, call) // the registry reports bad arguments itself
		}
		if strings.Contains(a.Command, "rm -rf /") {
			return tool.Decision{Kind: tool.Deny, Reason: "refusing to delete the filesystem root", By: pluginName}, nil
		}
		d, err := next(ctx, call)
		if err != nil || d.Kind == tool.Deny {
			return d, err
		}
		if fixed := safePush(a.Command); fixed != a.Command {
			d.Args, _ = json.Marshal(shellArgs{Command: fixed})
			d.By = pluginName
		}
		return d, nil
	}
	return scope.Add(h.Tools.PreExecute.Use(gateShell, kernel.Named(pluginName)))
}

// safePush turns a force push into a force-with-lease push.
func safePush(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) < 2 || f[0] != "git" || f[1] != "push" {
		return cmd
	}
	for i, w := range f {
		if w == "--force" || w == "-f" {
			f[i] = "--force-with-lease"
		}
	}
	return strings.Join(f, " ")
}

// reply answers with a short text that quotes the last tool result.
func reply(prefix string) scripted.Entry {
	return scripted.Entry{Fn: func(req *llm.Request) []llm.Chunk {
		last := req.Messages[len(req.Messages)-1]
		return scripted.TextChunks(prefix+llm.TextOf(last.Content[0].Content), llm.FinishStop)
	}}
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "listener:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	h, err := core.New(core.Options{Invariants: true})
	if err != nil {
		return err
	}
	defer h.Close(ctx)

	model := scripted.New(
		scripted.Call("call-push", "shell", shellArgs{Command: "git push --force origin main"}, ""),
		reply("Done. The tool said: "),
		scripted.Call("call-rm", "shell", shellArgs{Command: "rm -rf / --no-preserve-root"}, ""),
		reply("I could not do that: "),
	)
	if _, err := h.LLM.RegisterModels([]string{"scripted/demo"}, model); err != nil {
		return err
	}
	if err := h.Tools.RegisterAll(h.Scope, shell()); err != nil {
		return err
	}
	if _, err := h.Use(ctx, pluginName, guard); err != nil {
		return err
	}
	// Print the events that show the plugin at work.
	if err := h.Scope.Add(h.Sessions.Appended.Listen(printEvent)); err != nil {
		return err
	}

	hd, err := h.Agents.Create(ctx, agent.CreateOptions{
		AgentID: "main", SessionID: "listener-demo",
		Options: agent.Options{Model: "scripted/demo"},
	})
	if err != nil {
		return err
	}
	a := hd.Agent
	for _, prompt := range []string{
		"Push my branch, force it if you must.",
		"Now wipe the disk.",
		"My password is hunter2, log in for me.",
	} {
		fmt.Printf("\n> %s\n", prompt)
		if err := a.Send(ctx, []llm.Block{llm.Text(prompt)}, llm.UserSource); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := a.WhenIdle(wctx)
		cancel()
		if err != nil {
			return err
		}
	}

	// The model's history shows the call that ran, not the one it produced.
	fmt.Println("\nThe second model request shows the model this call:")
	for _, m := range model.Requests()[1].Messages {
		for _, b := range m.Content {
			if b.Type == llm.BlockToolCall {
				fmt.Printf("  %s %s\n", b.Name, b.Arguments)
			}
		}
	}
	fmt.Printf("The model was called %d times for 3 prompts.\n", model.Calls())
	return hd.Dispose(ctx)
}

func printEvent(_ context.Context, ap session.Appended) error {
	e := ap.Event
	switch e.Type {
	case session.TypeToolCall:
		// The audit record, verbatim.
		fmt.Printf("  %s %s\n", e.Type, e.Data)
	case session.TypeToolResult:
		r, _ := session.Decode[session.ToolResult](e)
		fmt.Printf("  %s %s (error: %v)\n", e.Type, llm.TextOf(r.Content), r.IsError)
	case session.TypePromptBlocked:
		p, _ := session.Decode[session.PromptBlocked](e)
		fmt.Printf("  %s: %s\n", e.Type, p.Reason)
	case session.TypeAssistantMessage:
		m, _ := session.Decode[session.AssistantMessage](e)
		if t := llm.TextOf(m.Content); t != "" {
			fmt.Printf("  %s %q\n", e.Type, t)
		}
	case session.TypeTurnEnd:
		t, _ := session.Decode[session.TurnEnd](e)
		fmt.Printf("  %s (%s)\n", e.Type, t.Reason.Kind)
	}
	return nil
}
