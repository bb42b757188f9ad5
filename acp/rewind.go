package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/checkpoint"
)

// rewindUsage is what /rewind answers when it is not given a turn.
const rewindUsage = "Rewind with /rewind TURN [code|chat|both] [dry-run] [force|skip-conflicts] (default both: the files and the conversation)."

// Options of the conflict question a /rewind asks.
const (
	optRewindOverwrite = "rewind_overwrite"
	optRewindSkip      = "rewind_skip"
	optRewindCancel    = "rewind_cancel"
)

// parseRewind reads /rewind's argument: "TURN[.STEP]" and words for the
// scope and flags, with or without leading dashes.
func parseRewind(arg string) (checkpoint.Request, bool, error) {
	f := strings.Fields(arg)
	if len(f) == 0 {
		return checkpoint.Request{}, false, nil
	}
	t, err := checkpoint.ParseTarget(f[0])
	if err != nil {
		return checkpoint.Request{}, false, err
	}
	r := checkpoint.Request{To: t}
	scope := ""
	for _, w := range f[1:] {
		switch strings.TrimLeft(strings.ToLower(w), "-") {
		case "code", "chat", "both":
			if scope != "" {
				return r, false, fmt.Errorf("give one of code, chat or both (got %s and %s)", scope, w)
			}
			scope = strings.TrimLeft(strings.ToLower(w), "-")
		case "dry-run", "dryrun":
			r.DryRun = true
		case "force":
			r.Force = true
		case "skip-conflicts":
			r.SkipConflicts = true
		default:
			return r, false, fmt.Errorf("unknown word %q", w)
		}
	}
	if r.Force && r.SkipConflicts {
		return r, false, errors.New("force and skip-conflicts exclude each other")
	}
	r.Code = scope == "" || scope == "code" || scope == "both"
	r.Chat = scope == "" || scope == "chat" || scope == "both"
	return r, true, nil
}

// rewind is the /rewind command: without a turn it lists the turns with
// their prompts and file changes; with one it rewinds, and when files
// someone else changed since the agent's checkpoint would be overwritten
// it shows them on a card and asks (session/request_permission):
// overwrite them, restore the rest, or cancel.
func (r *sess) rewind(ctx context.Context, p *promptSlot, arg string) (sdk.PromptResponse, error) {
	end := sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}
	c := r.ws.app.Checkpoints
	if c == nil {
		r.say("Rewind is not available: the checkpoints plugin is switched off.")
		return end, nil
	}
	req, ok, err := parseRewind(arg)
	if err != nil {
		r.say("/rewind: " + err.Error() + ". " + rewindUsage)
		return end, nil
	}
	cctx, done, live := r.commandContext(ctx, p)
	if !live {
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	}
	defer done()
	// As for /compact: the previous prompt was answered at its turn's end,
	// a moment before the agent is idle.
	wctx, stop := context.WithTimeout(cctx, idleWait)
	_ = r.ag.WhenIdle(wctx)
	stop()
	s := r.ag.Session()
	if !ok {
		pts, err := c.Points(s)
		if err != nil {
			r.say("Rewind failed: " + err.Error())
			return end, nil
		}
		var b strings.Builder
		if len(pts) == 0 {
			b.WriteString("There are no turns to rewind to yet.\n")
		}
		for _, pt := range pts {
			fmt.Fprintf(&b, "%d. %s — %s\n", pt.Target.Turn, clipRunes(oneLine(pt.Prompt), 70), pt.Summary())
		}
		b.WriteString(rewindUsage)
		r.say(b.String())
		return end, nil
	}
	rep, err := c.Rewind(cctx, s, req)
	if errors.Is(err, checkpoint.ErrConflicts) {
		choice, aerr := r.askRewindConflicts(cctx, p, rep)
		if aerr != nil || choice == optRewindCancel {
			r.say(rep.TextAsking() + "Rewind cancelled: nothing was changed.")
			return end, nil
		}
		if choice == optRewindOverwrite {
			req.Force = true
		} else {
			req.SkipConflicts = true
		}
		rep, err = c.Rewind(cctx, s, req)
	}
	text := rep.TextAsking()
	switch {
	case errors.Is(err, checkpoint.ErrBusy):
		text = "The agent is busy; rewind when its turn has ended (or cancel it)."
	case errors.Is(err, checkpoint.ErrConflicts):
		text += "Rewind refused: the files changed again while you were asked."
	case err != nil:
		text += "Rewind failed: " + err.Error()
	case rep.Done && req.Chat && rep.Shadowed > 0:
		text += "The editor still shows the rewound messages; the model no longer sees them."
	}
	r.say(strings.TrimRight(text, "\n"))
	return end, nil
}

