//go:build linux

package helper

import (
	"golang.org/x/sys/unix"

	"github.com/dshq/dsh/sandbox"
)

// Arg is the hidden subcommand that runs the helper: `dsh
// __sandbox-helper`. The program's main must call [Main] first thing.
const Arg = "__sandbox-helper"

// limitsArg is the second stage that applies rlimits and execs the shell
// (used only when limits are set: rlimits on the helper itself would bind
// its Go runtime too).
const limitsArg = "__sandbox-limits"

// Descriptors the helper inherits.
const (
	fdPlan   = 3 // the plan, then the lifeline: EOF means dsh is gone
	fdReport = 4 // the helper's reports: setup outcome, then the command's fate
	fdProxy  = 5 // O_PATH descriptor of this command's proxy socket
	// fdControl is a warm helper's command channel (a SOCK_SEQPACKET
	// socket): launches and terminations in, each command's start and
	// fate out. See warm.go.
	fdControl = 6
)

// ProxyPort is where the bridge listens inside the sandbox's own loopback.
const ProxyPort = 3128

// plan is what the parent tells the helper: the command and every layer to
// apply. The helper decides nothing: what it cannot apply is an error.
type Plan struct {
	// Format is PlanFormat of the dsh that wrote it: a helper of another
	// build refuses a plan whose fields it may not read alike.
	Format string `json:"format"`

	Path string   `json:"path"`
	Args []string `json:"args"`
	Dir  string   `json:"dir"`

	Policy sandbox.Policy `json:"policy"`
	// Confine applies mounts, Landlock, seccomp and the capability drop;
	// false only contains (subreaper, kill on exit).
	Confine bool `json:"confine"`
	UserNS  bool `json:"userns"`
	MountNS bool `json:"mountns"`
	NetNS   bool `json:"netns"`
	PIDNS   bool `json:"pidns"`

	Landlock bool `json:"landlock"`
	Seccomp  bool `json:"seccomp"`
	// Filters are the seccomp programs to load, in order, compiled by dsh.
	Filters [][]unix.SockFilter `json:"filters,omitempty"`
	// Tmp is the host directory mounted at /tmp.
	Tmp string `json:"tmp,omitempty"`
	// TmpDir is the writable temporary directory inside: /tmp, or
	// /tmp/.dsh-tmp when host paths are kept under /tmp (a Landlock grant
	// on /tmp would reach into them).
	TmpDir string `json:"tmpDir,omitempty"`
	// Keep are host paths under /tmp that stay visible over the private
	// /tmp (workspace roots that live there, the home directory).
	Keep []string `json:"keep,omitempty"`
	// Home is the user's home directory.
	Home string `json:"home,omitempty"`
	// Cache is the host directory of the command's private caches, bound
	// at /run/dsh-cache (see caches.go).
	Cache string `json:"cache,omitempty"`
	// Denied is a host file nobody may read (mode 0), bound over the
	// hidden files whose reads must fail.
	Denied string `json:"denied,omitempty"`
	// Proxy starts the bridge from 127.0.0.1:ProxyPort to fdProxy.
	Proxy bool `json:"proxy,omitempty"`
	// ProxyTCP is the host loopback port of the proxy when there is no
	// network namespace (Landlock then allows connecting only to it).
	ProxyTCP int `json:"proxyTCP,omitempty"`
	// GraceMS is how long leftovers have between SIGTERM and SIGKILL.
	GraceMS int `json:"graceMS"`
	// Probe makes the helper report and exit without running anything.
	Probe bool `json:"probe,omitempty"`
	// Warm makes the helper stay once set up and run the commands dsh
	// sends over fdControl, one at a time, instead of Path: starting a
	// Go helper and setting up its namespaces is most of a sandboxed
	// command's cost, and the setup depends only on the plan.
	Warm bool `json:"warm,omitempty"`
}

// report is one line on fdReport.
type Report struct {
	// Started is the first line: the layers applied, or Error.
	Started bool     `json:"started,omitempty"`
	Layers  []string `json:"layers,omitempty"`
	Error   string   `json:"error,omitempty"`
	// Done is the last line: the command's fate.
	Done   bool   `json:"done,omitempty"`
	Exit   int    `json:"exit,omitempty"`
	Signal string `json:"signal,omitempty"`
	// Leftovers is how many processes were still running when the shell
	// exited (and were stopped).
	Leftovers int `json:"leftovers,omitempty"`
}

// PlanFormat identifies the plan's format: planShape, a hash of the Plan
// type's shape (every field's name, type and tag, recursively), then
// formatSalt. dsh and a helper program built apart
// (cmd/dsh-sandbox-helper) must agree on it. TestPlanShape recomputes the
// hash on every test run and fails while planShape is out of date, so a
// field added, removed or retyped changes the format without anyone
// having to remember a version number; the hash is a constant rather than
// computed at start-up because the helper starts once per command.
// formatSalt lets a test build a helper that disagrees.
var PlanFormat = planShape + formatSalt

var formatSalt string

// Where sandboxed commands find their private caches and the helper's
// program (the Go cache program runs it), inside the sandbox's empty /run.
const (
	CacheMount = "/run/dsh-cache"
	ExeMount   = "/run/dsh"
)
