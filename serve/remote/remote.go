// Package remote is `dsh remote`: dsh's front doors driving a session that
// runs in a dsh serve (docs/serve.md) instead of in this process. Prompt is
// `dsh remote -p`: it prints the turn in dsh -p's output formats and exits
// with dsh -p's codes, from the server's event stream; Sessions lists; the
// terminal UI's attach mode (ui/term) is fed by [Session].
package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/headless"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/client"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// Approval policies of Prompt: what a permission question the agent puts
// while no one watches becomes.
const (
	// ApproveDeny refuses it with a reason the model reads, as dsh -p
	// does with a question it has no one to put to.
	ApproveDeny = "deny"
	// ApproveAllow allows each call once.
	ApproveAllow = "allow"
	// ApproveWait leaves it pending for an answer through the API or
	// `dsh remote attach` (the server's --approval-timeout still holds).
	ApproveWait = "wait"
)

// ApprovePolicies lists the accepted policies.
var ApprovePolicies = []string{ApproveDeny, ApproveAllow, ApproveWait}

// PromptOptions configure [Prompt].
type PromptOptions struct {
	Client *client.Client
	// Session continues this session; empty creates one with Create.
	Session session.ID
	Create  api.CreateSession
	Prompt  string
	// Format is one of headless.OutputFormats.
	Format                 string
	IncludePartialMessages bool
	// Approve is one of [ApprovePolicies] (default ApproveDeny).
	Approve string
	Out     io.Writer
	// Err hears what the run decided on its own (approvals answered, a
	// stream resumed).
	Err     io.Writer
	Version string
	// Reconnect is the wait before a broken event stream is resumed from
	// the last seq seen (default 250 ms).
	Reconnect time.Duration
	// CancelGrace bounds the wait for the turn's end after an interrupt
	// asked the server to cancel it (default 15 s).
	CancelGrace time.Duration
	Now         func() time.Time
}

