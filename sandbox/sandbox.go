package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// Mode is how much a sandboxed command may do. The names are Codex's.
type Mode string

// Modes.
const (
	// ModeReadOnly: no writes anywhere but a private /tmp.
	ModeReadOnly Mode = "read-only"
	// ModeWorkspaceWrite: writes in the workspace roots and a private
	// /tmp; .git/hooks, .git/config and the project's own dsh, Claude and
	// Codex settings stay read-only. The default where the kernel supports
	// it.
	ModeWorkspaceWrite Mode = "workspace-write"
	// ModeFullAccess: no confinement. Commands are still contained (they
	// die with dsh), but nothing stops what they read, write or reach.
	ModeFullAccess Mode = "danger-full-access"
)

// Modes lists every mode, strictest first.
var Modes = []Mode{ModeReadOnly, ModeWorkspaceWrite, ModeFullAccess}

// ParseMode validates a mode name.
func ParseMode(s string) (Mode, error) {
	m := Mode(strings.TrimSpace(s))
	if slices.Contains(Modes, m) {
		return m, nil
	}
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return "", fmt.Errorf("sandbox: unknown mode %q (want %s)", s, strings.Join(names, ", "))
}

// Confines reports whether commands in this mode are confined at all.
func (m Mode) Confines() bool { return m == ModeReadOnly || m == ModeWorkspaceWrite }

// Layer names, as status and explain print them.
const (
	LayerUserNS    = "user namespace"
	LayerMountNS   = "mount namespace"
	LayerNetNS     = "network namespace"
	LayerPIDNS     = "pid namespace"
	LayerLandlock  = "landlock"
	LayerSeccomp   = "seccomp"
	LayerNoNewPriv = "no_new_privs"
	LayerCaps      = "capabilities dropped"
	LayerReaper    = "subreaper"
)

// Switch names for [Disable]: the short names DSH_SANDBOX_DISABLE takes.
var switchNames = map[string]string{
	"userns":   LayerUserNS,
	"mountns":  LayerMountNS,
	"netns":    LayerNetNS,
	"pidns":    LayerPIDNS,
	"landlock": LayerLandlock,
	"seccomp":  LayerSeccomp,
}

// ParseDisable reads the test switch DSH_SANDBOX_DISABLE: a comma-separated
// list of layers (userns, mountns, netns, pidns, landlock, seccomp) the
// sandbox must not use, so tests (and a user debugging a failure) can see
// how dsh behaves and what it reports on a kernel without them. It returns
// layer names.
func ParseDisable(s string) ([]string, error) {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, ok := switchNames[part]
		if !ok {
			return nil, fmt.Errorf("sandbox: DSH_SANDBOX_DISABLE: unknown layer %q (want userns, mountns, netns, pidns, landlock, seccomp)", part)
		}
		out = append(out, name)
	}
	return out, nil
}

// Layer is one mechanism and whether it is in force.
type Layer struct {
	Name string `json:"name"`
	// Active reports that the layer is applied to sandboxed commands.
	Active bool `json:"active"`
	// Detail says why not, or what exactly (the Landlock ABI, the number
	// of seccomp rules).
	Detail string `json:"detail,omitempty"`
}

// Status is what the sandbox enforces on this machine. It is measured (a
// probe runs the helper and reports what it could apply), never assumed.
type Status struct {
	// Platform is "linux" or the GOOS without a sandbox.
	Platform string `json:"platform"`
	// Implementation names the implementation ("linux", "none").
	Implementation string `json:"implementation"`
	// Enforcing reports that the layers confined modes need are all
	// active: a mount namespace (masks), a network namespace or
	// Landlock's TCP rules (network), Landlock's filesystem rules (writes)
	// and seccomp. Only then do sandboxed commands run without asking.
	Enforcing bool `json:"enforcing"`
	// Reason explains a false Enforcing.
	Reason string `json:"reason,omitempty"`
	// LandlockABI is the kernel's Landlock ABI version (0: none).
	LandlockABI int `json:"landlockABI"`
	// Helper is the program that runs as the helper between dsh and each
	// command (the dedicated one, or dsh itself); empty without one.
	Helper string `json:"helper,omitempty"`
	// Layers lists each mechanism.
	Layers []Layer `json:"layers"`
}

// Layer returns the named layer and whether it is listed.
func (s Status) Layer(name string) (Layer, bool) {
	for _, l := range s.Layers {
		if l.Name == name {
			return l, true
		}
	}
	return Layer{}, false
}

// Active reports whether the named layer is active.
func (s Status) Active(name string) bool {
	l, ok := s.Layer(name)
	return ok && l.Active
}

