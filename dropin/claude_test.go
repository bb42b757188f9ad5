package dropin

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/settings"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(got) {
		t.Fatalf("%s differs (go test ./dropin -update rewrites it):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// A real-format Claude Code settings file converts to dsh's permissions and
// env; rules keep Claude Code's meaning; what dsh does not use is noted,
// what it reads differently is warned about; hooks and plugin keys are left
// to the capabilities that read them.
func TestConvertClaudeGolden(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "claude", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	conv, err := ConvertClaude(b, "/home/u", "/work/proj")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]any{}
	for k, v := range conv.Keys {
		var x any
		_ = json.Unmarshal(v, &x)
		keys[k] = x
	}
	out, _ := json.MarshalIndent(map[string]any{"keys": keys, "notes": conv.Notes, "warnings": conv.Warnings}, "", "  ")
	golden(t, filepath.Join("claude", "settings.converted.json"), append(out, '\n'))

	var p permission.Settings
	if err := json.Unmarshal(conv.Keys["permissions"], &p); err != nil {
		t.Fatal(err)
	}
	for _, r := range append(append(p.Allow, p.Ask...), p.Deny...) {
		if err := permission.CheckRule(r, "/home/u"); err != nil {
			t.Errorf("converted rule %q does not parse: %v", r, err)
		}
	}
	if !contains(p.Allow, "Edit(./src/**)") || !contains(p.Deny, "Read(//etc/shadow)") || !contains(p.Deny, "Bash") || contains(p.Allow, "Bash") {
		t.Fatalf("rules %+v", p)
	}
	for _, n := range conv.Notes {
		if strings.HasPrefix(n, "hooks") || strings.HasPrefix(n, "enabledPlugins") || strings.HasPrefix(n, "$schema") {
			t.Errorf("noted as unused though read elsewhere: %s", n)
		}
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Through the pipeline: Claude Code's files sit under dsh's of the same
// standing; a malformed one is skipped with a warning, not an error; an
// untrusted project's is held back.
func TestClaudeLayers(t *testing.T) {
	home, proj, dshHome := t.TempDir(), t.TempDir(), t.TempDir()
	write := func(path, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".claude", "settings.json"), `{"permissions": {"defaultMode": "plan", "deny": ["Read(~/.aws/**)"]}, "env": {"A": "claude-user", "B": "claude-user"}}`)
	write(filepath.Join(dshHome, "settings.json"), `{"env": {"B": "dsh-user"}}`)
	write(filepath.Join(proj, ".claude", "settings.json"), `{"permissions": {"allow": ["Bash(make:*)"], "defaultMode": "acceptEdits"}, "env": {"C": "claude-project"}, "theme": "dark"}`)
	write(filepath.Join(proj, ".claude", "settings.local.json"), `{"permissions": {"deny": [`)
	schema := settings.Schema{permission.Key, settings.Key[map[string]string]{Name: "env", Merge: settings.MergeMaps[map[string]string]}}
	load := func(trusted bool) *settings.Config {
		t.Helper()
		c, err := settings.Load(settings.Input{
			Paths: settings.Paths{Home: dshHome, Project: proj}, Foreign: ClaudeSettings(home, proj), Schema: schema,
			Trust: func(string) (bool, error) { return trusted, nil },
		})
		if err != nil {
			t.Fatalf("a Claude Code file stopped dsh: %v", err)
		}
		return c
	}
	c := load(true)
	var order []string
	for _, f := range c.Files() {
		order = append(order, string(f.Layer)+":"+filepath.Base(filepath.Dir(f.Path))+"/"+filepath.Base(f.Path))
	}
	if got := strings.Join(order, " "); got != "user:.claude/settings.json user:"+filepath.Base(dshHome)+"/settings.json project:.claude/settings.json" {
		t.Fatalf("layers %s", got)
	}
	env := settings.Key[map[string]string]{Name: "env", Merge: settings.MergeMaps[map[string]string]}.Get(c)
	if env["A"] != "claude-user" || env["B"] != "dsh-user" || env["C"] != "claude-project" {
		t.Fatalf("env %v", env)
	}
	pc := permission.FromSettings(c)
	if pc.Mode != permission.ModeAcceptEdits {
		t.Fatalf("mode %s (the project's file is above the user's)", pc.Mode)
	}
	var sources []string
	for _, r := range pc.Rules {
		sources = append(sources, r.Text+"@"+r.Source)
	}
	if len(pc.Rules) != 2 || !strings.HasSuffix(sources[0], filepath.Join(home, ".claude", "settings.json")) {
		t.Fatalf("rules %v", sources)
	}
	var warned bool
	for _, w := range c.Warnings() {
		if strings.Contains(w, "settings.local.json") && strings.Contains(w, "not valid JSON") {
			warned = true
		}
	}
	if !warned || len(c.Skipped()) != 1 {
		t.Fatalf("malformed file: warnings %v skipped %v", c.Warnings(), c.Skipped())
	}
	if n := c.Notes(); len(n) != 1 || n[0].Text != "theme: not used by dsh" {
		t.Fatalf("notes %v", n)
	}

	u := load(false)
	if pc := permission.FromSettings(u); pc.Mode != permission.ModePlan || len(pc.Rules) != 1 {
		t.Fatalf("untrusted: mode %s rules %v", pc.Mode, pc.Rules)
	}
	if len(u.Ignored()) != 1 {
		t.Fatalf("ignored %v", u.Ignored())
	}
}
