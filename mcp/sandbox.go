package mcp

import (
	"fmt"
	"os/exec"
	"sync"
	"time"

	"github.com/dshq/dsh/sandbox"
)

// Sandboxed reports whether stdio servers are started through the kernel
// sandbox (sandbox.mcp); dsh doctor and dsh sandbox status say so.
func (m *Manager) Sandboxed() bool { return m.o.Sandbox != nil && m.o.SandboxPolicy != nil }

// sandboxGrace is how long what a server left running gets between
// SIGTERM and SIGKILL once the server itself exited.
const sandboxGrace = 500 * time.Millisecond

// confine rewrites cmd (a stdio server, not started) to run under the
// sandbox when sandbox.mcp asks for it. It returns the sandbox's handle
// (nil: the server runs as it is) and the mode it runs in.
func (s *server) confine(cmd *exec.Cmd) (sandbox.Process, sandbox.Mode, error) {
	if !s.m.Sandboxed() {
		return nil, "", nil
	}
	p, err := s.m.o.SandboxPolicy(cmd.Dir)
	if err != nil {
		return nil, "", fmt.Errorf("the sandbox policy (sandbox.mcp): %v", err)
	}
	if p == nil {
		st := s.m.o.Sandbox.Status()
		s.m.warn(fmt.Sprintf("mcp: sandbox.mcp is set but the sandbox cannot run here (%s): server %q runs unconfined", st.Reason, s.cfg.Name))
		return nil, "", nil
	}
	pr, err := s.m.o.Sandbox.Wrap(cmd, p, sandboxGrace)
	if err != nil {
		return nil, "", fmt.Errorf("starting in the sandbox (sandbox.mcp): %v", err)
	}
	return pr, p.Mode, nil
}

// sandboxEnd finishes a sandboxed server's run once it was reaped: it
// reads the helper's last report, tells the user what the proxy refused
// (a server's blocked request is otherwise only a vague error in a tool
// result) and frees the helper's descriptors. Safe to call more than
// once; nil-safe.
type sandboxEnd struct {
	once sync.Once
	pr   sandbox.Process
	warn func(string)
}

func (e *sandboxEnd) done() {
	if e == nil || e.pr == nil {
		return
	}
	e.once.Do(func() {
		e.pr.Exited()
		r := e.pr.Report()
		e.pr.Release()
		if e.warn != nil {
			for _, b := range r.Blocked {
				e.warn(b)
			}
		}
	})
}
