// Package api is the wire vocabulary of dsh serve's HTTP API: the request
// and response bodies the server writes and the Go client reads, and the
// OpenAPI 3.1 document that describes them ([OpenAPI], served at
// /openapi.json). Session events travel as they are in the log
// ([session.Event], the native schema): the API adds no event types of its
// own, so a stream, a page of history and `dsh sessions export` agree.
// Beside the log's events, a live stream carries only [Progress], a
// running command's output, which the log never records.
package api

import (
	_ "embed"
	"encoding/json"

	"github.com/dshq/dsh/session"
)

// OpenAPI is the API's OpenAPI 3.1 document. Every route the server
// registers is in it, and every response the contract tests see validates
// against it.
//
//go:embed openapi.json
var OpenAPI []byte

// Version is the API's version, the /v1 of its paths.
const Version = "v1"

// Error is every error response: a message that says what to do, and a
// stable code.
type Error struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// Error codes.
const (
	CodeUnauthorized   = "unauthorized"
	CodeForbidden      = "forbidden"
	CodeNotFound       = "not_found"
	CodeBadRequest     = "bad_request"
	CodeTooLarge       = "too_large"
	CodeRateLimited    = "rate_limited"
	CodeConflict       = "conflict"
	CodeUnavailable    = "unavailable"
	CodeInternal       = "internal"
	CodeNotImplemented = "not_implemented"
)

// Health is GET /healthz.
type Health struct {
	Status  string `json:"status"`
	Version string `json:"version"`
	Worker  string `json:"worker"`
}

// Whoami is GET /v1/whoami: the token the request carried.
type Whoami struct {
	Token      string   `json:"token"`
	Access     string   `json:"access"`
	Workspaces []string `json:"workspaces"`
}

// Access levels of a token.
const (
	AccessRead = "read"
	AccessFull = "full"
)

// Workspaces is GET /v1/workspaces: the directories sessions may be
// created in, for this token (the server's roots, narrowed by the token's
// workspaces).
type Workspaces struct {
	Roots []string `json:"roots"`
}

// AgentDefinition is an inline agent a session runs as: a system prompt
// appended to dsh's, the tools it may use (nil: every tool) and a model.
type AgentDefinition struct {
	Prompt string   `json:"prompt,omitempty"`
	Tools  []string `json:"tools,omitempty"`
	Model  string   `json:"model,omitempty"`
}

// CreateSession is POST /v1/sessions.
type CreateSession struct {
	// Workspace is the directory the agent works in: absolute, or relative
	// to the first root. It must lie under one of the server's roots and
	// the token's workspaces, after symbolic links are resolved.
	Workspace string `json:"workspace"`
	// Model is a model reference ("provider/model" or an alias); empty:
	// the workspace's default.
	Model string `json:"model,omitempty"`
	// PermissionMode is the session's permission mode (default,
	// acceptEdits, plan, bypassPermissions); empty: the workspace's.
	PermissionMode string `json:"permissionMode,omitempty"`
	// Sandbox is the sandbox mode of its bash commands (read-only,
	// workspace-write, danger-full-access); empty: the workspace's.
	Sandbox string `json:"sandbox,omitempty"`
	// Agent names a custom agent of the workspace (.dsh/agents/*.md,
	// $DSH_HOME/agents/*.md); AgentDefinition gives one inline instead.
	Agent           string           `json:"agent,omitempty"`
	AgentDefinition *AgentDefinition `json:"agentDefinition,omitempty"`
	// Prompt, when set, is sent as the first message.
	Prompt string `json:"prompt,omitempty"`
}

// Session is a session as the API shows it.
type Session struct {
	ID        session.ID `json:"id"`
	Workspace string     `json:"workspace"`
	CreatedAt int64      `json:"createdAt"`
	Parent    session.ID `json:"parent,omitempty"`
	Title     string     `json:"title,omitempty"`
	// Status is idle, running, or stored (not in any worker's memory;
	// loaded again when a message arrives).
	Status         string `json:"status"`
	LastActivity   int64  `json:"lastActivity"`
	Turns          int    `json:"turns"`
	Events         int64  `json:"events"`
	Model          string `json:"model,omitempty"`
	PermissionMode string `json:"permissionMode,omitempty"`
	Sandbox        string `json:"sandbox,omitempty"`
	Agent          string `json:"agent,omitempty"`
	// PendingApprovals counts the questions waiting for an answer.
	PendingApprovals int `json:"pendingApprovals"`
	// Holder names the worker running it, when one is.
	Holder string `json:"holder,omitempty"`
}

