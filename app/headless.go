package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

// Exit codes of headless runs. They are part of dsh's scripting contract.
const (
	ExitOK        = 0 // the turn completed
	ExitError     = 1 // the turn failed (provider, tool pipeline, plugin)
	ExitUsage     = 2 // bad flags, settings or model; nothing ran
	ExitAborted   = 3 // cancelled (SIGINT) or disposed
	ExitMaxTokens = 4 // the model hit its output limit
	ExitRejected  = 5 // every prompt was blocked by a hook
	ExitMaxTurns  = 6 // --max-turns was reached
	ExitNotSaved  = 7 // the session could not be saved (disk full, store failure): the turn stopped before the next model call
)

// Output formats.
const (
	FormatText       = "text"
	FormatJSON       = "json"
	FormatStreamJSON = "stream-json"
)

// HeadlessOptions configure one headless run.
type HeadlessOptions struct {
	Prompt string
	Format string
	Out    io.Writer
	// Resume continues this session (for --resume / --continue).
	Resume session.ID
}

// Result is the final outcome of a headless run (the json format).
type Result struct {
	Type       string    `json:"type"`
	Subtype    string    `json:"subtype"`
	IsError    bool      `json:"is_error"`
	Result     string    `json:"result"`
	SessionID  string    `json:"session_id"`
	StopReason string    `json:"stop_reason"`
	Error      string    `json:"error,omitempty"`
	Turns      int       `json:"num_turns"`
	Steps      int       `json:"num_steps"`
	DurationMS int64     `json:"duration_ms"`
	Usage      llm.Usage `json:"usage"`
	Model      string    `json:"model"`

	code string // the turn's end-reason code
}

// RunHeadless runs one prompt to completion with no approver (asks fail
// closed unless rules or the mode allow) and reports the outcome.
func (a *App) RunHeadless(ctx context.Context, ho HeadlessOptions) (int, error) {
	if ho.Format == "" {
		ho.Format = FormatText
	}
	switch ho.Format {
	case FormatText, FormatJSON, FormatStreamJSON:
	default:
		return ExitUsage, fmt.Errorf("unknown output format %q (want text, json or stream-json)", ho.Format)
	}
	start := a.opts.Now()
	// MCP servers start in the background and never hold up the prompt: a
	// server with a cached tool list has its tools registered already (a
	// call waits for the server to start); one seen for the first time adds
	// its tools once it has connected.
	if a.MCP != nil && a.opts.Site.Warn != nil {
		for _, st := range a.MCP.Servers() {
			if st.State == mcp.StateConnecting && len(st.Tools) == 0 {
				a.opts.Site.Warn(fmt.Sprintf("mcp: server %q is still starting and its tools are not known yet: they join once it is connected (later runs have them from the start)", st.Name))
			}
		}
	}
	if err := ctx.Err(); err != nil {
		// Interrupted before anything ran: the documented code for a
		// cancelled run, and no session to name.
		return ExitAborted, fmt.Errorf("interrupted before the prompt was sent: %w", err)
	}
	var (
		hd  *agent.Handle
		err error
	)
	if ho.Resume != "" {
		hd, err = a.Resume(ctx, ho.Resume, nil)
	} else {
		hd, err = a.Start(ctx, nil)
	}
	if err != nil {
		code := ExitError
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidID) {
			code = ExitUsage // a bad --resume id: nothing ran
		}
		return code, a.refused(ho, string(ho.Resume), start, err)
	}
	ag := hd.Agent
	defer hd.Dispose(context.WithoutCancel(ctx))
	sess := ag.Session()
	from := sess.Len()
	var mu sync.Mutex
	if ho.Format == FormatStreamJSON {
		enc := json.NewEncoder(ho.Out)
		undo := a.Host.Sessions.Appended.Listen(func(_ context.Context, ap session.Appended) error {
			if ap.Session != sess {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			return enc.Encode(ap.Event)
		})
		defer undo()
	}
	if err := ag.Send(ctx, []llm.Block{llm.Text(ho.Prompt)}, llm.Source{}); err != nil {
		return ExitError, a.refused(ho, string(sess.ID()), start, err)
	}
	done := make(chan error, 1)
	go func() { done <- ag.WhenIdle(context.WithoutCancel(ctx)) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		ag.Cancel("interrupted")
		err = <-done
	}
	if err != nil {
		return ExitError, err
	}
	res := summarize(sess.Events()[from:], string(sess.ID()), a.Model)
	res.DurationMS = a.opts.Now().Sub(start).Milliseconds()
	// Success is claimed only for a saved session: the turn's last events
	// (its turn/end) may still have failed to reach the store.
	if ferr := a.Host.Sessions.FlushSession(context.WithoutCancel(ctx), sess); ferr != nil && res.code != session.CodeNotSaved {
		res.StopReason, res.Error, res.code = session.EndError, ferr.Error(), session.CodeNotSaved
	}
	lost := a.LeaseLost(sess.ID())
	if lost != nil {
		// Another host took the session over: what this run did after
		// that is not recorded, and the new holder closes the turn as
		// interrupted. Not a full disk: say what happened.
		res.StopReason, res.Error, res.code = session.EndError, lost.Error(), ""
	}
	code := exitCode(res.StopReason, res.code)
	res.IsError = code != ExitOK
	if res.IsError {
		res.Subtype = subtype(res.StopReason, res.code)
	}
	mu.Lock()
	defer mu.Unlock()
	var runErr error
	if code == ExitNotSaved {
		// Said on stderr in every format: a script reading only stdout
		// must not take the run for saved.
		runErr = notSaved(res.Error)
	}
	if lost != nil {
		runErr = lost
	}
	switch ho.Format {
	case FormatText:
		if res.Result != "" {
			fmt.Fprintln(ho.Out, res.Result)
		}
		if runErr != nil {
			return code, runErr
		}
		if res.IsError {
			msg := res.Error
			if msg == "" {
				msg = "turn ended: " + res.StopReason
			}
			return code, fmt.Errorf("%s", msg)
		}
	default:
		if err := json.NewEncoder(ho.Out).Encode(res); err != nil {
			return ExitError, err
		}
	}
	return code, runErr
}

