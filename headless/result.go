package headless

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/internal/claudemsg"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/pricing"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

// Result is Claude Code's result message: the last line of stream-json,
// the whole of json. Field names and meanings follow Claude Code's
// (SDKResultMessage of the Claude Agent SDK): num_turns counts model
// calls in the turn, usage is the turn's, total_cost_usd and modelUsage
// are the running totals of the process.
type Result struct {
	Type          string  `json:"type"` // "result"
	Subtype       string  `json:"subtype"`
	IsError       bool    `json:"is_error"`
	DurationMS    int64   `json:"duration_ms"`
	DurationAPIMS int64   `json:"duration_api_ms"`
	NumTurns      int     `json:"num_turns"`
	Result        *string `json:"result,omitempty"` // success only
	// StopReason is the model's last stop reason, in Anthropic's words
	// (end_turn, tool_use, max_tokens, refusal), or null.
	StopReason        *string               `json:"stop_reason"`
	SessionID         string                `json:"session_id"`
	TotalCostUSD      float64               `json:"total_cost_usd"`
	Usage             claudemsg.Usage       `json:"usage"`
	ModelUsage        map[string]ModelUsage `json:"modelUsage"`
	PermissionDenials []Denial              `json:"permission_denials"`
	StructuredOutput  json.RawMessage       `json:"structured_output,omitempty"`
	// Errors say why an error subtype stopped the turn.
	Errors []string `json:"errors,omitempty"`
	// TerminalReason is why the turn ended, in Claude Code's words
	// (completed, max_turns, api_error, aborted_streaming, …).
	TerminalReason string `json:"terminal_reason"`
	// ErrorKind (dsh's) names what failed, for a turn that ended on an
	// error or a run that could not start: auth, rate_limit, server,
	// bad_request, not_saved, session_in_use, session_not_found, …
	ErrorKind string `json:"error_kind,omitempty"`
	UUID      string `json:"uuid"`

	// code is the process exit code this outcome stands for; end is dsh's
	// own end reason of the turn (the events format's stop_reason).
	code int
	end  string
}

// Result subtypes.
const (
	SubtypeSuccess          = "success"
	SubtypeErrorExecution   = "error_during_execution"
	SubtypeErrorMaxTurns    = "error_max_turns"
	SubtypeErrorBudget      = "error_max_budget_usd"
	SubtypeErrorSchemaRetry = "error_max_structured_output_retries"
)

