package llm

// DecodeBlockFast lets the external tests see whether an input took the
// fast path.
var DecodeBlockFast = decodeBlockFast
