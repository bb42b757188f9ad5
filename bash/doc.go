// Package bash is dsh's shell-execution seam: the vocabulary (task ids, owner
// tokens, requests, results) and the [Executor] interface that runs shell
// commands for the model-facing tools and for trusted callers such as hooks.
//
// Why a seam and not just os/exec in the tool: where and how a command runs
// is a deployment decision. The local implementation (bash/local) spawns
// processes on this machine; a sandboxed or remote executor can replace it
// without touching the tools, the hook bridges or the permission layer, which
// only know this package. Keeping the contract here also keeps the hard
// guarantees in one place for every implementation to honour:
//
//   - A foreground [Executor.Run] fails only for infrastructure problems
//     (unusable working directory, missing shell, context already done). A
//     non-zero exit, a timeout kill or a cancellation kill is a [RunResult],
//     because the model needs to read it, not an error.
//   - Output is bounded in memory: each stream keeps its tail, and the full
//     stream is spilled to a private file whose path is reported, so a command
//     printing gigabytes neither exhausts memory nor loses data.
//   - Every process a command starts in its process group is killed with it,
//     and nothing outlives the executor's owner (no orphans, no zombies).
//   - Background tasks belong to an [Owner] (the agent that started them). The
//     executor stores the owner on the task and enforces it on [Executor.Read]
//     and [Executor.Kill], so one agent can neither read nor kill another's
//     tasks even though task ids are short and guessable.
//   - Credentials in the parent environment are not inherited by commands
//     unless a trusted caller passes them explicitly in [ExecRequest.Env].
//
// The seam deliberately has no notion of sessions, agents or tools: owners
// are opaque tokens, and formatting for the model is the tool layer's job.
package bash
