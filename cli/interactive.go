package cli

import (
	"context"
	"os"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/internal/exepages"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/ui/term"
)

// runInteractive runs the terminal UI on the process's terminal.
var runInteractive = func(ctx context.Context, stdio IO, a *app.App, resume session.ID, pick bool, first string) error {
	h, err := home(stdio.Env)
	if err != nil {
		return usageErr("%v", err)
	}
	cwd, _ := os.Getwd()
	// The terminal UI owns the screen from here: warnings go to the log.
	muteWarnings.Store(true)
	defer muteWarnings.Store(false)
	return term.Run(ctx, term.Options{
		In: stdio.In, Out: stdio.Out, App: a, Resume: resume, FirstPrompt: first,
		Home: h, Env: stdio.Env, Version: Version, Cwd: cwd, PickSession: pick,
		Ready: func() { exepages.ReleaseOnce(stdio.Env) },
	})
}
