package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/dshq/dsh/llm"
)

// ID names a session.
type ID string

// FormatVersion is the only session format version this build reads.
const FormatVersion = 0

// Header is a session's metadata: it lives beside the log, never in it.
type Header struct {
	Version       int    `json:"version"`
	ID            ID     `json:"id"`
	CreatedAt     int64  `json:"createdAt"`
	Cwd           string `json:"cwd,omitempty"`
	ParentSession ID     `json:"parentSession,omitempty"`
	// SeedLength is how many leading events were inherited from the parent
	// by a fork; the session's own events start there.
	SeedLength int `json:"seedLength,omitempty"`
}

// SurfaceOp says how a surface event changes the derived history.
// The zero value appends.
type SurfaceOp struct {
	Replace    bool
	Start, End int64 // surface positions, named by seq, inclusive
}

// AppendOp appends to the surface.
var AppendOp = SurfaceOp{}

// ReplaceOp shadows the surface nodes from start through end (inclusive, by
// surface position) with the new event.
func ReplaceOp(start, end int64) SurfaceOp { return SurfaceOp{Replace: true, Start: start, End: end} }

// MarshalJSON writes "append" or {"op":"replace","start":s,"end":e}.
func (o SurfaceOp) MarshalJSON() ([]byte, error) {
	if !o.Replace {
		return []byte(`"append"`), nil
	}
	return []byte(`{"op":"replace","start":` + strconv.FormatInt(o.Start, 10) + `,"end":` + strconv.FormatInt(o.End, 10) + `}`), nil
}

