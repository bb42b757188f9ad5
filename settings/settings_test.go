package settings

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// Test keys, shaped like the capabilities' own (a leaf cannot import them).
type perms struct {
	DefaultMode string   `json:"defaultMode,omitempty"`
	Allow       []string `json:"allow,omitempty"`
	Deny        []string `json:"deny,omitempty"`
}

type provider struct {
	Type    string `json:"type,omitempty"`
	BaseURL string `json:"baseURL,omitempty"`
}

var (
	modelKey = Key[string]{Name: "model", Merge: Latest[string]}
	permKey  = Key[perms]{Name: "permissions",
		Merge: func(a, b perms) perms {
			if b.DefaultMode != "" {
				a.DefaultMode = b.DefaultMode
			}
			a.Allow = append(a.Allow, b.Allow...)
			a.Deny = append(a.Deny, b.Deny...)
			return a
		},
		Validate: func(p perms) error {
			if p.DefaultMode != "" && !slices.Contains([]string{"default", "plan"}, p.DefaultMode) {
				return Invalid("defaultMode", "unknown mode %q", p.DefaultMode)
			}
			return nil
		},
		Policy: func(l Layer, path string, p perms) (perms, bool, string) {
			if p.DefaultMode != "plan" || !l.Project() {
				return p, true, ""
			}
			p.DefaultMode = ""
			return p, true, "no plan from " + path
		},
	}
	envKey      = Key[map[string]string]{Name: "env", Merge: MergeMaps[map[string]string]}
	stepsKey    = Key[int]{Name: "maxSteps", Merge: Latest[int]}
	providerKey = Key[map[string]provider]{Name: "providers", Merge: MergeMaps[map[string]provider], Validate: func(m map[string]provider) error {
		for n, p := range m {
			if p.Type != "" && p.Type != "openai" {
				return Invalid(n+".type", "unknown provider type %q", p.Type)
			}
		}
		return nil
	}}
	storeKey = Key[string]{Name: "sessionStore", Policy: func(l Layer, path, v string) (string, bool, string) {
		if !l.Project() {
			return v, true, ""
		}
		return "", false, "ignoring sessionStore in " + path
	}}
	rawKey = Key[map[string]json.RawMessage]{Name: "hooks"}
	schema = Schema{modelKey, permKey, envKey, stepsKey, providerKey, storeKey, rawKey}
)

func trustAll(string) (bool, error) { return true, nil }

