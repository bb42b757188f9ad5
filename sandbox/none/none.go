// Package none is the sandbox that confines nothing and says so: it is
// used where no kernel sandbox exists (another OS) and when a Linux
// sandbox cannot start at all. Its status is never enforcing, so the
// permission layer keeps asking for what it would ask without a sandbox.
package none

import (
	"os/exec"
	"runtime"
	"time"

	"github.com/dshq/dsh/sandbox"
)

// Sandbox confines nothing.
type Sandbox struct {
	// Reason is why there is no sandbox ("no sandbox on darwin").
	Reason string
}

// New returns a sandbox that reports reason.
func New(reason string) *Sandbox {
	if reason == "" {
		reason = "no sandbox implementation on " + runtime.GOOS
	}
	return &Sandbox{Reason: reason}
}

// Status reports no enforcement.
func (s *Sandbox) Status() sandbox.Status {
	return sandbox.Status{Platform: runtime.GOOS, Implementation: "none", Enforcing: false, Reason: s.Reason}
}

// Wrap leaves cmd as it is.
func (s *Sandbox) Wrap(_ *exec.Cmd, p *sandbox.Policy, _ time.Duration) (sandbox.Process, error) {
	mode := sandbox.ModeFullAccess
	if p != nil {
		mode = p.Mode
	}
	return process{mode: mode}, nil
}

type process struct{ mode sandbox.Mode }

func (process) Started() error              { return nil }
func (process) Exited() (int, string, bool) { return 0, "", false }
func (p process) Report() sandbox.Report    { return sandbox.Report{Mode: p.mode} }
func (process) Release()                    {}
