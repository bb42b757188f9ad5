package agent

import (
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
)

// StatusChange notifies a status transition.
type StatusChange struct {
	Agent  Agent
	Status Status
}

// Queued notifies that input was queued by Send or Steer.
type Queued struct {
	Agent    Agent
	Content  []llm.Block
	Source   llm.Source
	Steering bool
}

// SessionStart notifies that an agent's session is starting.
type SessionStart struct {
	Agent  Agent
	Source SessionStartSource
}

// StepInfo identifies a step for the lifecycle points.
type StepInfo struct {
	Agent Agent
	Turn  int
	Step  int
}

// PreStep runs before each step opens (compaction runs here).
type PreStep struct {
	StepInfo
	SystemPrompt string
}

// Overflow is a step's model call that the provider refused as too long
// for the model's context window (llm.CodeContextTooLong) before any of
// its answer arrived. A listener that shortened the history (compaction)
// answers true, and the step asks the model once more with the history as
// it is now; false (the default) ends the turn with the refusal.
type Overflow struct {
	StepInfo
	SystemPrompt string
	Err          error
}

// PromptInput is one queued prompt offered to prompt-submit listeners.
type PromptInput struct {
	Agent   Agent
	Turn    int
	Content []llm.Block
	Source  llm.Source
}

// RequestInput is a model request about to be sent. Listeners may change
// Request in place or return another one.
type RequestInput struct {
	StepInfo
	Request *llm.Request
}

// StepResult is the assembled assistant message before it is recorded.
type StepResult struct {
	StepInfo
	Message llm.Message
}

// ContinuationInput offers the default continuation decision.
type ContinuationInput struct {
	Agent   Agent
	Turn    int
	Default ContinuationDecision
}

// SteeringNote notifies that steering joined a turn.
type SteeringNote struct {
	Agent   Agent
	Turn    int
	Content []llm.Block
	Source  llm.Source
}

// ErrorNote reports a turn failure, a pre-turn failure (step 0) or a flush
// failure. It never becomes a session event.
type ErrorNote struct {
	Agent Agent
	Turn  int
	Step  int
	Err   error
}

// Hub holds the lifecycle interception points shared by all agents of a
// registry. The dispatch order inside one turn is documented in
// docs/architecture.md.
type Hub struct {
	Created      *kernel.Signal[Agent]
	Disposed     *kernel.Signal[Agent]
	Status       *kernel.Signal[StatusChange]
	Queued       *kernel.Signal[Queued]
	SessionStart *kernel.Signal[SessionStart]
	PreStep      *kernel.Serial[PreStep]
	Overflow     *kernel.Chain[Overflow, bool]
	PromptSubmit *kernel.Chain[PromptInput, PromptDecision]
	Request      *kernel.Chain[RequestInput, *llm.Request]
	StepResult   *kernel.Chain[StepResult, llm.Message]
	Continuation *kernel.Chain[ContinuationInput, ContinuationDecision]
	Steering     *kernel.Signal[SteeringNote]
	Error        *kernel.Signal[ErrorNote]
}

// NewHub returns a hub with no listeners.
func NewHub() *Hub {
	return &Hub{
		Created:      kernel.NewSignal[Agent]("agent/created"),
		Disposed:     kernel.NewSignal[Agent]("agent/disposed"),
		Status:       kernel.NewSignal[StatusChange]("agent/status"),
		Queued:       kernel.NewSignal[Queued]("agent/queued"),
		SessionStart: kernel.NewSignal[SessionStart]("agent/session-start"),
		PreStep:      kernel.NewSerial[PreStep]("agent/pre-step"),
		Overflow:     kernel.NewChain[Overflow, bool]("agent/context-overflow"),
		PromptSubmit: kernel.NewChain[PromptInput, PromptDecision]("agent/prompt-submit"),
		Request:      kernel.NewChain[RequestInput, *llm.Request]("agent/request"),
		StepResult:   kernel.NewChain[StepResult, llm.Message]("agent/step-result"),
		Continuation: kernel.NewChain[ContinuationInput, ContinuationDecision]("agent/turn-continuation"),
		Steering:     kernel.NewSignal[SteeringNote]("agent/steering"),
		Error:        kernel.NewSignal[ErrorNote]("agent/error"),
	}
}
