package redact

import (
	"encoding/json"
	"reflect"
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

// JSON replaces known values inside strings only, decoded first: escaped
// values are found, a value that only looks present across an escape is
// not, keys are scrubbed, numbers and structure stay, and nothing else
// changes (credential shapes included).
func TestJSONScrubsKnownValues(t *testing.T) {
	s := New("pa<ss\"wo&rd-1", "12345678", "nabc1234x")
	in := []byte(`{"text":"x pa\u003css\"wo\u0026rd-1 y","raw":"pa<ss\"wo&rd-1","n":123456789,"12345678":["12345678"],` +
		`"esc":"\nabc1234x","shape":"sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv"}`)
	out, changed := s.JSON(in)
	if !changed {
		t.Fatal("nothing replaced")
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("not JSON: %v: %s", err, out)
	}
	want := map[string]any{"text": "x [REDACTED] y", "raw": "[REDACTED]", "n": 123456789.0, "[REDACTED]": []any{"[REDACTED]"},
		"esc": "\nabc1234x", "shape": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	plain := []byte(`{"text":"nothing secret here","n":1}`)
	if out, changed := s.JSON(plain); changed || &out[0] != &plain[0] {
		t.Errorf("unchanged input: changed=%v %s", changed, out)
	}
	if out, changed := New().JSON(in); changed || string(out) != string(in) {
		t.Error("a scrubber without values changed the text")
	}
}

func TestSetGrows(t *testing.T) {
	set := NewSet("first-secret-1")
	set.Add("later-secret-2")
	out, _ := set.JSON([]byte(`["first-secret-1 later-secret-2"]`))
	if string(out) != `["[REDACTED] [REDACTED]"]` {
		t.Errorf("got %s", out)
	}
	// Known values again (as every session adding an MCP server adds its
	// credentials) leave the set as it was: no rebuilt scrubber.
	before := set.Scrubber()
	set.Add("first-secret-1", "later-secret-2", " later-secret-2 ", "short")
	if set.Scrubber() != before {
		t.Error("adding known values rebuilt the scrubber")
	}
	set.Add("third-secret-3")
	if out, _ := set.JSON([]byte(`"third-secret-3"`)); string(out) != `"[REDACTED]"` || set.Scrubber() == before {
		t.Errorf("a new value after known ones: %s", out)
	}
	var nilSet *Set
	if out, changed := nilSet.JSON([]byte(`"x"`)); changed || string(out) != `"x"` {
		t.Error("a nil set changed the text")
	}
}

// BenchmarkJSONNoSecret is the cost the log pays per append that holds no
// secret (nearly all of them): a chunk-sized and a 64 KiB payload, with
// six known values.
func BenchmarkJSONNoSecret(b *testing.B) {
	s := New("sk-ant-api03-aaaaaaaaaaaaaaaaaaaa", "postgres://u:pw-123456@h/db", "pw-123456", "svc-pw-9e1d4c7a2f6b8035", "ghp_0123456789abcdefghij0123456789", "hunter2hunter2")
	chunk := []byte(`{"turn":3,"step":7,"chunk":{"type":"text","text":"Let me look at the failing test in store/"}}`)
	big := []byte(`{"turn":3,"step":7,"callId":"toolu_1","content":[{"type":"text","text":"` + strings.Repeat("ordinary tool output line\\n", 2520) + `"}]}`)
	for _, c := range []struct {
		name string
		data []byte
	}{{"chunk", chunk}, {"64KiB", big}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				if _, changed := s.JSON(c.data); changed {
					b.Fatal("changed")
				}
			}
		})
	}
}
