// Package redact removes secrets from text that leaves the machine's
// private places: shared traces, API answers, logs. It replaces two kinds
// of secret: values the process knows to be secret (the model providers'
// API keys, a database URL's password, any environment variable whose
// name says it holds one) wherever they appear, and strings shaped like a
// credential (provider API keys, GitHub and cloud tokens, JWTs, private
// keys, passwords in URLs, Authorization headers, KEY=value assignments)
// even when nobody said they were secret.
//
// Redaction is best effort by construction: it cannot know every format.
// It errs on the side of removing: a false positive costs a reader a
// string, a false negative leaks a credential.
package redact

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Mark replaces a secret; the kind in brackets says what was there.
const Mark = "[REDACTED]"

// MinValue is the shortest known value that is replaced: shorter ones
// ("1", "true") would erase ordinary text.
const MinValue = 8

type pattern struct {
	re *regexp.Regexp
	// keep says the first submatch (a header or variable name and its
	// "=") stays; only what follows it is replaced.
	keep bool
	// token: the replaced part must look like a credential (see
	// tokenLike), so "token = getToken()" in code stays as it is.
	token bool
}

// patterns are credential shapes. Each is anchored on a prefix providers
// document for their keys, or on the words around a secret. They are
// compiled on first use, not at every start of dsh.
var patterns = sync.OnceValue(func() []pattern {
	return []pattern{
		{regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[A-Za-z0-9+/=\s\\]*)`), false, false},
		{regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_\-]{16,}`), false, false},
		{regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_\-]{20,}`), false, false},
		{regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})`), false, false},
		{regexp.MustCompile(`\bglpat-[A-Za-z0-9_\-]{20,}`), false, false},
		{regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), false, false},
		{regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9\-]{10,}`), false, false},
		{regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}`), false, false},
		{regexp.MustCompile(`\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}`), false, false},
		{regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`), false, false},
		{regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}\b`), false, false},
		{regexp.MustCompile(`\bdsh_[0-9a-f]{8,}_[0-9a-f]{32,}`), false, false},
		{regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`), false, false},
		// Authorization: Bearer …, Basic …, token … (headers and curl -H).
		{regexp.MustCompile(`(?i)(\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:bearer|basic|token|bot)\s+)[A-Za-z0-9._~+/=\-]{6,}`), true, false},
		{regexp.MustCompile(`(?i)(\b(?:x-api-key|api-key|x-auth-token|private-token)["']?\s*[:=]\s*["']?)[A-Za-z0-9._~+/=\-]{8,}`), true, false},
		// scheme://user:password@host
		{regexp.MustCompile(`(\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s/:@"'<>]*:)[^\s@/"'<>]{1,256}@`), true, false},
		// NAME_KEY=value, "client_secret": "value", password: value …
		{regexp.MustCompile(`(?i)(\b[A-Za-z0-9_.\-]*(?:api[_-]?key|secret|token|passw(?:or)?d|passphrase|credential|private[_-]?key|access[_-]?key)[A-Za-z0-9_\-]*["']?\s*[:=]\s*["']?)([^\s"',;}{()<>\[\]]{8,})`), true, true},
	}
})

// Scrubber redacts known secret values and credential shapes.
type Scrubber struct {
	values []string // longest first, so a value containing another goes whole
	repl   *strings.Replacer

	once   sync.Once
	needle [][]byte // see needles
}

// New returns a scrubber for these known secret values (shorter than
// MinValue are ignored) and the built-in shapes.
func New(values ...string) *Scrubber {
	var vs []string
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) >= MinValue && !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	slices.SortFunc(vs, func(a, b string) int { return len(b) - len(a) })
	s := &Scrubber{values: vs}
	if len(vs) > 0 {
		pairs := make([]string, 0, 2*len(vs))
		for _, v := range vs {
			pairs = append(pairs, v, Mark)
		}
		s.repl = strings.NewReplacer(pairs...)
	}
	return s
}

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

// SecretName reports whether an environment variable's name says its
// value is a credential. Commands dsh runs never inherit such variables
// (bash/local), and the session log scrubs their values.
func SecretName(name string) bool {
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

// URLCredentials reports whether value contains a URL carrying
// credentials in its userinfo: a password (postgres://app:s3cret@db/app,
// http_proxy=http://user:pass@proxy:3128), or any userinfo on http(s),
// where it is a token (https://ghp_…@github.com, Sentry DSNs). A bare login
// on other schemes (ssh://git@github.com) is no secret and stays.
func URLCredentials(value string) bool {
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

// secretValueName marks names whose whole value is a secret though
// commands may inherit them (a connection string without a password is
// no credential to withhold, but one with a password in key=value form
// is one to scrub).
func secretValueName(name string) bool {
	n := strings.ToUpper(name)
	return SecretName(name) || strings.HasSuffix(n, "DATABASE_URL") || strings.HasSuffix(n, "DSN")
}

// EnvValues returns the values in environ ("NAME=value" entries) that are
// secrets: those of the names given (exactly as spelled) and of every
// variable whose name says it holds one. A URL's password counts on its
// own too, so "postgres://u:pw@h/db" scrubs "pw" wherever it appears.
func EnvValues(environ []string, names ...string) []string {
	var out []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || len(v) < MinValue {
			continue
		}
		if !slices.Contains(names, k) && !secretValueName(k) && !URLCredentials(v) {
			continue
		}
		out = append(out, v)
		if i := strings.Index(v, "://"); i >= 0 {
			rest := v[i+3:]
			if at := strings.LastIndexByte(rest, '@'); at >= 0 {
				if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
					out = append(out, pw)
				}
			}
		}
	}
	return out
}

