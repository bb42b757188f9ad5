package transcript

import (
	"context"
	"path/filepath"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/kernel"
)

// Plugin keeps a Claude Code-format transcript of every session under the
// site's home ($DSH_HOME/transcripts), written as events happen, and
// provides the [Writer] (hooks give its paths as transcript_path).
func Plugin() core.Plugin {
	return func(_ context.Context, h *core.Host, scope *kernel.Scope) error {
		w := New(filepath.Join(h.Site.Home, Dir), h.Site.Version, h.Logger)
		if err := w.Install(scope, h.Sessions); err != nil {
			return err
		}
		return core.Provide(h, scope, w)
	}
}
