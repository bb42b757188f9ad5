package app

// Exit codes of headless runs (package headless, dsh -p). They are part
// of dsh's scripting contract; the command line uses ExitUsage for every
// bad flag.
const (
	ExitOK        = 0 // the turn completed
	ExitError     = 1 // the turn failed (provider, tool pipeline, plugin)
	ExitUsage     = 2 // bad flags, settings or model; nothing ran
	ExitAborted   = 3 // cancelled (SIGINT) or disposed
	ExitMaxTokens = 4 // the model hit its output limit
	ExitRejected  = 5 // every prompt was blocked by a hook
	ExitMaxSteps  = 6 // the step limit was reached (maxSteps, --max-turns)
	ExitNotSaved  = 7 // the session could not be saved (disk full, store failure): the turn stopped before the next model call
)
