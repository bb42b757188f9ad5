package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/compact"
	"github.com/dshq/dsh/llm"
)

// slashCommands are the commands a client offers in its prompt box
// (available_commands_update). They run in the server, not the model.
var slashCommands = []struct{ name, desc, hint string }{
	{"compact", "Summarize the conversation so far to free context", "what the summary should focus on (optional)"},
}

func availableCommands() []sdk.AvailableCommand {
	out := make([]sdk.AvailableCommand, 0, len(slashCommands))
	for _, c := range slashCommands {
		ac := sdk.AvailableCommand{Name: c.name, Description: c.desc}
		if c.hint != "" {
			ac.Input = &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: c.hint}}
		}
		out = append(out, ac)
	}
	return out
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
	case "compact":
		c := r.ws.app.Compactor
		if c == nil {
			r.say("Compaction is not available.")
			return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
		}
		out, err := c.Compact(context.WithoutCancel(ctx), r.ag, arg)
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
