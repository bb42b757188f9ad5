// Package session is dsh's event-sourced session: an append-only log of typed
// events that is the single source of truth for one agent's conversation.
// The model's history is derived from the log ([Session.Messages]), never
// stored beside it, so a resumed, forked or replayed session shows the model
// exactly what the live one did.
//
// Only five event types produce history (the "surface"): user, assistant,
// tool-result, context and steering messages. Each carries a surface op:
// append, or replace a positional range of the surface (compaction), with
// provenance in SourceEventSeqs. Everything else (turn and step boundaries,
// stream chunks, tool calls, approvals, plugin events) is audit and control
// data that the derivation skips.
//
// Derivation is incremental: the session keeps the surface and the derived
// messages and folds only the events appended since the last read, so the
// cost of building a step's request does not grow with the log.
package session
