package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLayering(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, "settings.json"), `{"model":"deepseek/deepseek-chat","permissions":{"allow":["Read"],"defaultMode":"default"},"env":{"A":"1","B":"1"}}`)
	write(t, filepath.Join(proj, ".dsh", "settings.json"), `{"permissions":{"deny":["Bash(rm:*)"]},"env":{"B":"2"}}`)
	write(t, filepath.Join(proj, ".dsh", "settings.local.json"), `{"model":"anthropic/claude-sonnet-4-5","permissions":{"defaultMode":"acceptEdits"}}`)
	flag := filepath.Join(t.TempDir(), "extra.json")
	write(t, flag, `{"maxSteps":7}`)
	s, srcs, err := Load(Paths{Home: home, Project: proj, Flag: flag})
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 4 || s.Model != "anthropic/claude-sonnet-4-5" || s.Permissions.DefaultMode != "acceptEdits" || s.MaxSteps != 7 {
		t.Fatalf("%+v", s)
	}
	if strings.Join(s.Permissions.Allow, ",") != "Read" || strings.Join(s.Permissions.Deny, ",") != "Bash(rm:*)" || s.Env["A"] != "1" || s.Env["B"] != "2" {
		t.Fatalf("%+v", s)
	}
}

func TestStrictErrors(t *testing.T) {
	cases := []struct{ body, want string }{
		{`{"modle":"x"}`, `modle: unknown key (did you mean "model"?)`},
		{`{"permissions":{"alow":["Read"]}}`, `permissions.alow: unknown key (did you mean "allow"?)`},
		{`{"permissions":{"allow":"Read"}}`, `permissions.allow: expected a list, got string`},
		{`{"maxSteps":"ten"}`, `maxSteps: expected a number, got string`},
		{`{"permissions":{"defaultMode":"yolo"}}`, `permissions.defaultMode: unknown mode "yolo"`},
		{"{\n  \"model\": \"x\",\n}", `not valid JSON`},
		{`{"providers":{"local":{"type":"grpc"}}}`, `providers.local.type: unknown provider type "grpc"`},
		{`{"providers":{"local":{"baseUrl":"http://x"}}}`, `providers.local.baseUrl: unknown key (did you mean "baseURL"?)`},
	}
	for _, c := range cases {
		_, err := Decode("/p/settings.json", []byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "/p/settings.json") {
			t.Errorf("%s: got %v, want %q", c.body, err, c.want)
		}
	}
}

func TestMissingFlagFile(t *testing.T) {
	if _, _, err := Load(Paths{Flag: filepath.Join(t.TempDir(), "nope.json")}); err == nil {
		t.Fatal("a missing --settings file must be an error")
	}
}

func TestHooksConcatenate(t *testing.T) {
	a, _ := Decode("a", []byte(`{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[]}]}}`))
	b, _ := Decode("b", []byte(`{"hooks":{"PreToolUse":[{"matcher":"Edit","hooks":[]}]}}`))
	m := Merge(Merge(Settings{}, a), b)
	if !strings.Contains(string(m.Hooks["PreToolUse"]), "Bash") || !strings.Contains(string(m.Hooks["PreToolUse"]), "Edit") {
		t.Fatalf("%s", m.Hooks["PreToolUse"])
	}
}

func TestEnabledPluginsValidated(t *testing.T) {
	if _, err := Decode("x", []byte(`{"enabledPlugins":{"web":false,"mcp":true}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := Decode("x", []byte(`{"enabledPlugins":{"webb":false}}`)); err == nil || !strings.Contains(err.Error(), "enabledPlugins.webb: unknown plugin") {
		t.Fatalf("%v", err)
	}
}

func TestSessionStoreIsAUserChoice(t *testing.T) {
	src := func(layer, store string) Source {
		return Source{Layer: layer, Path: "/" + layer + "/settings.json", Settings: Settings{SessionStore: store}}
	}
	cases := []struct {
		name     string
		sources  []Source
		want     string
		warnings int
	}{
		{"unset", []Source{src(LayerUser, "")}, "jsonl", 0},
		{"user", []Source{src(LayerUser, "sqlite")}, "sqlite", 0},
		{"flag over user", []Source{src(LayerUser, "sqlite"), src(LayerFlag, "jsonl")}, "jsonl", 0},
		{"project ignored", []Source{src(LayerProject, "sqlite")}, "jsonl", 1},
		{"local ignored", []Source{src(LayerUser, "sqlite"), src(LayerLocal, "jsonl")}, "sqlite", 1},
	}
	for _, c := range cases {
		got, warnings := SessionStore(c.sources)
		if got != c.want || len(warnings) != c.warnings {
			t.Errorf("%s: %q with warnings %q, want %q and %d", c.name, got, warnings, c.want, c.warnings)
		}
	}
	if _, err := Decode("/u/settings.json", []byte(`{"sessionStore":"postgres"}`)); err == nil || !strings.Contains(err.Error(), `sessionStore: unknown session store "postgres"`) {
		t.Errorf("bad store: %v", err)
	}
}
