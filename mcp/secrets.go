package mcp

import (
	"strings"

	"github.com/dshq/dsh/internal/redact"
)

// secrets are the credentials c holds once its ${VAR} references are
// expanded: the values of its credential-named env entries (and any URL
// password in them), its authorization-like header values (and the token
// after a "Bearer " or "Basic " scheme), a password in its URL, and the
// value of a credential-named command-line flag (--api-key X,
// --token=X). A reference that fails to expand leaves its text, which is
// no secret, so the error is not this function's to report (connect
// reports it).
func (c ServerConfig) secrets(lookup func(string) (string, bool)) []string {
	x, _ := c.expanded(lookup)
	// Everything goes through redact.EnvValues as NAME=value entries, under
	// a credential name where the value is one by its place (a header, a
	// flag), so the length floor and the URL-password split apply alike.
	var env []string
	for k, v := range x.Env {
		env = append(env, k+"="+v)
	}
	for k, v := range x.Headers {
		if !secretHeader(k) {
			continue
		}
		env = append(env, "HEADER_SECRET="+v)
		if _, token, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
			env = append(env, "HEADER_SECRET="+strings.TrimSpace(token))
		}
	}
	env = append(env, "URL="+x.URL)
	for i, a := range x.Args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !redact.SecretName(strings.ReplaceAll(name, "-", "_")) {
			continue
		}
		if !inline {
			if i+1 >= len(x.Args) || strings.HasPrefix(x.Args[i+1], "-") {
				continue
			}
			value = x.Args[i+1]
		}
		env = append(env, "ARG_SECRET="+value)
	}
	return redact.EnvValues(env)
}

// secretHeader reports whether an HTTP header carries a credential: the
// authorization headers, cookies, and any header whose name says it holds
// a key or token (X-API-Key, Private-Token).
func secretHeader(name string) bool {
	return redact.SecretName(strings.ReplaceAll(name, "-", "_"))
}