func TestLayering(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, "settings.json"), `{"model":"deepseek/deepseek-chat","permissions":{"allow":["Read"],"defaultMode":"default"},"env":{"A":"1","B":"1"}}`)
	write(t, filepath.Join(proj, ".dsh", "settings.json"), `{"permissions":{"deny":["Bash(rm:*)"]},"env":{"B":"2"}}`)
	write(t, filepath.Join(proj, ".dsh", "settings.local.json"), `{"model":"anthropic/claude-sonnet-4-5","permissions":{"defaultMode":"default"}}`)
	flag := filepath.Join(t.TempDir(), "extra.json")
	write(t, flag, `{"maxSteps":7}`)
	c, err := Load(Input{Paths: Paths{Home: home, Project: proj, SettingsFile: flag}, Trust: trustAll, Schema: schema,
		Flags: []File{permKey.Flag("--allowedTools", perms{Allow: []string{"Edit"}}), modelKey.Flag("--model", "openai/gpt-5")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Files()) != 6 || !c.Trusted() || c.Project() != proj {
		t.Fatalf("files %v", c.Describe())
	}
	if m := modelKey.Get(c); m != "openai/gpt-5" {
		t.Errorf("model %q: the command line is the highest layer", m)
	}
	if n := stepsKey.Get(c); n != 7 {
		t.Errorf("maxSteps %d", n)
	}
	p := permKey.Get(c)
	if strings.Join(p.Allow, ",") != "Read,Edit" || strings.Join(p.Deny, ",") != "Bash(rm:*)" || p.DefaultMode != "default" {
		t.Errorf("permissions %+v", p)
	}
	if env := envKey.Get(c); env["A"] != "1" || env["B"] != "2" {
		t.Errorf("env %v", env)
	}
	var sources []string
	for _, v := range permKey.Layers(c) {
		sources = append(sources, string(v.Layer)+":"+filepath.Base(v.Path))
	}
	if got := strings.Join(sources, " "); got != "user:settings.json project:settings.json local:settings.local.json cli:--allowedTools" {
		t.Errorf("layers %s", got)
	}
}

// Each read decodes afresh: a capability that changes what it got cannot
// change what another capability reads.
func TestConfigIsImmutable(t *testing.T) {
	c, err := From(schema, false, envKey.In(LayerUser, "u", map[string]string{"A": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	envKey.Get(c)["A"] = "changed"
	envKey.Layers(c)[0].Value["B"] = "added"
	if env := envKey.Get(c); env["A"] != "1" || len(env) != 1 {
		t.Fatalf("env %v", env)
	}
}

func TestTrustFilter(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, "settings.json"), `{"model":"user/model"}`)
	write(t, filepath.Join(proj, ".dsh", "settings.json"), `{"model":"project/model","env":{"P":"1"}}`)
	var asked []string
	c, err := Load(Input{Paths: Paths{Home: home, Project: proj}, Schema: schema, Trust: func(p string) (bool, error) {
		asked = append(asked, p)
		return false, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != proj || c.Trusted() {
		t.Fatalf("asked %v trusted %v", asked, c.Trusted())
	}
	if m := modelKey.Get(c); m != "user/model" || envKey.Set(c) {
		t.Errorf("an untrusted project's layer leaked: model %q env %v", m, envKey.Get(c))
	}
	if len(c.Ignored()) != 1 || c.Ignored()[0].Layer != LayerProject {
		t.Errorf("ignored %v", c.Ignored())
	}
	// Without a trust step the project never applies.
	c, err = Load(Input{Paths: Paths{Home: home, Project: proj}, Schema: schema})
	if err != nil || modelKey.Get(c) != "user/model" {
		t.Fatalf("%v %q", err, modelKey.Get(c))
	}
	// A trust step that fails stops the pipeline.
	if _, err := Load(Input{Paths: Paths{Project: proj}, Schema: schema, Trust: func(string) (bool, error) { return false, errors.New("disk") }}); err == nil {
		t.Fatal("a failing trust step must be an error")
	}
}

func TestPolicies(t *testing.T) {
	c, err := From(schema, true,
		permKey.In(LayerUser, "/u/settings.json", perms{DefaultMode: "default"}),
		permKey.In(LayerProject, "/p/settings.json", perms{DefaultMode: "plan", Deny: []string{"X"}}),
		storeKey.In(LayerUser, "/u/settings.json", "sqlite"),
		storeKey.In(LayerLocal, "/p/settings.local.json", "jsonl"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if p := permKey.Get(c); p.DefaultMode != "default" || strings.Join(p.Deny, ",") != "X" {
		t.Errorf("the policy strips only what the layer may not choose: %+v", p)
	}
	if s := storeKey.Get(c); s != "sqlite" {
		t.Errorf("store %q", s)
	}
	if w := c.Warnings(); len(w) != 2 || !strings.Contains(w[0], "/p/settings.json") || !strings.Contains(w[1], "/p/settings.local.json") {
		t.Errorf("warnings %q", w)
	}
	// The same value from the user's own layer stands.
	c, _ = From(schema, true, permKey.In(LayerSettingsFile, "/x.json", perms{DefaultMode: "plan"}))
	if permKey.Get(c).DefaultMode != "plan" || len(c.Warnings()) != 0 {
		t.Errorf("%+v %q", permKey.Get(c), c.Warnings())
	}
	// With adds layers on top, policed the same way, keeping earlier warnings.
	c, _ = From(schema, true, storeKey.In(LayerProject, "/p", "sqlite"))
	c2, err := c.With(modelKey.Flag("--model", "m"), permKey.In(LayerLocal, "/l", perms{DefaultMode: "plan"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c2.Warnings()) != 2 || len(c.Warnings()) != 1 || modelKey.Get(c2) != "m" || modelKey.Get(c) != "" {
		t.Errorf("with: %q / %q", c2.Warnings(), c.Warnings())
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
		{`["model"]`, `must be a JSON object`},
		{`{} {}`, `extra data`},
		{`{"providers":{"local":{"type":"grpc"}}}`, `providers.local.type: unknown provider type "grpc"`},
		{`{"providers":{"local":{"baseUrl":"http://x"}}}`, `providers.local.baseUrl: unknown key (did you mean "baseURL"?)`},
		{`{"hooks":{"PreToolUse":[{"anything":1}]}}`, ``},
	}
	for _, c := range cases {
		_, err := Parse(schema, LayerUser, "/p/settings.json", []byte(c.body))
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.body, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "/p/settings.json") {
			t.Errorf("%s: got %v, want %q", c.body, err, c.want)
		}
	}
	// A flag's value is checked like a file's and named by the flag.
	if _, err := From(schema, false, permKey.Flag("--permission-mode", perms{DefaultMode: "yolo"})); err == nil || !strings.Contains(err.Error(), "--permission-mode: permissions.defaultMode") {
		t.Errorf("flag: %v", err)
	}
	if _, err := From(Schema{modelKey, modelKey}, false); err == nil {
		t.Error("a key declared twice must be refused")
	}
}

func TestMissingFlagFile(t *testing.T) {
	if _, err := Load(Input{Paths: Paths{SettingsFile: filepath.Join(t.TempDir(), "nope.json")}, Schema: schema}); err == nil {
		t.Fatal("a missing --settings file must be an error")
	}
	if c, err := Load(Input{Paths: Paths{Home: t.TempDir(), Project: t.TempDir()}, Schema: schema, Trust: trustAll}); err != nil || len(c.Files()) != 0 {
		t.Fatalf("missing user and project files are fine: %v", err)
	}
}

// The package is a leaf: it imports no dsh package at all, so every
// capability can declare its keys here and nothing here depends on them.
func TestSettingsIsALeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/dshq/dsh/") && p != "github.com/dshq/dsh/settings" {
			t.Errorf("settings depends on %s", p)
		}
	}
}
