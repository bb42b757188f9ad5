// Package sandbox is dsh's kernel-sandbox seam: the modes (read-only,
// workspace-write, danger-full-access), the [Policy] a command runs under
// and how permission rules compile into it ([Compile]), the [Status] of
// what a machine enforces, and the [Sandbox] interface that wraps a shell
// command so the kernel confines it.
//
// Why a kernel sandbox behind the permission parser: static analysis of a
// command line decides whether to ask, but shells and programs that run
// programs will always outrun a parser. The sandbox is the wall behind it:
// what a confined command cannot do is refused by the kernel whatever the
// parser concluded, and because of that wall the permission layer lets
// sandboxed commands run without asking (see docs/rfc for the threat
// model).
//
// Implementations: sandbox/linux (namespaces, Landlock, seccomp,
// no_new_privs, a subreaper, rlimits; a filtering proxy in sandbox/proxy
// for the network) and sandbox/none (confines nothing and says so).
package sandbox
