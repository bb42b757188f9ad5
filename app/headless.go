package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/llm"
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
	if a.MCP != nil {
		// A short run must not start before MCP servers without a cached
		// tool list have connected, or their tools would be missing.
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_ = a.MCP.WaitReady(wctx)
		cancel()
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
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidID) {
			return ExitUsage, err // a bad --resume id: nothing ran
		}
		return ExitError, err
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
		return ExitError, err
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
	code := exitCode(res.StopReason)
	res.IsError = code != ExitOK
	if res.IsError {
		res.Subtype = "error_" + res.StopReason
	}
	mu.Lock()
	defer mu.Unlock()
	switch ho.Format {
	case FormatText:
		if res.Result != "" {
			fmt.Fprintln(ho.Out, res.Result)
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
	return code, nil
}

func exitCode(stop string) int {
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
				res.Error = te.Reason.Message
			case session.EndAborted, session.EndRejected:
				res.Error = te.Reason.Reason
			}
		}
	}
	res.Result = last
	return res
}