// Session statuses.
const (
	StatusIdle    = "idle"
	StatusRunning = "running"
	StatusStored  = "stored"
)

// SessionList is GET /v1/sessions.
type SessionList struct {
	Sessions []Session `json:"sessions"`
}

// Message is POST /v1/sessions/{id}/messages and /steer.
type Message struct {
	Text string `json:"text"`
}

// Accepted answers a message, steer or cancel: what the session's log
// held when the request was taken (a stream from Seq on shows its effect).
type Accepted struct {
	Session session.ID `json:"session"`
	Seq     int64      `json:"seq"`
}

// Cancel is POST /v1/sessions/{id}/cancel.
type Cancel struct {
	Reason string `json:"reason,omitempty"`
}

// Fork is POST /v1/sessions/{id}/fork: a new session seeded with the
// completed turns of this one (all of them, or the first Turns).
type Fork struct {
	Turns int `json:"turns,omitempty"`
}

// Rewind is POST /v1/sessions/{id}/rewind: take the session back to
// before turn To ("3", or "3.2" for step 2 of turn 3). Scope is "code",
// "chat" or "both" (the default). Files someone else changed since the
// agent's checkpoint refuse the rewind (409 with the result listing them)
// unless Force (overwrite them) or SkipConflicts (restore the rest).
type Rewind struct {
	To            string `json:"to"`
	Scope         string `json:"scope,omitempty"`
	DryRun        bool   `json:"dryRun,omitempty"`
	Force         bool   `json:"force,omitempty"`
	SkipConflicts bool   `json:"skipConflicts,omitempty"`
}

// Rewind scopes.
const (
	RewindCode = "code"
	RewindChat = "chat"
	RewindBoth = "both"
)

// RewindResult answers a rewind: what it did (Done) or would do (a dry
// run; Diff is then the unified diff), or why it refused (Refused:
// "conflicts", with Conflicts). Text is the same report for people.
type RewindResult struct {
	Session   session.ID       `json:"session"`
	To        string           `json:"to"`
	Scope     string           `json:"scope"`
	DryRun    bool             `json:"dryRun"`
	Done      bool             `json:"done"`
	Refused   string           `json:"refused,omitempty"`
	Prompt    string           `json:"prompt,omitempty"`
	Files     []RewindFile     `json:"files"`
	Skipped   []RewindFile     `json:"skipped"`
	Conflicts []RewindConflict `json:"conflicts"`
	Diff      string           `json:"diff,omitempty"`
	// Hidden counts the conversation entries the rewind hid from the
	// model (the log keeps them).
	Hidden      int      `json:"hidden"`
	Interrupted []string `json:"interrupted,omitempty"`
	Text        string   `json:"text"`
	// Seq is the log's length before the rewind: a stream from it shows
	// the rewind's events.
	Seq int64 `json:"seq"`
}

// RewindFile is one file of a rewind: the action (restore, revert,
// remove, mkdir, rmdir, chmod), or for a skipped one what changed (Op)
// and why it is not restored; State is "" (done, or to do), "left" or
// "failed" (Error).
type RewindFile struct {
	Path   string `json:"path"`
	Action string `json:"action,omitempty"`
	Op     string `json:"op,omitempty"`
	Why    string `json:"why,omitempty"`
	State  string `json:"state,omitempty"`
	Error  string `json:"error,omitempty"`
}

// RewindConflict is a file someone other than the agent changed since its
// checkpoint, with what they changed (text files).
type RewindConflict struct {
	Path string `json:"path"`
	Op   string `json:"op"`
	Diff string `json:"diff,omitempty"`
}

// RewindPoints is GET /v1/sessions/{id}/rewind: the user turns the
// session can be rewound to, oldest first.
type RewindPoints struct {
	Points []RewindPoint `json:"points"`
}

// RewindPoint is one turn: its prompt, whether its files can be rewound
// (Code: it has a checkpoint), the later steps with checkpoints of their
// own, and what it changed.
type RewindPoint struct {
	Turn    int            `json:"turn"`
	Prompt  string         `json:"prompt"`
	Code    bool           `json:"code"`
	Steps   []int          `json:"steps,omitempty"`
	Summary string         `json:"summary"`
	Changes []RewindChange `json:"changes"`
}

// RewindChange is a path a turn changed and how.
type RewindChange struct {
	Path string `json:"path"`
	Op   string `json:"op"`
}

// SetMode is POST /v1/sessions/{id}/mode.
type SetMode struct {
	PermissionMode string `json:"permissionMode"`
}

