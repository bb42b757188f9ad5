package local

import (
	"slices"
	"sort"
	"strings"

	"github.com/dshq/dsh/internal/redact"
)

// shellState are variables that change what the shell does with a
// command line in ways the permission layer's analysis does not follow:
// CDPATH makes "cd sub" go wherever it lists. Commands never inherit them
// (a line can still set them, which the analysis sees).
var shellState = []string{"CDPATH"}

// overrides make tools behave for a non-interactive reader: no colour escape
// codes, no pagers waiting for a keypress.
var overrides = [][2]string{
	{"NO_COLOR", "1"},
	{"TERM", "dumb"},
	{"PAGER", "cat"},
	{"GIT_PAGER", "cat"},
}

// childEnv builds a command's environment: the parent's minus credential-
// shaped names, values holding URL credentials and the names in drop, then
// the fixed overrides, then the caller's explicit entries (which win over
// everything, credential-shaped or not).
func childEnv(parent []string, drop []string, explicit map[string]string) []string {
	out := make([]string, 0, len(parent)+len(overrides)+len(explicit))
	at := make(map[string]int, cap(out))
	set := func(name, value string) {
		kv := name + "=" + value
		if i, ok := at[name]; ok {
			out[i] = kv
			return
		}
		at[name] = len(out)
		out = append(out, kv)
	}
	for _, kv := range parent {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" || redact.SecretName(name) || redact.URLCredentials(value) || slices.Contains(drop, name) || slices.Contains(shellState, name) {
			continue
		}
		set(name, value)
	}
	for _, o := range overrides {
		set(o[0], o[1])
	}
	names := make([]string, 0, len(explicit))
	for name := range explicit {
		names = append(names, name)
	}
	sort.Strings(names) // deterministic order
	for _, name := range names {
		set(name, explicit[name])
	}
	return out
}
