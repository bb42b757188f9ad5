// Package fstool holds the model-facing file tools: read, write and edit.
//
// The tools are thin: paths resolve against the calling agent's cwd
// (call.Host.Cwd()), the [fs.Provider] does the I/O and the
// [policy.Tracker] decides whether an existing file may be changed, keyed by
// the calling agent's id. What the tools add is the model's side of the
// contract:
//
//   - read returns a line-numbered window (cat -n style: the number, a tab,
//     the line) with a footer that always says how to continue, so a model
//     pages through a large file instead of asking for all of it; the window
//     authorizes later writes and edits of the file (see fs/policy).
//   - write and edit return the applied hunks: as [tool.FileDiff] values and
//     a unified diff in Result.Meta, so front-ends render the change from the
//     result alone, also when replaying a session log; the model reads a
//     one-line confirmation.
//   - Errors are precise and actionable: how many times old_string matched,
//     that the file must be read (again), that line-number prefixes were
//     copied into old_string. Argument mistakes are plain errors; filesystem
//     failures are [fs.Error] values, so results record error.code.
//
// Presenters ([tool.CallPresenter], [tool.ResultPresenter]) are pure
// functions of the arguments and the result's Meta, as replay requires.
package fstool
