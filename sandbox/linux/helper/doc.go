// Package helper is the sandbox's helper process: what runs between dsh
// and each sandboxed command, inside the command's new namespaces. It
// reads a plan (the mounts, Landlock rules and seccomp filters to apply,
// all decided by package linux in dsh), applies it to itself, starts the
// command and stays as its reaper. It also holds the two small stages the
// helper's own program serves: the rlimits stage and the Go build cache
// program.
//
// Why a package apart from package linux: the helper starts once per
// sandboxed command, and in a virtual machine most of a Go program's
// start is page faults, which grow with what the program links and
// initialises. Package linux links the filtering proxy (net/http, TLS,
// X.509) and the seccomp compiler (system call tables for every
// architecture); this package links neither, so the dedicated helper
// program (cmd/dsh-sandbox-helper) built from it starts with a third fewer
// page faults. See docs/benchmarks.md.
package helper
