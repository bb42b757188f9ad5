// Package bashtool holds the model-facing shell tools — bash, bash_output
// and bash_kill — built on the [bash.Executor] seam.
//
// The tools own everything the model sees and nothing about processes:
// argument checks, resolving the working directory against the session's
// cwd, the exact result text (exit-code, timeout and truncation markers),
// presentation for front-ends, and tying background tasks to the agent that
// started them. A task's owner is the calling agent's id; the executor
// enforces it, so an agent cannot read or kill another agent's task, and
// the agent's scope kills its tasks when the agent is disposed. When a
// background task ends, a short notice is injected into its agent's context
// so the model learns about it on its next request without polling.
//
// Requests are built from named fields only: a model cannot set a command's
// environment or standard input, which only trusted callers (hooks) may.
package bashtool
