// Package fs is dsh's filesystem seam: the vocabulary (targets, versions,
// read windows, write and edit outcomes, coded errors) and the [Provider]
// interface the model-facing read/write/edit tools and trusted callers (skill
// discovery, hooks) use to reach files.
//
// Why a seam and not just package os in the tools: where files live is a
// deployment decision. The local implementation (fs/local) works on this
// machine; a sandboxed or remote provider can replace it without touching the
// tools or the read-before-edit policy (fs/policy), which only know this
// package. The contract keeps the hard guarantees in one place:
//
//   - Identity. [Provider.Resolve] turns what the model typed (relative to the
//     session's cwd, `..` collapsed lexically) into a [Target] whose Key is the
//     symlink-resolved path, so two spellings of one file share one Key and one
//     policy record, while messages keep showing the path the model used.
//   - Freshness. Every file has an opaque [Version]. Write and Edit take a
//     [Precondition] that the provider evaluates against the current version
//     inside its per-file critical section, so "the file is still what the
//     agent read" is checked and acted on atomically (no stat-then-write
//     race). The policy lives in the precondition, not in the provider: a bare
//     provider with a nil precondition is unconstrained.
//   - Bounded reads. [Provider.ReadLines] returns a window of lines by
//     streaming, so a window near the start of a multi-gigabyte file costs the
//     window, not the file. Line length and output size are capped during the
//     scan, so a file without newlines cannot balloon memory either.
//   - Faithful edits. An edit changes the matched text and nothing else: the
//     file's line endings (CRLF stays CRLF), byte-order mark and permission
//     bits, owner and group survive, and the replacement is written
//     atomically (a reader sees the old file or the new one, never half of
//     each) unless atomicity would cost the user's setup (hard links,
//     ownership the process cannot set; see fs/local). A file the process
//     may not write is refused (FS_PERMISSION_DENIED), never replaced.
//
// Errors the model should read are [*Error] values with a stable Code
// (FS_NOT_FOUND, FS_STALE_VERSION, …). They convert to [llm.Error] (name
// "FsError") through errors.As, so tool results record error.name and
// error.code without the tool layer knowing this package.
package fs