// UnmarshalJSON reads either form.
func (o *SurfaceOp) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte(`"append"`)) {
		*o = AppendOp
		return nil
	}
	var r struct {
		Op    string `json:"op"`
		Start *int64 `json:"start"`
		End   *int64 `json:"end"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Op != "replace" || r.Start == nil || r.End == nil {
		return fmt.Errorf("session: invalid surfaceOp %s", b)
	}
	*o = ReplaceOp(*r.Start, *r.End)
	return nil
}

// Event is one entry of the log. Data is the payload's JSON text; treat it
// as read-only (decode it with [Decode]).
type Event struct {
	Type            string          `json:"type"`
	Seq             int64           `json:"seq"`
	Time            int64           `json:"time"`
	Data            json.RawMessage `json:"data"`
	SourceEventSeqs []int64         `json:"sourceEventSeqs,omitempty"`
	SurfaceOp       *SurfaceOp      `json:"surfaceOp,omitempty"`

	// msg caches the derived message of a surface event appended live, so
	// derivation need not decode what was just encoded. It is a private
	// deep copy, never exposed.
	msg *llm.Message
	// back is the session a released event (Data nil) belongs to, so
	// Decode can read its payload back from the store.
	back *Session
}

// AppendJSON appends e as one JSON object — the fields encoding/json
// writes for Event, in its order — without reflection and without
// re-validating the output, which json.Marshal does for every RawMessage
// (most of an event stream's encoding cost). Data is copied verbatim unless
// it holds line breaks, which are compacted away, so the object is always
// one line (a JSONL line, an SSE data line). Strings are not HTML-escaped.
// It fails when Data is not one JSON value (a released event's Data is
// nil: read it with [Session.Range] first).
func (e Event) AppendJSON(buf []byte) ([]byte, error) {
	if len(e.Data) == 0 || !json.Valid(e.Data) {
		return buf, fmt.Errorf("session: event %q (seq %d) carries data that is not JSON", e.Type, e.Seq)
	}
	buf = append(buf, `{"type":`...)
	buf = llm.AppendJSONStringNoHTML(buf, e.Type)
	buf = append(buf, `,"seq":`...)
	buf = strconv.AppendInt(buf, e.Seq, 10)
	buf = append(buf, `,"time":`...)
	buf = strconv.AppendInt(buf, e.Time, 10)
	buf = append(buf, `,"data":`...)
	if bytes.ContainsAny(e.Data, "\n\r") {
		var c bytes.Buffer
		_ = json.Compact(&c, e.Data)
		buf = append(buf, c.Bytes()...)
	} else {
		buf = append(buf, e.Data...)
	}
	if e.SourceEventSeqs != nil {
		buf = append(buf, `,"sourceEventSeqs":[`...)
		for i, s := range e.SourceEventSeqs {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendInt(buf, s, 10)
		}
		buf = append(buf, ']')
	}
	if e.SurfaceOp != nil {
		op, _ := e.SurfaceOp.MarshalJSON()
		buf = append(buf, `,"surfaceOp":`...)
		buf = append(buf, op...)
	}
	return append(buf, '}'), nil
}

// IsReleased reports whether e's payload was released from memory (see
// [Session.Release]); [Decode] and [Session.Payload] read it back.
func (e Event) IsReleased() bool { return e.Data == nil && e.back != nil }

// Clone deep-copies the event.
func (e Event) Clone() Event {
	e.Data = append(json.RawMessage(nil), e.Data...)
	if e.SourceEventSeqs != nil {
		e.SourceEventSeqs = append([]int64(nil), e.SourceEventSeqs...)
	}
	if e.SurfaceOp != nil {
		op := *e.SurfaceOp
		e.SurfaceOp = &op
	}
	return e
}

// Decode unmarshals an event's payload.
//
// A released event's payload is read back from the store first.
func Decode[T any](e Event) (T, error) {
	var v T
	if e.IsReleased() {
		full, err := e.back.Payload(context.Background(), e)
		if err != nil {
			return v, fmt.Errorf("session: decoding %s (seq %d): %w", e.Type, e.Seq, err)
		}
		e = full
	}
	if err := json.Unmarshal(e.Data, &v); err != nil {
		return v, fmt.Errorf("session: decoding %s (seq %d): %w", e.Type, e.Seq, err)
	}
	return v, nil
}

// Core event types.
const (
	TypeTurnStart        = "turn/start"
	TypeTurnEnd          = "turn/end"
	TypeStepStart        = "step/start"
	TypeStepEnd          = "step/end"
	TypeUserMessage      = "user/message"
	TypePromptBlocked    = "prompt/blocked"
	TypeContextMessage   = "context/message"
	TypeAssistantChunk   = "assistant/chunk"
	TypeAssistantMessage = "assistant/message"
	TypeToolCall         = "tool/call"
	TypeToolResult       = "tool/result"
	TypeSteeringMessage  = "steering/message"
	TypeApprovalRequest  = "approval/request"
	TypeApprovalAnswer   = "approval/answer"
	// TypeRewind is a conversation rewind (the checkpoint capability
	// owns it): a surface event that shadows the nodes from a turn on and
	// derives no message, so the next request carries only the history
	// before that turn while the log keeps everything.
	TypeRewind = "checkpoint/rewind"
)

// SurfaceEligible reports whether events of type t may carry a surface op.
func SurfaceEligible(t string) bool {
	switch t {
	case TypeUserMessage, TypeAssistantMessage, TypeToolResult, TypeContextMessage, TypeSteeringMessage, TypeRewind:
		return true
	}
	return false
}

// IsSurface reports whether e is on the surface (eligible and marked).
func IsSurface(e Event) bool { return e.SurfaceOp != nil && SurfaceEligible(e.Type) }

// Trigger kinds.
const (
	TriggerMessage      = "message"
	TriggerContinuation = "continuation"
	TriggerInjection    = "injection"
	// TriggerRetry starts a turn that adds no prompt: it answers the
	// history as it stands, after an earlier turn that took the prompt
	// ended without an answer (its worker died, its model call failed).
	// A background run retried on another worker uses it, so the model
	// sees the prompt once (agent.Retrier).
	TriggerRetry = "retry"
)

// Trigger says what started a turn.
type Trigger struct {
	Kind   string      `json:"kind"`
	Source *llm.Source `json:"source,omitempty"`
}

// TurnStart payload.
type TurnStart struct {
	Turn    int     `json:"turn"`
	Trigger Trigger `json:"trigger"`
}

// End reason kinds.
const (
	EndCompleted   = "completed"
	EndAborted     = "aborted"
	EndError       = "error"
	EndDisposed    = "disposed"
	EndMaxTokens   = "max-tokens"
	EndRejected    = "rejected"
	EndInterrupted = "interrupted"
	// EndMaxSteps: the turn made the most model calls it may (the agent's
	// MaxSteps: settings "maxSteps", or --max-turns, Claude Code's name for
	// the same limit).
	EndMaxSteps = "max-steps"
)

// endMaxStepsLegacy is what logs of earlier builds recorded for
// EndMaxSteps; reading one gives EndMaxSteps.
const endMaxStepsLegacy = "max-turns"

// EndReason says why a turn ended.
type EndReason struct {
	Kind    string
	Reason  string // aborted, rejected
	Step    int    // error
	Message string // error
	Code    string // error, optional
}

// MarshalJSON writes only the fields of the reason's kind.
func (r EndReason) MarshalJSON() ([]byte, error) {
	switch r.Kind {
	case EndError:
		return json.Marshal(struct {
			Kind    string `json:"kind"`
			Step    int    `json:"step"`
			Message string `json:"message"`
			Code    string `json:"code,omitempty"`
		}{r.Kind, r.Step, r.Message, r.Code})
	case EndAborted, EndRejected:
		return json.Marshal(struct {
			Kind   string `json:"kind"`
			Reason string `json:"reason,omitempty"`
		}{r.Kind, r.Reason})
	}
	return json.Marshal(struct {
		Kind string `json:"kind"`
	}{r.Kind})
}

// UnmarshalJSON reads any reason.
func (r *EndReason) UnmarshalJSON(b []byte) error {
	var w struct {
		Kind    string `json:"kind"`
		Reason  string `json:"reason"`
		Step    int    `json:"step"`
		Message string `json:"message"`
		Code    string `json:"code"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Kind == endMaxStepsLegacy {
		w.Kind = EndMaxSteps
	}
	*r = EndReason{Kind: w.Kind, Reason: w.Reason, Step: w.Step, Message: w.Message, Code: w.Code}
	return nil
}

// TurnEnd payload.
type TurnEnd struct {
	Turn   int       `json:"turn"`
	Reason EndReason `json:"reason"`
}

// StepBoundary is the payload of step/start and step/end.
type StepBoundary struct {
	Turn int `json:"turn"`
	Step int `json:"step"`
}

// Prompt is the payload of user/message and context/message.
type Prompt struct {
	Content []llm.Block `json:"content"`
	Source  llm.Source  `json:"source"`
}

// PromptBlocked payload.
type PromptBlocked struct {
	Content []llm.Block `json:"content"`
	Source  llm.Source  `json:"source"`
	Reason  string      `json:"reason"`
}

// AssistantChunk payload.
type AssistantChunk struct {
	Turn  int       `json:"turn"`
	Step  int       `json:"step"`
	Chunk llm.Chunk `json:"chunk"`
}

// AssistantMessage payload.
type AssistantMessage struct {
	Turn    int         `json:"turn"`
	Step    int         `json:"step"`
	Content []llm.Block `json:"content"`
	Usage   *llm.Usage  `json:"usage,omitempty"`
	Model   string      `json:"model,omitempty"`
	// Interrupted marks the text of a model call that was interrupted
	// before it finished: what it had said when it was cut off.
	Interrupted bool `json:"interrupted,omitempty"`
}

// ToolCall payload: the audit record of a call, appended before it runs.
// Arguments are the effective arguments; when a pre-execute decision
// rewrote them, OriginalArguments keeps what the model produced.
type ToolCall struct {
	Turn              int        `json:"turn"`
	Step              int        `json:"step"`
	CallID            llm.CallID `json:"callId"`
	Name              string     `json:"name"`
	Arguments         string     `json:"arguments"`
	OriginalArguments *string    `json:"originalArguments,omitempty"`
	RewrittenBy       string     `json:"rewrittenBy,omitempty"`
}

// ErrorInfo names a harness failure on a tool result.
type ErrorInfo struct {
	Name string `json:"name"`
	Code string `json:"code"`
}

// ToolResult payload.
type ToolResult struct {
	Turn    int             `json:"turn"`
	Step    int             `json:"step"`
	CallID  llm.CallID      `json:"callId"`
	Content []llm.Block     `json:"content"`
	IsError bool            `json:"isError"`
	Error   *ErrorInfo      `json:"error,omitempty"`
	Meta    json.RawMessage `json:"meta,omitempty"`
}

// Steering payload.
type Steering struct {
	Turn    int         `json:"turn"`
	Content []llm.Block `json:"content"`
	Source  llm.Source  `json:"source"`
}

// ApprovalRequest payload: an ask decision put to the approver.
type ApprovalRequest struct {
	Turn   int        `json:"turn"`
	Step   int        `json:"step"`
	CallID llm.CallID `json:"callId"`
	Name   string     `json:"name"`
	Reason string     `json:"reason,omitempty"`
	// Suggestions are the rules "allow for this session" would accept.
	Suggestions []string `json:"suggestions,omitempty"`
}

// ApprovalAnswer payload.
type ApprovalAnswer struct {
	Turn   int        `json:"turn"`
	Step   int        `json:"step"`
	CallID llm.CallID `json:"callId"`
	Allow  bool       `json:"allow"`
	Scope  string     `json:"scope,omitempty"` // "once" or "session"
	// Rules are the permission rules the answer accepted for the rest of
	// the session (allow rules on an allow, deny rules on a denial).
	Rules  []string `json:"rules,omitempty"`
	Reason string   `json:"reason,omitempty"`
	By     string   `json:"by,omitempty"` // who answered: "user", "policy", "none"
}

// TodoItem is one entry of a todo list.
type TodoItem struct {
	Content    string `json:"content"`
	Status     string `json:"status"`
	ActiveForm string `json:"activeForm,omitempty"`
}

// AppendJSON encodes the hot-path chunk payload without reflection.
func (c AssistantChunk) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"turn":`...)
	dst = strconv.AppendInt(dst, int64(c.Turn), 10)
	dst = append(dst, `,"step":`...)
	dst = strconv.AppendInt(dst, int64(c.Step), 10)
	dst = append(dst, `,"chunk":`...)
	dst = c.Chunk.AppendJSON(dst)
	return append(dst, '}')
}
