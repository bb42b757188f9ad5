package headless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dshq/dsh/checkpoint"
	"github.com/dshq/dsh/session"
)

// rewindFiles serves the Claude Agent SDK's rewind_files control request
// (Query.rewindFiles(userMessageId, {dryRun})): the workspace's files go
// back to their state before the turn that user message started, from
// dsh's checkpoints (which also see what shell commands changed). The
// message is named by the uuid dsh gave it (the replayed user line, the
// transcript) or by the uuid the client sent with it in this process.
// As in Claude Code the answer is {canRewind, error, filesChanged,
// insertions, deletions}. Files someone other than the agent changed
// since its checkpoint are not overwritten: the answer is canRewind
// false naming them, unless the request says "force": true (a dsh
// extension; the SDK's call has no such option).
func (r *run) rewindFiles(ctx context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		UserMessageID string `json:"user_message_id"`
		DryRun        bool   `json:"dry_run"`
		Force         bool   `json:"force"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, fmt.Errorf("malformed rewind_files request: %v", err)
	}
	refuse := func(format string, args ...any) (any, error) {
		return rewindFilesResult{CanRewind: false, Error: fmt.Sprintf(format, args...)}, nil
	}
	c := r.a.Checkpoints
	if c == nil || !c.Enabled() {
		return refuse("file checkpointing is off in dsh (the checkpoints plugin or settings' checkpoints.disabled)")
	}
	if !r.ensureOpen(ctx) {
		return refuse("no session is open: %v", r.openErr)
	}
	s := r.agent().Session()
	turn, ok := r.turnOfMessage(s, req.UserMessageID)
	if !ok {
		return refuse("no user message %q starts a turn of session %s", req.UserMessageID, s.ID())
	}
	plan := checkpoint.Request{To: checkpoint.Target{Turn: turn}, Code: true, DryRun: true}
	rep, err := c.Rewind(ctx, s, plan)
	if err != nil {
		return refuse("%s", rewindError(err))
	}
	out := rewindFilesResult{CanRewind: true, FilesChanged: []string{}}
	for _, a := range rep.Actions {
		out.FilesChanged = append(out.FilesChanged, a.Path)
	}
	out.Insertions, out.Deletions = diffStat(rep.Diff)
	if len(rep.Conflicts) > 0 && !req.Force {
		var names []string
		for _, cf := range rep.Conflicts {
			names = append(names, cf.Path)
		}
		out.CanRewind = false
		out.Error = fmt.Sprintf("%d file(s) changed by someone other than the agent since its checkpoint would be overwritten: %s (send \"force\": true to overwrite them)", len(names), strings.Join(names, ", "))
		return out, nil
	}
	if req.DryRun {
		return out, nil
	}
	plan.DryRun, plan.Force = false, req.Force
	rep, err = c.Rewind(ctx, s, plan)
	if err != nil {
		return refuse("%s", rewindError(err))
	}
	if rep.Applied != nil && len(rep.Applied.Failed)+len(rep.Applied.Left) > 0 {
		var bad []string
		for _, f := range append(rep.Applied.Failed, rep.Applied.Left...) {
			bad = append(bad, fmt.Sprintf("%s (%v)", f.Path, f.Err))
		}
		out.Error = "not restored: " + strings.Join(bad, ", ")
		out.CanRewind = len(rep.Applied.Done) > 0
	}
	return out, nil
}

type rewindFilesResult struct {
	CanRewind    bool     `json:"canRewind"`
	Error        string   `json:"error,omitempty"`
	FilesChanged []string `json:"filesChanged,omitempty"`
	Insertions   int      `json:"insertions"`
	Deletions    int      `json:"deletions"`
}

func rewindError(err error) string {
	switch {
	case errors.Is(err, checkpoint.ErrBusy):
		return "a turn is running: rewind when it has ended (or interrupt it)"
	}
	return strings.TrimPrefix(err.Error(), "checkpoint: ")
}

// diffStat counts the added and removed lines of a unified diff.
func diffStat(diff string) (ins, del int) {
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "):
		case strings.HasPrefix(l, "+"):
			ins++
		case strings.HasPrefix(l, "-"):
			del++
		}
	}
	return ins, del
}

// turnOfMessage finds the turn whose prompt is the user message id names:
// a uuid the client sent with it in this process, or the one dsh derives
// for the user/message event.
func (r *run) turnOfMessage(s *session.Session, id string) (int, bool) {
	r.mu.Lock()
	seq, client := r.clientUUIDs[id]
	r.mu.Unlock()
	turn, open, found := 0, false, false
	// Turn starts and prompts are released from memory once stored: they
	// are folded with their payloads read back in batches.
	errFound := errors.New("found")
	_ = s.Each(context.Background(), 0, func(e session.Event) bool {
		return e.Type == session.TypeTurnStart || e.Type == session.TypeUserMessage
	}, func(e session.Event) error {
		switch e.Type {
		case session.TypeTurnStart:
			if ts, err := session.Decode[session.TurnStart](e); err == nil {
				turn, open = ts.Turn, true
			}
		case session.TypeUserMessage:
			if open && ((client && e.Seq == seq) || (!client && r.messageUUID(e) == id)) {
				found = true
				return errFound
			}
		}
		return nil
	})
	if !found {
		return 0, false
	}
	return turn, true
}

// messageUUID is the uuid dsh's Claude-format output gives a user/message
// event (the replayed user line, transcripts).
func (r *run) messageUUID(e session.Event) string {
	for _, en := range r.conv.Event(e) {
		return en.UUID
	}
	return ""
}
