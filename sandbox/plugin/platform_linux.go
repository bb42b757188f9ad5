package plugin

import (
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/sandbox"
	"github.com/dshq/dsh/sandbox/linux"
)

// platform is the sandbox that confines commands here: Landlock, seccomp
// and namespaces (sandbox/linux). The Linux implementation only builds on
// Linux, so the choice is made by file, not by runtime.GOOS.
func platform(h *core.Host, disable []string) sandbox.Sandbox {
	return linux.New(linux.Options{Home: h.Site.UserHome, Disable: disable, Logger: h.Logger})
}