// askRewindConflicts shows the conflicts (with their diffs) on a card and
// asks what to do; a cancelled question or prompt cancels the rewind.
func (r *sess) askRewindConflicts(ctx context.Context, p *promptSlot, rep checkpoint.Report) (string, error) {
	id := sdk.ToolCallId(fmt.Sprintf("rewind-%d", r.ag.Session().Len()))
	title := fmt.Sprintf("Rewind to before turn %s: %d file(s) changed by someone else", rep.Request.To, len(rep.Conflicts))
	kind := sdk.ToolKindEdit
	var body strings.Builder
	for _, cf := range rep.Conflicts {
		fmt.Fprintf(&body, "%s (%s)\n", cf.Path, cf.Op)
		if cf.Diff != "" {
			body.WriteString(cf.Diff)
			if !strings.HasSuffix(cf.Diff, "\n") {
				body.WriteString("\n")
			}
		}
	}
	content := []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(body.String()))}
	st := sdk.ToolCallStatusPending
	r.mu.Lock()
	if !r.ready || r.disposed {
		r.mu.Unlock()
		return optRewindCancel, errors.New("acp: the session is gone")
	}
	r.notify(sdk.SessionUpdate{ToolCall: &sdk.SessionUpdateToolCall{SessionUpdate: "tool_call", ToolCallId: id, Title: title, Kind: kind,
		Status: st, Content: content}})
	r.mu.Unlock()
	qctx, stop := context.WithCancel(ctx)
	defer stop()
	r.srv.spawn(func() {
		select {
		case <-p.cancel:
		case <-r.srv.done:
		case <-qctx.Done():
		}
		stop()
	})
	resp, err := r.srv.peer.RequestPermission(qctx, sdk.RequestPermissionRequest{
		SessionId: sdk.SessionId(r.id),
		ToolCall:  sdk.ToolCallUpdate{ToolCallId: id, Title: &title, Kind: &kind, Status: &st, Content: content},
		Options: []sdk.PermissionOption{
			{OptionId: optRewindOverwrite, Name: "Overwrite their changes", Kind: sdk.PermissionOptionKindAllowOnce},
			{OptionId: optRewindSkip, Name: "Rewind the other files, leave these", Kind: sdk.PermissionOptionKindAllowOnce},
			{OptionId: optRewindCancel, Name: "Cancel the rewind", Kind: sdk.PermissionOptionKindRejectOnce},
		},
	})
	choice := optRewindCancel
	if err == nil && resp.Outcome.Selected != nil {
		switch o := string(resp.Outcome.Selected.OptionId); o {
		case optRewindOverwrite, optRewindSkip:
			choice = o
		}
	}
	final := sdk.ToolCallStatusCompleted
	if choice == optRewindCancel {
		final = sdk.ToolCallStatusFailed
	}
	r.mu.Lock()
	if r.ready && !r.disposed {
		r.notify(sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{SessionUpdate: "tool_call_update", ToolCallId: id, Status: &final}})
	}
	r.mu.Unlock()
	return choice, err
}

func clipRunes(s string, n int) string {
	if rs := []rune(s); len(rs) > n {
		return string(rs[:n-1]) + "…"
	}
	return s
}
