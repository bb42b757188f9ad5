package llm

// CallID identifies one tool call, as the model named it.
type CallID string
