package cli

import (
	"context"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/session"
)

// runInteractive is replaced by the terminal UI.
var runInteractive = func(ctx context.Context, stdio IO, a *app.App, resume session.ID, first string) error {
	return usageErr("the interactive terminal is not built yet; use -p")
}
