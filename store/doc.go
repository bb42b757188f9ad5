// Package store makes sessions durable. It is the persistence seam between
// the live session log (package session) and a storage medium.
//
// # Why a seam and a coordinator
//
// The session log is the single source of truth of an agent's conversation;
// persistence only mirrors it. Mirroring correctly is subtle (pitfalls 17–20
// of the core spec), and none of the subtlety depends on the medium, so it
// lives once, in the [Coordinator]:
//
//   - write-behind: each appended event is deep-copied into a per-session
//     buffer when it is announced, and written at the next flush (the agent
//     loop flushes before the first request of a turn, after every step and
//     at every turn end), one durable batch per flush;
//   - per-session serialization, with no poisoning: a failed operation never
//     blocks the next one, and a failed write keeps the buffer, so the next
//     flush retries it and reports the failure (no silent loss);
//   - adoption of live sessions: a session entering the store is bound to
//     its stored state in one of four ways (an ownerless state created or
//     loaded through the API is claimed; a stored log the live seed extends
//     is adopted, cutting only a torn tail and never closing a live turn; a
//     stored log the seed does not extend is an id collision; nothing stored
//     means a new log, whose seed, e.g. a fork's inherited prefix, is written
//     exactly once);
//   - crash repair on load: the real events of an interrupted turn are kept
//     and closed with [session.InterruptedClosers]; only a torn, never
//     completed write is cut.
//
// A [Backend] is then a handful of storage hooks (lock, load, append a batch,
// commit a repair, list, tail). Two ship with dsh: store/jsonl (one file per
// session, the default) and store/sqlite. Both pass the same contract suite,
// store/storetest.
//
// # Resume and fork
//
// Resume: [Coordinator.Load] returns the header and the repaired log; the
// agent registry creates a live session with that header, seeded with those
// events, and the coordinator claims the loaded state without rewriting
// anything. Fork: a live session whose header has ParentSession and
// SeedLength and whose seed is a completed prefix
// ([session.CompletedPrefix]) of the parent; its seed is written once, when
// it is adopted.
//
// # Processes
//
// A backend holds a writer lock per session (flock on a lock file) from the
// moment the coordinator tracks the session until [Coordinator.Release] or
// the coordinator closes, so two processes never append to one log; the
// second gets an [*InUseError] ("session X is in use by another dsh process
// (pid N)"). Readers ([Coordinator.Read], [Coordinator.Tail],
// [Coordinator.List]) take no lock.
//
// # Listing
//
// Every write also updates the session's listing entry ([Info]: header,
// title from the first user prompt, last activity, turn and event counts),
// so listing never parses logs.
package store
