// Package memlimit gives dsh's front doors a soft memory limit for the Go
// runtime unless the user chose one.
//
// With only GOGC the heap may grow to twice what is live before the
// collector runs, and pages it frees go back to the system lazily; over a
// long session of large tool outputs that garbage, not the session, is most
// of the resident set. A soft limit makes the collector run earlier and
// return freed pages sooner once the process nears it. It is soft: a
// session that really needs more gets more (the runtime bounds the
// collector's share of the CPU instead of failing), so the default is a
// figure most sessions stay under, not a cap.
package memlimit

import (
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"sync"
)

// Default is the limit a front door sets when the environment sets none:
// the heap of a long session of 20 KB tool outputs stays well under it
// (docs/benchmarks.md, long sessions).
const Default int64 = 64 << 20

// Env is the variable that overrides the default; the Go runtime reads it
// itself ("off" for no limit, or a size such as 512MiB).
const Env = "GOMEMLIMIT"

// Apply sets the runtime's soft memory limit to def unless getenv(Env)
// names one (the runtime already applied that when the process started).
// It returns the limit in effect and where it came from, for dsh doctor.
func Apply(getenv func(string) string, def int64) (limit int64, source string) {
	if v := strings.TrimSpace(getenv(Env)); v != "" {
		source = Env + "=" + v
	} else {
		debug.SetMemoryLimit(def)
		source = "default; " + Env + " overrides"
	}
	applied.Lock()
	applied.source = source
	applied.Unlock()
	return debug.SetMemoryLimit(-1), source
}

// applied is where the limit Apply left came from.
var applied struct {
	sync.Mutex
	source string
}

// Current is the limit in effect and what set it, in words for dsh doctor
// ("64 MiB (default; GOMEMLIMIT overrides)"). A limit changed since Apply
// (dsh serve's --memory-budget) is reported as set by the process.
func Current() string {
	limit := debug.SetMemoryLimit(-1)
	applied.Lock()
	source := applied.source
	applied.Unlock()
	switch {
	case source == "" && limit == math.MaxInt64:
		source = "none set"
	case source == "" || (strings.HasPrefix(source, "default") && limit != Default):
		source = "set by this process"
	}
	return Describe(limit, source)
}

// Describe is the limit in words: "64 MiB (default)", "off (GOMEMLIMIT=off)".
func Describe(limit int64, source string) string {
	if limit == math.MaxInt64 {
		return fmt.Sprintf("off (%s)", source)
	}
	return fmt.Sprintf("%s (%s)", size(limit), source)
}

func size(n int64) string {
	switch {
	case n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d B", n)
}
