// Package policy is dsh's read-before-write rule for files: an agent may
// change an existing file only if it has seen the file's current content.
//
// Why: a model that overwrites or edits a file it never read, or read before
// someone else (the user, another agent, a formatter) changed it, destroys
// work it did not know about. The [Tracker] remembers, per owner (an agent
// id), the [fs.Version] of each file the owner has read or written, and turns
// that into an [fs.Precondition] the provider checks inside its per-file lock.
// Because the check happens there, with the file's current version, there is
// no window between "is it fresh?" and "write it".
//
// The rules:
//
//   - Creating a file needs nothing. A file that was deleted since it was read
//     may be written again: there is nothing left to clobber.
//   - Changing an existing file needs a record of it; any read of any window
//     counts (the model saw the file's state; it does not need every line to
//     make a correct local edit, and the edit's exact-match rule guards the
//     rest).
//   - The record must match the file's current version, else the change is
//     refused as stale and the owner must read the file again.
//   - A successful write or edit records its own result, so write→edit and
//     edit→edit chains need no re-read.
//   - Owners do not share records: a subagent must read what its parent read.
//     The empty owner (a call made outside any agent) records nothing, so it
//     can create files but never change existing ones.
//
// The tracker holds state in memory only. Records die with the owner
// ([Tracker.Forget], or [Tracker.ForgetOnClose] with the agent's scope) and
// with the process, so a resumed session reads files again before changing
// them, which is the safe direction.
package policy
