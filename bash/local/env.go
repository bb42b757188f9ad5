package local

import (
	"sort"
	"strings"
)

// credentialWords mark environment variable names that likely hold
// credentials. Matching is by substring of the upper-cased name, so it is
// deliberately broad (MONKEY goes too): a command that needs such a value
// gets it through an explicit ExecRequest.Env from a trusted caller, never by
// inheriting dsh's own API keys.
var credentialWords = []string{"KEY", "SECRET", "TOKEN", "PASSWORD", "CREDENTIAL"}

// overrides make tools behave for a non-interactive reader: no colour escape
// codes, no pagers waiting for a keypress.
var overrides = [][2]string{
	{"NO_COLOR", "1"},
	{"TERM", "dumb"},
	{"PAGER", "cat"},
	{"GIT_PAGER", "cat"},
}

func isCredentialName(name string) bool {
	up := strings.ToUpper(name)
	for _, w := range credentialWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}

// childEnv builds a command's environment: the parent's minus credential-
// shaped names, then the fixed overrides, then the caller's explicit entries
// (which win over everything, credential-shaped or not).
func childEnv(parent []string, explicit map[string]string) []string {
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
		if !ok || name == "" || isCredentialName(name) {
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
