// Package tool is dsh's tool seam and pipeline: the [Tool] interface, the
// [Registry] whose schemas flow into prompt assembly, argument validation
// against JSON Schema, and the execution pipeline with its interception
// points (restrict, guard, pre-execute, approval, execute wrapper,
// post-execute, result observation).
package tool

import (
	"context"
	"encoding/json"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
)

// Kind classifies what a tool does. Front-ends pick icons and card shapes
// from it; permission modes decide from it what runs without asking.
type Kind string

// Tool kinds (the ACP tool-call kinds).
const (
	KindRead    Kind = "read"
	KindEdit    Kind = "edit"
	KindDelete  Kind = "delete"
	KindMove    Kind = "move"
	KindSearch  Kind = "search"
	KindExecute Kind = "execute"
	KindFetch   Kind = "fetch"
	KindThink   Kind = "think"
	KindOther   Kind = "other"
)

// Info is what the registry and the model know of a tool.
type Info struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments object. Arguments are
	// validated against it before the tool runs.
	Parameters json.RawMessage
	// Strict asks providers that support it for schema-exact arguments.
	Strict *bool
	Kind   Kind
	// ReadOnly tools change nothing outside the session (read, search).
	ReadOnly bool
	// Concurrent tools may run in parallel with other concurrent tools of the
	// same step; results are still recorded in call order.
	Concurrent bool
}

// Schema returns the model-facing schema.
func (i Info) Schema() llm.ToolSchema {
	return llm.ToolSchema{Name: i.Name, Description: i.Description, Parameters: i.Parameters, Strict: i.Strict}
}

// Tool is one model-callable capability.
type Tool interface {
	Info() Info
	// Run executes a call whose arguments already passed schema validation.
	// A returned error becomes an error result the model reads ("Error: …");
	// a panic is recovered the same way.
	Run(ctx context.Context, call Call) (Result, error)
}

// Host is the agent a call runs for: tools append their own session events
// (todo/write), inject context, and tie resources (background processes) to
// the agent's lifetime through its scope.
type Host interface {
	AgentID() string
	SessionID() string
	// Cwd is the session's working directory (absolute).
	Cwd() string
	// Append records a tool-owned session event inside the open turn.
	// Types a capability owns (turn/*, tool/*, permission/*, …) are
	// refused with session.ErrOwned and nothing is written.
	Append(ctx context.Context, typ string, data any) error
	// Inject adds model-facing context; while a turn is open it lands at
	// once, except while a step's tool calls await their results: then it
	// follows those results (nothing may sit between a call and its result).
	Inject(ctx context.Context, content []llm.Block, src llm.Source) error
	// Scope closes when the agent is disposed.
	Scope() *kernel.Scope
}

// Call is one invocation. It is a value: the pipeline hands copies to
// listeners, and the only way to change the arguments that run is a
// pre-execute decision's rewrite (see Decision.Args), so history, audit log
// and UI always agree with what ran.
type Call struct {
	ID   llm.CallID
	Name string
	// Args are the effective arguments: a JSON object (the model's "" becomes
	// {}). Nil when the model's text was not valid JSON (see Raw).
	Args json.RawMessage
	// Raw is the argument text exactly as the model produced it.
	Raw string
	// Host is the calling agent; nil for calls made outside an agent.
	Host Host
}

// Result is a tool's outcome.
type Result struct {
	Content []llm.Block
	// Meta is tool-private presentation data (diffs, exit codes); it is
	// recorded in the log but never shown to the model.
	Meta    json.RawMessage
	IsError bool
}

// TextResult is a convenience for a single text block.
func TextResult(s string) Result { return Result{Content: []llm.Block{llm.Text(s)}} }

// ErrorResult is a convenience for a failed call the model should read.
func ErrorResult(s string) Result { return Result{Content: []llm.Block{llm.Text(s)}, IsError: true} }
