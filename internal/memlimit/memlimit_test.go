package memlimit

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

func restore(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetMemoryLimit(before)
		applied.source = ""
	})
}

// Without GOMEMLIMIT the default is set; with it, what the runtime read
// from the environment stays.
func TestApply(t *testing.T) {
	restore(t)
	debug.SetMemoryLimit(math.MaxInt64) // as the runtime starts without GOMEMLIMIT
	limit, source := Apply(func(string) string { return "" }, Default)
	if limit != Default || debug.SetMemoryLimit(-1) != Default || !strings.HasPrefix(source, "default") {
		t.Fatalf("no GOMEMLIMIT: limit %d (runtime %d), source %q; want the default %d", limit, debug.SetMemoryLimit(-1), source, Default)
	}
	if got := Current(); got != "64 MiB (default; GOMEMLIMIT overrides)" {
		t.Errorf("Current() = %q", got)
	}

	debug.SetMemoryLimit(300 << 20) // as the runtime applied GOMEMLIMIT=300MiB
	limit, source = Apply(func(k string) string {
		if k == Env {
			return "300MiB"
		}
		return ""
	}, Default)
	if limit != 300<<20 || debug.SetMemoryLimit(-1) != 300<<20 || source != "GOMEMLIMIT=300MiB" {
		t.Fatalf("GOMEMLIMIT=300MiB: limit %d, source %q; the environment's limit must stay", limit, source)
	}
	if got := Current(); got != "300 MiB (GOMEMLIMIT=300MiB)" {
		t.Errorf("Current() = %q", got)
	}

	debug.SetMemoryLimit(math.MaxInt64) // GOMEMLIMIT=off
	Apply(func(string) string { return "off" }, Default)
	if got := Current(); got != "off (GOMEMLIMIT=off)" {
		t.Errorf("GOMEMLIMIT=off: Current() = %q", got)
	}
}

// A limit changed after Apply (dsh serve --memory-budget) is not called
// the default.
func TestCurrentAfterChange(t *testing.T) {
	restore(t)
	Apply(func(string) string { return "" }, Default)
	debug.SetMemoryLimit(512 << 20)
	if got := Current(); got != "512 MiB (set by this process)" {
		t.Errorf("Current() = %q", got)
	}
}