// notSaved is the error of a run whose session could not be saved, with
// what to do about it.
func notSaved(msg string) error {
	return fmt.Errorf("%s\nThe turn stopped there: nothing was sent to the model that the session could not record. "+
		"Free space (or fix the session store), then continue with `dsh -c`.", msg)
}

// refused reports a run that never started its turn (a session another
// process holds, one that cannot be loaded): in the json formats as a
// result object too, so scripts parsing stdout still get one.
func (a *App) refused(ho HeadlessOptions, id string, start time.Time, err error) error {
	WriteRefused(ho.Out, ho.Format, id, a.Model, a.opts.Now().Sub(start), err)
	return err
}

// WriteRefused writes, in the json and stream-json formats, the result of a
// headless run that failed before its turn started; text writes nothing
// (the error goes to stderr).
func WriteRefused(w io.Writer, format, sessionID, model string, elapsed time.Duration, err error) {
	if format != FormatJSON && format != FormatStreamJSON {
		return
	}
	kind := "error_during_execution"
	switch {
	case errors.Is(err, store.ErrInUse):
		kind = "error_session_in_use"
	case errors.Is(err, store.ErrNotFound):
		kind = "error_session_not_found"
	case errors.Is(err, ErrStoreOpen):
		kind = "error_not_saved"
	}
	res := Result{Type: "result", Subtype: kind, IsError: true, SessionID: sessionID, StopReason: "none", Error: err.Error(),
		Model: model, DurationMS: elapsed.Milliseconds()}
	_ = json.NewEncoder(w).Encode(res)
}

// subtype names how a run that is not a success ended: error_<end reason>
// (error_max_turns, error_aborted, …), and for a failed turn the kind of
// error (error_not_saved, error_rate_limit, error_auth, …), or Claude Code's
// error_during_execution when the error has no kind.
func subtype(stop, code string) string {
	if stop != session.EndError {
		return "error_" + stop
	}
	if code == "" {
		return "error_during_execution"
	}
	return "error_" + strings.ToLower(strings.ReplaceAll(code, "-", "_"))
}

func exitCode(stop, code string) int {
	if code == session.CodeNotSaved {
		return ExitNotSaved
	}
	switch stop {
	case session.EndCompleted:
		return ExitOK
	case session.EndAborted, session.EndDisposed, session.EndInterrupted:
		return ExitAborted
	case session.EndMaxTokens:
		return ExitMaxTokens
	case session.EndRejected:
		return ExitRejected
	case session.EndMaxTurns:
		return ExitMaxTurns
	}
	return ExitError
}

// summarize reads a run's outcome from its events.
func summarize(events []session.Event, id, model string) Result {
	res := Result{Type: "result", Subtype: "success", SessionID: id, Model: model, StopReason: "none"}
	var last string
	for _, e := range events {
		switch e.Type {
		case session.TypeTurnStart:
			res.Turns++
		case session.TypeStepStart:
			res.Steps++
		case session.TypeAssistantMessage:
			am, err := session.Decode[session.AssistantMessage](e)
			if err != nil {
				continue
			}
			if am.Usage != nil {
				res.Usage.Add(*am.Usage)
			}
			if t := llm.TextOf(am.Content); t != "" {
				last = t
			}
		case session.TypeTurnEnd:
			te, err := session.Decode[session.TurnEnd](e)
			if err != nil {
				continue
			}
			res.StopReason = te.Reason.Kind
			switch te.Reason.Kind {
			case session.EndError:
				res.Error, res.code = te.Reason.Message, te.Reason.Code
			case session.EndAborted, session.EndRejected:
				res.Error = te.Reason.Reason
			}
		}
	}
	res.Result = last
	return res
}
