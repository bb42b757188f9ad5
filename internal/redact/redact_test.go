package redact

import (
	"slices"
	"strings"
	"testing"
)

func TestShapesAreScrubbed(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv done", "key [REDACTED] done"},
		{"OPENAI sk-proj-abcdefghijklmnopqrstuvwxyz0123", "OPENAI [REDACTED]"},
		{"push with ghp_abcdefghijklmnopqrstuvwxyz0123456789", "push with [REDACTED]"},
		{"aws AKIAIOSFODNN7EXAMPLE here", "aws [REDACTED] here"},
		{"curl -H 'Authorization: Bearer abc.def-123456' x", "curl -H 'Authorization: Bearer [REDACTED]' x"},
		{"x-api-key: 0123456789abcdef", "x-api-key: [REDACTED]"},
		{"postgres://dsh:hunter2hunter@127.0.0.1:5432/db", "postgres://dsh:[REDACTED]@127.0.0.1:5432/db"},
		{`{"client_secret": "Zk3f9aQ81mPq0xYt"}`, `{"client_secret": "[REDACTED]"}`},
		{"export GITHUB_TOKEN=abc123def456ghi789", "export GITHUB_TOKEN=[REDACTED]"},
		{"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "jwt [REDACTED]"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAKC\n-----END RSA PRIVATE KEY-----\nafter", "[REDACTED]\nafter"},
		{"token dsh_0123abcd_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef!", "token [REDACTED]!"},
	} {
		if got := New().String(tc.in); got != tc.want {
			t.Errorf("String(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// Code and prose that merely mention secrets stay as they are.
func TestOrdinaryTextStays(t *testing.T) {
	for _, in := range []string{
		"token = getToken()",
		"password: please enter it",
		"the secret_key_base setting",
		"api_key := os.Getenv(\"OPENAI_API_KEY\")",
		"see https://example.com/path:8080@ for more", // no password shape
		"sk-short",
		"a task-list item, sk-learning notes",
		"",
	} {
		if got := New().String(in); got != in {
			t.Errorf("String(%q) = %q, want it unchanged", in, got)
		}
	}
}

func TestKnownValues(t *testing.T) {
	s := New("opensesame-123", "short", "opensesame-123-longer")
	got := s.String("a opensesame-123-longer b opensesame-123 c short")
	if got != "a [REDACTED] b [REDACTED] c short" {
		t.Errorf("got %q (a value under MinValue is not replaced; the longer one goes whole)", got)
	}
	var nilScrubber *Scrubber
	if got := nilScrubber.String("ghp_abcdefghijklmnopqrstuvwxyz0123456789"); got != Mark {
		t.Errorf("a nil scrubber still removes shapes: %q", got)
	}
}

func TestEnvValues(t *testing.T) {
	env := []string{
		"HOME=/root",
		"ANTHROPIC_API_KEY=plainvalue-notshaped",
		"MY_CUSTOM=customvalue1",
		"DATABASE_URL=postgres://u:pw-in-url-1@h/db",
		"GITHUB_TOKEN=short",
		"NOEQUALS",
	}
	got := EnvValues(env, "MY_CUSTOM")
	want := []string{"plainvalue-notshaped", "customvalue1", "postgres://u:pw-in-url-1@h/db", "pw-in-url-1"}
	if !slices.Equal(got, want) {
		t.Fatalf("EnvValues = %q, want %q", got, want)
	}
	s := New(got...)
	out := s.String("key plainvalue-notshaped; dsn pw-in-url-1; home /root")
	if strings.Contains(out, "plainvalue") || strings.Contains(out, "pw-in-url") || !strings.Contains(out, "/root") {
		t.Errorf("scrubbed = %q", out)
	}
}