// ModelUsage is one model's running totals (camelCase, as Claude Code
// writes modelUsage).
type ModelUsage struct {
	InputTokens              int     `json:"inputTokens"`
	OutputTokens             int     `json:"outputTokens"`
	CacheReadInputTokens     int     `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int     `json:"cacheCreationInputTokens"`
	WebSearchRequests        int     `json:"webSearchRequests"`
	CostUSD                  float64 `json:"costUSD"`
	ContextWindow            int     `json:"contextWindow"`
	MaxOutputTokens          int     `json:"maxOutputTokens"`
	// CostBasis is "list" (priced from the price table: llm/pricing's
	// list prices under the "pricing" settings) or "unknown" (nothing
	// prices the model: costUSD is 0).
	CostBasis string `json:"costBasis"`
	Provider  string `json:"provider,omitempty"`
}

// Denial is a tool call the permission system refused.
type Denial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// turnStats accumulates one turn's figures from its events.
type turnStats struct {
	turn       int
	startMS    int64
	stepStart  int64
	apiMS      int64
	steps      int
	usage      llm.Usage
	lastText   string
	lastFinish string
	denials    []Denial
	structured json.RawMessage
	schemaFail string // the last structured-output problem, when retries ran out
	budgetHit  bool
}

// answer adds a step's answer (an assistant/message event) to the turn's
// figures and the running costs.
func (st *turnStats) answer(e session.Event, am session.AssistantMessage, model string, c *costs) {
	if st.stepStart > 0 {
		st.apiMS += e.Time - st.stepStart
	}
	if am.Usage != nil {
		st.usage.Add(*am.Usage)
		c.add(model, *am.Usage)
	}
	if t := llm.TextOf(am.Content); t != "" {
		st.lastText = t
	}
	st.lastFinish = finishOf(am.Content)
}

// costs keeps the process's running totals by model.
type costs struct {
	byModel map[string]*ModelUsage
	total   float64
	// info describes a model (context window, output limit).
	info func(model string) llm.ModelInfo
	// prices is the table in force (the app's; nil: the built-in one).
	prices *pricing.Table
}

func (c *costs) add(model string, u llm.Usage) {
	if c.byModel == nil {
		c.byModel = map[string]*ModelUsage{}
	}
	m := c.byModel[model]
	if m == nil {
		m = &ModelUsage{CostBasis: "unknown"}
		if _, known := c.prices.Lookup(model); known {
			m.CostBasis = "list"
		}
		if p, _, ok := strings.Cut(model, "/"); ok {
			m.Provider = p
		}
		if c.info != nil {
			in := c.info(model)
			m.ContextWindow, m.MaxOutputTokens = in.ContextWindow, in.MaxOutput
		}
		c.byModel[model] = m
	}
	m.InputTokens += u.InputTokens
	m.OutputTokens += u.OutputTokens
	m.CacheReadInputTokens += u.CacheReadTokens
	m.CacheCreationInputTokens += u.CacheWriteTokens
	usd, _ := c.prices.Cost(model, u)
	m.CostUSD += usd
	c.total += usd
}

func (c *costs) snapshot() map[string]ModelUsage {
	out := make(map[string]ModelUsage, len(c.byModel))
	names := make([]string, 0, len(c.byModel))
	for k := range c.byModel {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		out[k] = *c.byModel[k]
	}
	return out
}

// anthropicStop names a dsh finish kind as Anthropic's stop_reason.
func anthropicStop(kind string) *string {
	var s string
	switch kind {
	case "":
		return nil
	case llm.FinishStop:
		s = "end_turn"
	case llm.FinishToolCalls:
		s = "tool_use"
	case llm.FinishMaxTokens:
		s = "max_tokens"
	case llm.FinishRefusal:
		s = "refusal"
	default:
		s = kind
	}
	return &s
}

// buildResult turns a finished turn into its result and exit code.
func buildResult(st *turnStats, end session.TurnEnd, sessionID string, c *costs, durationMS int64) Result {
	r := Result{
		Type: "result", Subtype: SubtypeSuccess, DurationMS: durationMS, DurationAPIMS: st.apiMS, NumTurns: st.steps,
		StopReason: anthropicStop(st.lastFinish), SessionID: sessionID, TotalCostUSD: c.total,
		Usage: claudemsg.ResultUsage(st.usage), ModelUsage: c.snapshot(), PermissionDenials: st.denials,
		StructuredOutput: st.structured, TerminalReason: terminalReason(end.Reason),
		UUID: claudemsg.UUID(sessionID, "result", fmt.Sprint(end.Turn)), end: end.Reason.Kind,
	}
	if r.PermissionDenials == nil {
		r.PermissionDenials = []Denial{}
	}
	text := st.lastText
	r.code = exitCode(end.Reason.Kind, end.Reason.Code)
	switch end.Reason.Kind {
	case session.EndCompleted:
		if st.schemaFail != "" {
			r.Subtype, r.Errors, r.code = SubtypeErrorSchemaRetry, []string{st.schemaFail}, app.ExitError
		} else {
			r.Result = &text
		}
	case session.EndMaxSteps:
		r.Subtype, r.Errors = SubtypeErrorMaxTurns, []string{fmt.Sprintf("Reached maximum number of turns (%d)", st.steps)}
		if st.budgetHit {
			r.Subtype, r.Errors = SubtypeErrorBudget, []string{"Reached the --max-budget-usd limit"}
		}
	case session.EndMaxTokens:
		// The turn ended on the model's output limit: Claude Code reports
		// it as a success with stop_reason max_tokens.
		r.Result = &text
	case session.EndError:
		msg := end.Reason.Message
		if msg == "" {
			msg = "the turn failed"
		}
		r.ErrorKind = errorKind(end.Reason.Code)
		if end.Reason.Code == session.CodeNotSaved {
			// Not the model's failure: the session could not be saved.
			r.Subtype, r.Errors = SubtypeErrorExecution, []string{msg}
			break
		}
		// A failed model call: Claude Code's success subtype with
		// is_error and the error text as the result.
		r.Result = &msg
	default: // aborted, interrupted, disposed, rejected
		why := end.Reason.Reason
		if why == "" {
			why = "turn ended: " + end.Reason.Kind
		}
		r.Subtype, r.Errors = SubtypeErrorExecution, []string{why}
	}
	r.IsError = r.code != app.ExitOK
	return r
}

// errorKind names a dsh error code for error_kind.
func errorKind(code string) string {
	if code == "" {
		return "error"
	}
	return strings.ToLower(strings.ReplaceAll(code, "-", "_"))
}

// terminalReason says why a turn ended in Claude Code's words.
func terminalReason(r session.EndReason) string {
	switch r.Kind {
	case session.EndCompleted, session.EndMaxTokens:
		return "completed"
	case session.EndMaxSteps:
		return "max_turns"
	case session.EndRejected:
		return "hook_stopped"
	case session.EndError:
		switch r.Code {
		case llm.CodeContextTooLong:
			return "prompt_too_long"
		case llm.CodeAuth, llm.CodeRateLimit, llm.CodeBadRequest, llm.CodeServer:
			return "api_error"
		case session.CodeNotSaved:
			return "turn_setup_failed"
		}
		return "model_error"
	}
	return "aborted_streaming" // aborted, interrupted, disposed
}

func exitCode(stop, code string) int {
	if code == session.CodeNotSaved {
		return app.ExitNotSaved
	}
	switch stop {
	case session.EndCompleted:
		return app.ExitOK
	case session.EndAborted, session.EndDisposed, session.EndInterrupted:
		return app.ExitAborted
	case session.EndMaxTokens:
		return app.ExitMaxTokens
	case session.EndRejected:
		return app.ExitRejected
	case session.EndMaxSteps:
		return app.ExitMaxSteps
	}
	return app.ExitError
}

// notSaved is the message of a run whose session could not be saved,
// with what to do about it.
func notSaved(msg string) error {
	return fmt.Errorf("%s\nThe turn stopped there: nothing was sent to the model that the session could not record. "+
		"Free space (or fix the session store), then continue with `dsh -c`.", msg)
}

// WriteRefused writes, in the json and stream-json formats, the result of
// a run that failed before its turn started (a session another process
// holds, one that does not exist, a store that cannot be opened), so a
// script reading stdout still gets one; text writes nothing (the error
// goes to stderr).
func WriteRefused(w io.Writer, format, sessionID string, err error) {
	if format != FormatJSON && format != FormatStreamJSON {
		return
	}
	kind := "error"
	switch {
	case errors.Is(err, store.ErrInUse):
		kind = "session_in_use"
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalidID):
		kind = "session_not_found"
	case errors.Is(err, app.ErrStoreOpen):
		kind = "not_saved"
	}
	res := Result{Type: "result", Subtype: SubtypeErrorExecution, IsError: true, SessionID: sessionID,
		Usage: claudemsg.ResultUsage(llm.Usage{}), ModelUsage: map[string]ModelUsage{}, PermissionDenials: []Denial{},
		Errors: []string{err.Error()}, TerminalReason: "turn_setup_failed", ErrorKind: kind,
		UUID: claudemsg.UUID(sessionID, "refused", err.Error())}
	_ = (&lineWriter{out: w}).write(res)
}