// EventPage is GET /v1/sessions/{id}/events: stored history, a page at a
// time. Next is the seq to ask for next; More says whether there is more.
type EventPage struct {
	Events []session.Event `json:"events"`
	Next   int64           `json:"next"`
	More   bool            `json:"more"`
}

// Progress is output a running tool call printed since the previous
// Progress of that call: what the streams carry beside the log while a
// command runs (the log records only the call's result). On the SSE stream
// it is the data of an event named "progress", with no id; on the
// WebSocket it is the "progress" member of a [ProgressMessage]. It is not
// part of the log, so a reconnect does not replay it; the output has the
// server's secrets scrubbed.
type Progress struct {
	Call   string `json:"call"`
	Output string `json:"output"`
}

// ProgressMessage is a WebSocket message carrying [Progress]; every other
// message on that socket is a log event.
type ProgressMessage struct {
	Progress Progress `json:"progress"`
}

// Approval is a pending question: an ask decision the agent waits on.
type Approval struct {
	Session session.ID `json:"session"`
	// ID is the tool call's id; answer it at
	// /v1/sessions/{session}/approvals/{id}.
	ID          string          `json:"id"`
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments"`
	Reason      string          `json:"reason,omitempty"`
	Suggestions []string        `json:"suggestions,omitempty"`
	// Asked is when the question was put (epoch ms); Expires when the
	// timeout policy answers it.
	Asked   int64 `json:"asked"`
	Expires int64 `json:"expires"`
}

// ApprovalList is GET /v1/approvals and /v1/sessions/{id}/approvals.
type ApprovalList struct {
	Approvals []Approval `json:"approvals"`
}

// Decisions an answer can make.
const (
	// DecisionAllow allows this call once.
	DecisionAllow = "allow"
	// DecisionAllowSession allows it and, for the rest of the session,
	// calls its rules cover (the request's suggestions unless Rules names
	// others).
	DecisionAllowSession = "allow_session"
	// DecisionDeny refuses it; the reason is what the model reads.
	DecisionDeny = "deny"
)

// Answer is POST /v1/sessions/{id}/approvals/{call}.
type Answer struct {
	Decision string   `json:"decision"`
	Rules    []string `json:"rules,omitempty"`
	Reason   string   `json:"reason,omitempty"`
}

// CreateRun is POST /v1/runs: a prompt run in the background, headless, as
// a job of the queue.
type CreateRun struct {
	Workspace      string `json:"workspace"`
	Prompt         string `json:"prompt"`
	Model          string `json:"model,omitempty"`
	PermissionMode string `json:"permissionMode,omitempty"`
	// Callback, when set, receives a POST of the finished Run.
	Callback string `json:"callback,omitempty"`
	// MaxAttempts bounds the retries (default 3).
	MaxAttempts int `json:"maxAttempts,omitempty"`
}

// Run states.
const (
	// RunQueued: waiting for a worker (first attempt, or a retry after a
	// failed one: Attempt and Errors say which).
	RunQueued    = "queued"
	RunRunning   = "running"
	RunSucceeded = "succeeded"
	// RunFailed: every attempt failed (Errors has each one's error).
	RunFailed    = "failed"
	RunCancelled = "cancelled"
)

// Run is a background run.
type Run struct {
	ID             int64  `json:"id"`
	State          string `json:"state"`
	Workspace      string `json:"workspace"`
	Prompt         string `json:"prompt"`
	Model          string `json:"model,omitempty"`
	PermissionMode string `json:"permissionMode,omitempty"`
	// Session is the run's own session (its id is chosen when it is
	// queued; it exists once the first attempt starts): stream it like
	// any session.
	Session session.ID `json:"session,omitempty"`
	// Attempt is the attempts started so far (0 while first queued).
	Attempt     int `json:"attempt"`
	MaxAttempts int `json:"maxAttempts"`
	// Worker is the worker of the latest attempt.
	Worker string `json:"worker,omitempty"`
	// Result is the final answer of a succeeded run.
	Result string `json:"result,omitempty"`
	// Errors are the failed attempts' errors, oldest first.
	Errors []string `json:"errors,omitempty"`
	// Callback tells whether a callback URL is set (the URL itself is
	// not shown: it may carry a secret).
	Callback bool `json:"callback,omitempty"`
	// Times in Unix milliseconds.
	CreatedAt  int64 `json:"createdAt"`
	StartedAt  int64 `json:"startedAt,omitempty"`
	RetryAt    int64 `json:"retryAt,omitempty"`
	FinishedAt int64 `json:"finishedAt,omitempty"`
}

// RunList is GET /v1/runs.
type RunList struct {
	Runs []Run `json:"runs"`
}
