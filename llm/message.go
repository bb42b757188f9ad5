package llm

import "encoding/json"

// Role of a message.
type Role string

// Roles. Core produces only user and assistant messages; the system prompt
// travels in [Request.System].
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one entry of the model's history.
type Message struct {
	Role    Role    `json:"role"`
	Content []Block `json:"content"`
}

// Clone deep-copies the message.
func (m Message) Clone() Message { return Message{Role: m.Role, Content: CloneBlocks(m.Content)} }

// Source kinds.
const (
	SourceUser   = "user"
	SourcePlugin = "plugin"
	SourceAgent  = "agent"
)

// Source says who produced a message: the user, a plugin (by name) or another
// agent (by id). The zero Source means the user.
type Source struct {
	Kind    string `json:"kind"`
	Plugin  string `json:"plugin,omitempty"`
	AgentID string `json:"agentId,omitempty"`
	// Command is the slash command line a user prompt was expanded from
	// ("/review src/"): its command's allowed tools and model apply to the
	// turn that takes it, and front ends can show the line instead of the
	// expansion.
	Command string `json:"command,omitempty"`
	// Ref is an id the sender gives its prompt, recorded with it (the
	// turn's trigger and the user/message), so the sender can find its
	// prompt in the log later even when a prompt-submit listener rewrote
	// the text: dsh serve marks a background run's prompt "run:<id>" and
	// a retried attempt finds it there.
	Ref string `json:"ref,omitempty"`
}

// UserSource is the default source.
var UserSource = Source{Kind: SourceUser}

// PluginSource names a plugin.
func PluginSource(name string) Source { return Source{Kind: SourcePlugin, Plugin: name} }

// OrUser returns s, or the user source when s is the zero value.
func (s Source) OrUser() Source {
	if s.Kind == "" {
		return UserSource
	}
	return s
}

// Finish kinds.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool-calls"
	FinishMaxTokens = "max-tokens"
	FinishAborted   = "aborted"
	FinishError     = "error"
	FinishRefusal   = "refusal"
)

// FinishReason says why a model call ended. Unknown kinds count as success.
type FinishReason struct {
	Kind    string `json:"kind"`
	Message string `json:"message,omitempty"`
	Code    string `json:"code,omitempty"`
}

// Usage is token accounting for one model call. Counts are disjoint: Input
// excludes cached input, so billed input is Input + CacheRead + CacheWrite.
type Usage struct {
	InputTokens      int `json:"inputTokens"`
	OutputTokens     int `json:"outputTokens"`
	CacheReadTokens  int `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int `json:"cacheWriteTokens,omitempty"`
	ReasoningTokens  int `json:"reasoningTokens,omitempty"`
}

// PromptTokens is every input token the provider counted, cached or not.
func (u Usage) PromptTokens() int { return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens }

// Add accumulates o into u.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.ReasoningTokens += o.ReasoningTokens
}

// ToolSchema is the model-facing description of a tool.
type ToolSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict,omitempty"`
}

// Clone deep-copies the schema.
func (t ToolSchema) Clone() ToolSchema {
	t.Parameters = append(json.RawMessage(nil), t.Parameters...)
	if t.Strict != nil {
		v := *t.Strict
		t.Strict = &v
	}
	return t
}
