package doctor

import (
	"context"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/kernel"
)

// Plugin provides the application's [Registry], which the capabilities
// installed after it add their checks to (`dsh doctor` runs them).
func Plugin() core.Plugin {
	return func(_ context.Context, h *core.Host, scope *kernel.Scope) error {
		return core.Provide(h, scope, &Registry{})
	}
}