// Prompt sends one prompt to a session of the server and prints its turn as
// `dsh -p` would; it returns dsh -p's exit code and, when set, the line for
// stderr. Cancelling ctx (SIGINT) cancels the turn on the server and
// reports it as dsh -p reports an interrupted turn.
func Prompt(ctx context.Context, o PromptOptions) (int, error) {
	if o.Approve == "" {
		o.Approve = ApproveDeny
	}
	if !slices.Contains(ApprovePolicies, o.Approve) {
		return app.ExitUsage, fmt.Errorf("unknown --approve %q (want %s)", o.Approve, strings.Join(ApprovePolicies, ", "))
	}
	if _, err := headless.NewPrinter(headless.PrinterOptions{Format: o.Format, IncludePartialMessages: o.IncludePartialMessages, Out: io.Discard}); err != nil {
		return app.ExitUsage, err
	}
	if strings.TrimSpace(o.Prompt) == "" {
		return app.ExitUsage, errors.New("no prompt: pass it with -p or on stdin")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Err == nil {
		o.Err = io.Discard
	}
	if o.Reconnect <= 0 {
		o.Reconnect = 250 * time.Millisecond
	}
	if o.CancelGrace <= 0 {
		o.CancelGrace = 15 * time.Second
	}
	start := o.Now()
	c := o.Client
	var s api.Session
	var err error
	if o.Session != "" {
		s, err = c.Session(ctx, o.Session)
	} else {
		s, err = create(ctx, c, o.Create)
	}
	if err != nil {
		return failed(ctx, "opening the session", err)
	}
	p, err := headless.NewPrinter(headless.PrinterOptions{Format: o.Format, Out: o.Out, SessionID: string(s.ID), Cwd: s.Workspace,
		Model: s.Model, PermissionMode: s.PermissionMode, IncludePartialMessages: o.IncludePartialMessages, Version: o.Version})
	if err != nil {
		return app.ExitUsage, err
	}
	acc, err := c.Send(ctx, s.ID, o.Prompt)
	if err != nil {
		return failed(ctx, "sending the prompt", err)
	}

	// The stream outlives an interrupt: the turn's end (aborted) is what
	// the run reports, as dsh -p's is.
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go func() {
		select {
		case <-ctx.Done():
		case <-sctx.Done():
			return
		}
		cctx, cancel := context.WithTimeout(sctx, o.CancelGrace)
		defer cancel()
		if _, err := c.Cancel(cctx, s.ID, "interrupted"); err != nil && client.StatusOf(err) != 409 {
			fmt.Fprintf(o.Err, "dsh remote: cancelling the turn: %v\n", err)
		}
		select {
		case <-sctx.Done():
		case <-time.After(o.CancelGrace):
			stop()
		}
	}()
	started := false
	for ev, err := range c.Stream(sctx, s.ID, acc.Seq, client.StreamOptions{Reconnect: o.Reconnect, Reconnected: func(err error) {
		fmt.Fprintf(o.Err, "dsh remote: the event stream broke (%v); resuming it\n", err)
	}}) {
		if err != nil {
			if ctx.Err() != nil {
				return app.ExitAborted, fmt.Errorf("interrupted; the server did not end the turn within %s (session %s)", o.CancelGrace, s.ID)
			}
			return failed(ctx, "reading the event stream", err)
		}
		// Events before the turn this prompt starts belong to another
		// client's turn still running.
		if ev.Type == session.TypeTurnStart {
			started = true
		}
		if !started {
			continue
		}
		if ev.Type == session.TypeApprovalRequest {
			approve(sctx, o, s.ID, ev)
		}
		if p.Event(ev) {
			break
		}
	}
	return p.Finish(o.Now().Sub(start).Milliseconds())
}

// create makes the session, in the token's first root when no workspace
// is named.
func create(ctx context.Context, c *client.Client, req api.CreateSession) (api.Session, error) {
	if req.Workspace == "" {
		ws, err := c.Workspaces(ctx)
		if err != nil {
			return api.Session{}, err
		}
		if len(ws.Roots) == 0 {
			return api.Session{}, errors.New("the token may create sessions in no workspace")
		}
		req.Workspace = ws.Roots[0]
	}
	return c.CreateSession(ctx, req)
}

// failed is the exit of a run the server refused or could not be reached
// for.
func failed(ctx context.Context, doing string, err error) (int, error) {
	if ctx.Err() != nil {
		return app.ExitAborted, fmt.Errorf("interrupted while %s", doing)
	}
	if st := client.StatusOf(err); st == 400 || st == 401 || st == 403 || st == 404 {
		return app.ExitUsage, fmt.Errorf("%s: %v", doing, err)
	}
	return app.ExitError, fmt.Errorf("%s: %v", doing, err)
}

// approve answers a question per the policy, saying so on stderr.
func approve(ctx context.Context, o PromptOptions, id session.ID, ev session.Event) {
	q, err := session.Decode[session.ApprovalRequest](ev)
	if err != nil {
		return
	}
	what := q.Name
	if q.Reason != "" {
		what += " (" + q.Reason + ")"
	}
	var a api.Answer
	switch o.Approve {
	case ApproveWait:
		fmt.Fprintf(o.Err, "dsh remote: %s waits for an answer: dsh remote attach %s, or POST /v1/sessions/%s/approvals/%s\n", what, id, id, q.CallID)
		return
	case ApproveAllow:
		a = api.Answer{Decision: api.DecisionAllow}
		fmt.Fprintf(o.Err, "dsh remote: allowed %s (--approve allow)\n", what)
	default:
		a = api.Answer{Decision: api.DecisionDeny, Reason: "dsh remote -p runs unattended and refuses what needs permission (--approve deny)"}
		fmt.Fprintf(o.Err, "dsh remote: denied %s: no one answers questions in dsh remote -p (--approve allow allows them, --approve wait leaves them to dsh remote attach)\n", what)
	}
	if _, err := o.Client.Answer(ctx, id, string(q.CallID), a); err != nil && client.StatusOf(err) != 404 {
		// 404: answered already (by another client, or the timeout).
		fmt.Fprintf(o.Err, "dsh remote: answering %s: %v\n", q.Name, err)
	}
}

// ListOptions configure [List].
type ListOptions struct {
	Client *client.Client
	// Workspace and Status filter; Limit bounds (0: the server's default).
	Workspace, Status string
	Limit             int
	Out               io.Writer
	Now               func() time.Time
}

// List prints the server's sessions as a table, newest activity first.
func List(ctx context.Context, o ListOptions) error {
	q := url.Values{}
	if o.Workspace != "" {
		q.Set("workspace", o.Workspace)
	}
	if o.Status != "" {
		q.Set("status", o.Status)
	}
	if o.Limit > 0 {
		q.Set("limit", fmt.Sprint(o.Limit))
	}
	list, err := o.Client.ListSessions(ctx, q)
	if err != nil {
		return err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	tw := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tTURNS\tASKING\tACTIVE\tWORKSPACE\tTITLE")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", s.ID, s.Status, s.Turns, s.PendingApprovals,
			ago(o.Now(), s.LastActivity), s.Workspace, oneLine(s.Title))
	}
	return tw.Flush()
}

func ago(now time.Time, ms int64) string {
	if ms == 0 {
		return "-"
	}
	d := now.Sub(time.UnixMilli(ms)).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return d.String() + " ago"
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59]) + "…"
	}
	return s
}

// Session is one session of a server as the terminal UI's attach mode
// drives it (ui/term.Remote): its live events and the actions a user takes.
type Session struct {
	Client *client.Client
	ID     session.ID
}

// Events streams the session's events from seq from on, resuming a broken
// stream where it stopped.
func (s Session) Events(ctx context.Context, from int64) iter.Seq2[session.Event, error] {
	return s.Client.Stream(ctx, s.ID, from, client.StreamOptions{Reconnect: 500 * time.Millisecond})
}

// Send queues a message (a turn starts when the session is idle).
func (s Session) Send(ctx context.Context, text string) error {
	_, err := s.Client.Send(ctx, s.ID, text)
	return err
}

// Steer joins the running turn between steps.
func (s Session) Steer(ctx context.Context, text string) error {
	_, err := s.Client.Steer(ctx, s.ID, text)
	return err
}

// Cancel cancels the running turn.
func (s Session) Cancel(ctx context.Context, reason string) error {
	_, err := s.Client.Cancel(ctx, s.ID, reason)
	return err
}

// Answer answers a pending question: allow (once, or with rules for the
// session) or deny with a reason.
func (s Session) Answer(ctx context.Context, call llm.CallID, a tool.Approval) error {
	ans := api.Answer{Decision: api.DecisionDeny, Reason: a.Reason}
	if a.Allow {
		ans = api.Answer{Decision: api.DecisionAllow}
		if len(a.Rules) > 0 {
			ans = api.Answer{Decision: api.DecisionAllowSession, Rules: a.Rules}
		}
	}
	_, err := s.Client.Answer(ctx, s.ID, string(call), ans)
	return err
}
