// Package analysis reads a bash command line the way bash would run it,
// without running or expanding anything, and says what it does: every
// simple command it may run (with wrappers such as sudo, env, timeout and
// xargs unwrapped, and the strings given to bash -c, eval, trap and find
// -exec read as commands), the files its redirections write and read, and
// the reasons, if any, it cannot be fully read.
//
// It knows the grammar of bash (mvdan.cc/sh parses it) and of the
// programs whose arguments decide what runs: the wrappers, in one table
// (wrappers.go); git's global options; and the options that make an
// otherwise read-only program write or run something (readonly.go).
//
// A word whose value is only known at run time (a parameter or command
// substitution, a glob or brace expansion) is marked [Word.Dynamic]; its
// value is never guessed. Anything the analysis cannot follow — a command
// name computed at run time, eval of a non-literal, a variable that
// decides which programs run (PATH, LD_PRELOAD, …), arithmetic on
// variables (bash evaluates their values as code) — is a [Line.Problems]
// entry: whoever decides on the line must assume it may do anything.
//
// The permission layer matches its rules against the result, and the
// sandbox explains with it what a command will touch. The analysis uses
// no permission types.
package analysis
