//go:build linux && !amd64

package linux

import (
	"github.com/dshq/dsh/sandbox/linux/seccompgen"
	"golang.org/x/sys/unix"
)

// seccompFilters compiles the helper's filters at run time: there is no
// table compiled ahead for this architecture (see seccompgen).
func seccompFilters() ([][]unix.SockFilter, error) { return seccompgen.Filters() }
