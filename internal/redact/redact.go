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

// secretName reports whether an environment variable's name says its value
// is a secret.
func secretName(name string) bool {
	n := strings.ToUpper(name)
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "PRIVATE", "DATABASE_URL", "_DSN", "COOKIE", "SESSION"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
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
		if !slices.Contains(names, k) && !secretName(k) {
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