// tokenLike reports whether v looks like a generated credential rather than
// a word or an expression: only token characters, at least 12 of them,
// letters and digits both.
func tokenLike(v string) bool {
	if len(v) < 12 {
		return false
	}
	var letter, digit bool
	for _, c := range v {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		case c >= '0' && c <= '9':
			digit = true
		case strings.ContainsRune("_-+/=~.", c):
		default:
			return false
		}
	}
	return letter && digit
}

// String returns s with every secret replaced by Mark.
func (s *Scrubber) String(in string) string {
	if in == "" {
		return in
	}
	out := in
	if s != nil && s.repl != nil {
		out = s.repl.Replace(out)
	}
	for _, p := range patterns() {
		idx := p.re.FindAllStringSubmatchIndex(out, -1)
		if idx == nil {
			continue
		}
		var b strings.Builder
		last := 0
		for _, m := range idx {
			start, end := m[0], m[1]
			if p.keep && m[2] >= 0 {
				start = m[3]
			}
			secret := out[start:end]
			trail := ""
			if strings.HasSuffix(secret, "@") {
				secret, trail = secret[:len(secret)-1], "@"
			}
			if secret == Mark || strings.Contains(secret, Mark) {
				continue
			}
			if p.token && !tokenLike(secret) {
				continue
			}
			b.WriteString(out[last:start])
			b.WriteString(Mark)
			b.WriteString(trail)
			last = end
		}
		if last == 0 {
			continue
		}
		b.WriteString(out[last:])
		out = b.String()
	}
	return out
}

// JSON returns data, a JSON text, with every known secret value inside its
// strings (object keys included) replaced by Mark, and whether anything
// was replaced; data itself comes back when nothing was. Only string
// contents change, decoded first, so the result is valid JSON of the same
// shape, and a value is found however the encoder escaped it. Credential
// shapes are not looked for: a shape in the log can be a test fixture the
// model must read and edit exactly (see
// docs/rfc/implemented/architecture/2026-12-03-secrets-out-of-the-log.md).
func (s *Scrubber) JSON(data []byte) ([]byte, bool) {
	if s == nil || s.repl == nil || !s.mayHold(data) {
		return data, false
	}
	var out []byte
	last := 0
	for i := 0; i < len(data); i++ {
		if data[i] != '"' {
			continue
		}
		end, escaped := stringEnd(data, i)
		if end < 0 {
			break // not JSON: leave the rest as it is
		}
		lit := data[i : end+1]
		i = end
		var str string
		if escaped {
			if json.Unmarshal(lit, &str) != nil {
				continue
			}
		} else {
			str = string(lit[1 : len(lit)-1])
		}
		repl := s.repl.Replace(str)
		if repl == str {
			continue
		}
		enc, err := json.Marshal(repl)
		if err != nil {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(data))
		}
		out = append(out, data[last:i-len(lit)+1]...)
		out = append(out, enc...)
		last = end + 1
	}
	if out == nil {
		return data, false
	}
	return append(out, data[last:]...), true
}

// mayHold is JSON's cheap first look: whether data holds any known value
// as an encoder writes it (escaped, with or without HTML escaping). Most
// events hold none and cost one substring search per value.
func (s *Scrubber) mayHold(data []byte) bool {
	for _, n := range s.needles() {
		if bytes.Contains(data, n) {
			return true
		}
	}
	return false
}

// needles are the values as they appear inside JSON strings.
func (s *Scrubber) needles() [][]byte {
	s.once.Do(func() {
		for _, v := range s.values {
			plain, _ := json.Marshal(v) // HTML-escaped, as encoding/json writes
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(v)
			for _, n := range [][]byte{plain, bytes.TrimSpace(b.Bytes())} {
				n = n[1 : len(n)-1]
				if !slices.ContainsFunc(s.needle, func(x []byte) bool { return bytes.Equal(x, n) }) {
					s.needle = append(s.needle, n)
				}
			}
		}
	})
	return s.needle
}

// stringEnd returns the index of the quote closing the JSON string that
// opens at data[start], and whether the string holds escapes; -1 when it
// never closes.
func stringEnd(data []byte, start int) (int, bool) {
	escaped := false
	for j := start + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j, escaped
		}
	}
	return -1, escaped
}
