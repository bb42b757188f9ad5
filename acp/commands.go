package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/commands"
	"github.com/dshq/dsh/compact"
	"github.com/dshq/dsh/llm"
)

// slashCommands are the commands a client offers in its prompt box
// (available_commands_update). They run in the server, not the model.
var slashCommands = []struct{ name, desc, hint string }{
	{"compact", "Summarize the conversation so far to free context", "what the summary should focus on (optional)"},
	{"rewind", "Take the files and/or the conversation back to before an earlier turn (no turn: list them)", "TURN [code|chat|both] [dry-run] [force|skip-conflicts]"},
}

// availableCommands are the server's commands and, after them, the
// workspace's custom commands (a custom command named like a server
// command is not offered: the server's runs).
func availableCommands(custom *commands.Set) []sdk.AvailableCommand {
	out := make([]sdk.AvailableCommand, 0, len(slashCommands)+len(custom.All()))
	add := func(name, desc, hint string) {
		ac := sdk.AvailableCommand{Name: name, Description: desc}
		if hint != "" {
			ac.Input = &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: hint}}
		}
		out = append(out, ac)
	}
	for _, c := range slashCommands {
		add(c.name, c.desc, c.hint)
	}
	for _, c := range custom.All() {
		if isServerCommand(c.Name) {
			continue
		}
		hint := c.ArgumentHint
		if hint == "" && strings.Contains(c.Body, "$") {
			hint = "arguments"
		}
		add(c.Name, c.Summary(), hint)
	}
	return out
}

func isServerCommand(name string) bool {
	for _, c := range slashCommands {
		if c.name == name {
			return true
		}
	}
	return false
}

// customCommands are the workspace's custom commands (none when the
// commands plugin is off).
func (r *sess) customCommands() *commands.Set {
	if c := r.ws.app.Commands; c != nil {
		return c.For(r.ws.cwd)
	}
	return nil
}

// command recognizes "/name args" in a text-only prompt naming one of the
// server's commands; anything else goes to the model.
func command(blocks []llm.Block) (name, arg string, ok bool) {
	if len(blocks) != 1 || blocks[0].Type != llm.BlockText {
		return "", "", false
	}
	text := strings.TrimSpace(blocks[0].Text)
	if !strings.HasPrefix(text, "/") {
		return "", "", false
	}
	name, arg, _ = strings.Cut(text[1:], " ")
	for _, c := range slashCommands {
		if c.name == name {
			return name, strings.TrimSpace(arg), true
		}
	}
	return "", "", false
}

func (r *sess) say(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ready && !r.disposed {
		r.notify(sdk.UpdateAgentMessageText(text))
	}
}

func (r *sess) runCommand(ctx context.Context, p *promptSlot, name, arg string) (sdk.PromptResponse, error) {
	switch name {
	case "rewind":
		return r.rewind(ctx, p, arg)
	case "compact":
		c := r.ws.app.Compactor
		if c == nil {
			r.say("Compaction is not available.")
			return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
		}
		cctx, done, ok := r.commandContext(ctx, p)
		if !ok {
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		}
		defer done()
		// The previous prompt was answered at its turn's end, a moment
		// before the agent is idle: a busy agent is only compacted before
		// its next step, so give it that moment.
		wctx, stop := context.WithTimeout(cctx, idleWait)
		_ = r.ag.WhenIdle(wctx)
		stop()
		if cctx.Err() != nil {
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		}
		out, err := c.Compact(cctx, r.ag, arg)
		if cctx.Err() != nil {
			// Cancelled (or the session is going): the compactor closed its
			// turn on the way out.
			if err != nil {
				r.say("Compaction cancelled.")
			}
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		}
		switch {
		case errors.Is(err, compact.ErrBusy):
			r.say("The agent is busy; the conversation will be compacted before its next step.")
		case err != nil:
			r.say("Compaction failed: " + err.Error())
		case out.Before == out.After && out.Pruned == 0:
			r.say("Nothing to compact yet.")
		default:
			r.say(fmt.Sprintf("Compacted the conversation: about %d → %d tokens.", out.Before, out.After))
		}
		return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
	}
	return sdk.PromptResponse{}, invalidParams("unknown command /%s", name)
}

// idleWait bounds how long a command waits for the agent to go idle.
const idleWait = 2 * time.Second

// commandContext is what a server command runs under: cancelled by
// session/cancel (the prompt's slot), by the session's disposal and by
// the server's teardown. done ends it. dispose waits for done before it
// stops the agent, so the command's turn is closed first; ok is false
// when the session is already disposed or the prompt cancelled.
func (r *sess) commandContext(ctx context.Context, p *promptSlot) (_ context.Context, done func(), ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.disposed || p.cancelled {
		return nil, nil, false
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	finished := make(chan struct{})
	r.stopCmd, r.cmdDone = cancel, finished
	r.srv.spawn(func() {
		select {
		case <-p.cancel:
		case <-r.srv.done:
		case <-cctx.Done():
		}
		cancel()
	})
	return cctx, func() {
		cancel()
		r.mu.Lock()
		if r.cmdDone == finished {
			r.stopCmd, r.cmdDone = nil, nil
		}
		r.mu.Unlock()
		close(finished)
	}, true
}
