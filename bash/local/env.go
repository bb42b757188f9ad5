package local

import (
	"slices"
	"sort"
	"strings"
)

// credentialWords mark environment variable names that likely hold
// credentials. Matching is by substring of the upper-cased name, so it is
// deliberately broad (MONKEY goes too): a command that needs such a value
// gets it through an explicit ExecRequest.Env from a trusted caller, never by
// inheriting dsh's own API keys.
var credentialWords = []string{
	"KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL",
	"PRIVATE", "COOKIE",
}

// credentialTokens are shorter marks that would hit harmless names as
// substrings (PASSIVE, AUTHOR, PATH, COMPASS), so they must be a whole
// '_'-separated part of the name: DB_PASS, MYSQL_PWD, GITHUB_PAT,
// NPM_CONFIG__AUTH, HTTP_AUTHORIZATION.
var credentialTokens = []string{"PASS", "PWD", "PAT", "AUTH", "AUTHN", "AUTHZ", "AUTHORIZATION"}

// credentialSuffixes mark a part of the name that ends in them: OAUTH,
// BASICAUTH, DBPWD.
var credentialSuffixes = []string{"AUTH", "PWD"}

// notCredentials are names the marks above would drop that hold no secret:
// the working directories, and the ssh agent's socket (a capability the
// user's git over ssh needs, not a value that can leak).
var notCredentials = []string{"PWD", "OLDPWD", "SSH_AUTH_SOCK"}

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

func isCredentialName(name string) bool {
	if slices.Contains(notCredentials, name) {
		return false
	}
	up := strings.ToUpper(name)
	for _, w := range credentialWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	for part := range strings.SplitSeq(up, "_") {
		if slices.Contains(credentialTokens, part) {
			return true
		}
		for _, s := range credentialSuffixes {
			if strings.HasSuffix(part, s) {
				return true
			}
		}
	}
	return false
}

// hasURLCredentials reports whether value contains a URL carrying
// credentials in its userinfo: a password (postgres://app:s3cret@db/app,
// http_proxy=http://user:pass@proxy:3128), or any userinfo on http(s),
// where it is a token (https://ghp_…@github.com, Sentry DSNs). A bare login
// on other schemes (ssh://git@github.com) is no secret and stays.
func hasURLCredentials(value string) bool {
	for rest := value; ; {
		i := strings.Index(rest, "://")
		if i < 0 {
			return false
		}
		j := i
		for j > 0 && isSchemeByte(rest[j-1]) {
			j--
		}
		scheme := strings.ToLower(rest[j:i])
		rest = rest[i+3:]
		authority := rest
		if k := strings.IndexAny(authority, "/?#,; \t\n"); k >= 0 {
			authority = authority[:k]
		}
		at := strings.LastIndexByte(authority, '@')
		if at <= 0 {
			continue
		}
		user, pass, hasPass := strings.Cut(authority[:at], ":")
		if hasPass && pass != "" || user != "" && (scheme == "http" || scheme == "https") {
			return true
		}
	}
}

func isSchemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
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
		if !ok || name == "" || isCredentialName(name) || hasURLCredentials(value) || slices.Contains(drop, name) || slices.Contains(shellState, name) {
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
