package mcp

import (
	"slices"
	"testing"
)

func TestConfigSecrets(t *testing.T) {
	lookup := func(k string) (string, bool) {
		if k == "GH" {
			return "ghp_fromtheenvironment0123", true
		}
		return "", false
	}
	c := ServerConfig{
		Name: "s", URL: "https://user:url-password-123@mcp.example/",
		Args: []string{"--verbose", "--api-key=inline-key-0123", "--auth-token", "spaced-token-0123", "--name", "not-a-secret-name"},
		Env:  map[string]string{"GITHUB_TOKEN": "${GH}", "LOG_LEVEL": "debug-everything", "DB_PASS": "short"},
		Headers: map[string]string{"Authorization": "Bearer header-bearer-0123", "X-Api-Key": "header-key-0123", "Accept": "application/json",
			"Cookie": "sid=cookie-value-0123", "Proxy-Authorization": "Basic proxy-cred-0123"},
	}
	got := c.secrets(lookup)
	for _, want := range []string{"ghp_fromtheenvironment0123", "inline-key-0123", "spaced-token-0123", "Bearer header-bearer-0123",
		"header-bearer-0123", "header-key-0123", "url-password-123", "sid=cookie-value-0123", "proxy-cred-0123"} {
		if !slices.Contains(got, want) {
			t.Errorf("secrets %q lack %q", got, want)
		}
	}
	for _, not := range []string{"${GH}", "debug-everything", "not-a-secret-name", "application/json", "short", "--verbose"} {
		if slices.Contains(got, not) {
			t.Errorf("secrets %q hold %q, which is no credential", got, not)
		}
	}
}
