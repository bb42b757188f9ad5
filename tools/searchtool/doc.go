// Package searchtool provides the model-facing workspace search tools: glob
// (find files by path pattern), grep (search file contents by regular
// expression) and ls (a bounded directory tree). They are thin layers over
// package search, which defines what is searched and how results are
// ordered and capped; this package resolves paths against the session's
// working directory and renders results as compact text for the model.
//
// All three are read-only and may run concurrently with other concurrent
// tools. Their descriptions live beside the code (glob.md, grep.md, ls.md)
// and are embedded, so the prompt text is reviewed as prose.
//
// The permission layer decides a search by the directory it names, so
// [Options.Denied] lets it keep the files its rules deny reading out of the
// results (withhold.go has the details: which tools say how many entries
// were withheld, and why grep does not).
package searchtool
