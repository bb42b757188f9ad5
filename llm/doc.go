// Package llm is dsh's model vocabulary: content blocks, messages, sources,
// finish reasons, token usage, tool schemas, the streaming chunk protocol and
// the one block assembler every consumer folds chunks with. It also holds the
// adapter seam ([Adapter]), the adapter registry ([Service]) and the harness
// error type shared by every package ([Error]).
//
// Blocks are one flat struct rather than an interface per variant: a slice of
// them costs one allocation, JSON round-trips need no type registry, and an
// unknown variant (a plugin's own block type) keeps its raw JSON so it
// survives a load/save cycle unchanged.
package llm