// required are the layers a confined mode cannot do without: the mounts
// (masks over secrets, read-only protected paths), the network namespace
// (Landlock's TCP rules alone leave UDP open before ABI 10), Landlock
// (writes) and seccomp (mounts, new user namespaces, kernel interfaces).
// The user and PID namespaces harden but are not required: root needs no
// user namespace to make the others, and without a PID namespace the
// helper still reaps and kills as a subreaper while Landlock's scoping
// keeps other processes out of reach.
var required = []string{LayerMountNS, LayerNetNS, LayerLandlock, LayerSeccomp}

// Settle computes Enforcing and Reason from the layers: confined modes
// need every required layer.
func (s *Status) Settle() {
	var missing []string
	for _, name := range required {
		if !s.Active(name) {
			missing = append(missing, name)
		}
	}
	s.Enforcing = len(missing) == 0
	if s.Enforcing {
		s.Reason = ""
	} else if s.Reason == "" {
		s.Reason = "missing: " + strings.Join(missing, ", ")
	}
}

// Report is what one sandboxed command's run revealed.
type Report struct {
	// Mode is the mode the command ran in.
	Mode Mode
	// Enforced lists the layers that were applied to it.
	Enforced []string
	// Blocked lists network requests the proxy refused, each with its
	// reason ("blocked github.io:443: not in sandbox.network.allow").
	Blocked []string
	// Leftovers is how many processes the command left running when its
	// shell exited (daemons, background jobs): they were stopped, in every
	// mode, because a finished command leaves nothing behind.
	Leftovers int
}

// Process is one wrapped command, between [Sandbox.Wrap] and its end.
type Process interface {
	// Started is called once the command has been started: it waits for
	// the sandbox to be set up and returns an error when it could not be
	// (the command then never runs; the caller kills and reaps it).
	Started() error
	// Exited is called after the command was reaped. When the wrapper
	// knows the command's real fate (the helper's child, not the helper),
	// it returns it with ok true: an exit code, or a signal name.
	Exited() (code int, signal string, ok bool)
	// Report returns what the run revealed; call it after Exited.
	Report() Report
	// Release frees what Wrap took (descriptors, the proxy's record).
	Release()
}

// Sandbox confines commands. Implementations are safe for concurrent use.
type Sandbox interface {
	// Status says what is enforced on this machine.
	Status() Status
	// Wrap rewrites cmd (a shell command with its directory, environment
	// and standard streams set, not yet started) to run under p. The caller
	// starts cmd, then calls Started, and after reaping it Exited, Report
	// and Release.
	// grace is how long the command's leftovers get between SIGTERM and
	// SIGKILL.
	Wrap(cmd *exec.Cmd, p *Policy, grace time.Duration) (Process, error)
}

// Launcher is what a [Sandbox] offers when it can start a command in a
// helper that is already set up for the command's policy (a warm helper)
// rather than starting and setting up a helper for each command, which is
// most of a sandboxed command's cost. Callers that own the command's whole
// life (the bash executor) use it; others use Wrap.
type Launcher interface {
	// Launch starts cmd — a shell command with its directory, environment
	// and standard streams (*os.File or nil) set, not started — under p.
	// ok is false, with a nil error, when this command cannot be launched
	// warm (resource limits, which a warm helper cannot set for one
	// command): the caller then uses Wrap. cmd itself is never started.
	Launch(cmd *exec.Cmd, p *Policy, grace time.Duration) (l Launched, ok bool, err error)
}

// Launched is a command started by [Launcher.Launch]. Started returns nil
// at once (the command is running when Launch returns); Exited and Report
// are final after Wait; Release must be called last.
type Launched interface {
	Process
	// Pid is the shell's process id as dsh sees it. The shell leads its
	// own session, so the caller signals and watches it by session as it
	// would a command it started itself.
	Pid() int
	// Wait blocks until the shell and everything it left running are
	// gone.
	Wait()
	// Terminate asks the helper to stop every process of the command,
	// those that left its session included: SIGTERM now, SIGKILL after
	// the grace period.
	Terminate()
}

// ErrSetup wraps every failure to set a sandbox up.
var ErrSetup = errors.New("sandbox: setup failed")

// Others compiles the policies of the commands dsh runs besides the
// agent's bash calls — hook commands, stdio MCP servers — when the settings
// put them in the sandbox too (sandbox.hooks, sandbox.mcp). The sandbox
// plugin provides it; a capability that starts such commands looks it up
// and, finding a non-nil function, runs its commands under the policy.
type Others struct {
	// Hook is the policy of a hook command of sessionID ("" when no
	// session is known) run in cwd: the session's mode, compiled as for
	// its bash calls. Nil when sandbox.hooks is off. A nil policy means
	// the helper does not run here (dsh sandbox status says why).
	Hook func(sessionID, cwd string) (*Policy, error)
	// MCP is the policy of a stdio MCP server started in cwd, in the
	// settings' mode. Nil when sandbox.mcp is off.
	MCP func(cwd string) (*Policy, error)
	// Sandbox is what runs them.
	Sandbox Sandbox
}
