package linux

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"

	"github.com/dshq/dsh/sandbox"
)

// HelperArg is the hidden subcommand that runs the helper: `dsh
// __sandbox-helper`. The program's main must call [Main] first thing.
const HelperArg = "__sandbox-helper"

// limitsArg is the second stage that applies rlimits and execs the shell
// (used only when limits are set: rlimits on the helper itself would bind
// its Go runtime too).
const limitsArg = "__sandbox-limits"

// Descriptors the helper inherits.
const (
	fdPlan   = 3 // the plan, then the lifeline: EOF means dsh is gone
	fdReport = 4 // the helper's reports: setup outcome, then the command's fate
	fdProxy  = 5 // O_PATH descriptor of this command's proxy socket
)

// ProxyPort is where the bridge listens inside the sandbox's own loopback.
const ProxyPort = 3128

// plan is what the parent tells the helper: the command and every layer to
// apply. The helper decides nothing: what it cannot apply is an error.
type plan struct {
	// Format is planFormat of the dsh that wrote it: a helper of another
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
}

// report is one line on fdReport.
type report struct {
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

// planFormat identifies the plan's format: a hash of the plan type's
// shape (every field's name, type and tag, recursively). dsh and a helper
// program built apart (cmd/dsh-sandbox-helper) must agree on it; a field
// added, removed or retyped changes it without anyone having to remember
// a version number. formatSalt lets a test build a helper that disagrees.
var planFormat = func() string {
	var b strings.Builder
	shape(&b, reflect.TypeOf(plan{}), 0)
	b.WriteString(formatSalt)
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}()

var formatSalt string

func shape(b *strings.Builder, t reflect.Type, depth int) {
	if depth > 8 {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		b.WriteString("{")
		for i := range t.NumField() {
			f := t.Field(i)
			fmt.Fprintf(b, "%s %q:", f.Name, f.Tag)
			shape(b, f.Type, depth+1)
			b.WriteString(";")
		}
		b.WriteString("}")
	case reflect.Slice, reflect.Pointer, reflect.Array:
		b.WriteString(t.Kind().String() + " ")
		shape(b, t.Elem(), depth+1)
	case reflect.Map:
		b.WriteString("map ")
		shape(b, t.Key(), depth+1)
		shape(b, t.Elem(), depth+1)
	default:
		b.WriteString(t.String())
	}
}
