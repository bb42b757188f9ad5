package bundles

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dshq/dsh/doctor"
)

// testdata holds the formats as Claude Code writes and documents them: a
// marketplace (.claude-plugin/marketplace.json with metadata.pluginRoot, a
// relative source, a bare one, a GitHub one and one escaping the
// marketplace), a plugin with every component in the standard layout and
// in manifest fields (a path list, inline hooks, an MCP file), a plugin
// without a manifest, and Claude Code's own records under
// ~/.claude/plugins (installed_plugins.json version 2,
// known_marketplaces.json) with ${TESTDATA} standing for this directory.

func testdata(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// home is a temporary home whose ~/.claude/settings.json is settings and
// whose ~/.claude/plugins holds the recorded files from testdata.
func home(t *testing.T, settings any, records bool) string {
	t.Helper()
	h := t.TempDir()
	write(t, filepath.Join(h, ".claude", "settings.json"), settings)
	if records {
		for _, f := range []string{"installed_plugins.json", "known_marketplaces.json"} {
			b, err := os.ReadFile(filepath.Join(testdata(t), "claude-plugins", f))
			if err != nil {
				t.Fatal(err)
			}
			b = []byte(strings.ReplaceAll(string(b), "${TESTDATA}", testdata(t)))
			if err := os.MkdirAll(filepath.Join(h, ".claude", "plugins"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(h, ".claude", "plugins", f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return h
}

func write(t *testing.T, path string, v any) {
	t.Helper()
	b, ok := v.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func local(t *testing.T) map[string]any {
	return map[string]any{"team-tools": map[string]any{"source": map[string]string{"source": "directory", "path": filepath.Join(testdata(t), "marketplace")}}}
}

func names(f Found) []string {
	var out []string
	for _, b := range f.Bundles {
		out = append(out, b.Name)
	}
	return out
}

func messages(f Found) string {
	var b strings.Builder
	for _, x := range f.Findings {
		b.WriteString(string(x.Severity) + " " + x.Subject + ": " + x.Message + "\n")
	}
	return b.String()
}

func TestFindThroughADirectoryMarketplace(t *testing.T) {
	h := home(t, map[string]any{
		"enabledPlugins": map[string]bool{"review@team-tools": true, "lint@team-tools": true, "remote@team-tools": true,
			"escape@team-tools": true, "off@team-tools": false, "ghost@nowhere": true, "no-at-sign": true},
		"extraKnownMarketplaces": local(t),
	}, false)
	f := Find(Locations{UserHome: h}, false)
	if got := names(f); !slices.Equal(got, []string{"lint", "review"}) {
		t.Fatalf("found %v\n%s", got, messages(f))
	}
	msgs := messages(f)
	for _, want := range []string{
		"plugin remote@team-tools: marketplace team-tools: ", "a github acme/remote-plugin source, which dsh does not download",
		"plugin escape@team-tools", "is outside the marketplace",
		"plugin ghost@nowhere: marketplace nowhere is not declared",
		`"no-at-sign" is not a plugin id`,
		`plugin review: "lspServers" is not supported by dsh`,
	} {
		if !strings.Contains(msgs, want) {
			t.Errorf("findings lack %q:\n%s", want, msgs)
		}
	}
	if strings.Contains(msgs, "off@") {
		t.Errorf("a plugin switched off is reported:\n%s", msgs)
	}

	review := f.Bundles[1]
	root := filepath.Join(testdata(t), "marketplace", "plugins", "review")
	if review.Root != root || review.Version != "2.1.0" || review.ID != "review@team-tools" || review.Project ||
		review.EnabledBy != filepath.Join(h, ".claude", "settings.json") {
		t.Fatalf("review: %+v", review)
	}
	if got := review.CommandDirs(); !slices.Equal(got, []string{filepath.Join(root, "commands"), filepath.Join(root, "extra-commands")}) {
		t.Errorf("command dirs %v", got)
	}
	if got := review.AgentDirs(); !slices.Equal(got, []string{filepath.Join(root, "agents")}) {
		t.Errorf("agent dirs %v", got)
	}
	hooks, probs := review.Hooks()
	if len(probs) > 0 || len(hooks) != 2 || hooks[0].Source != filepath.Join(root, "hooks", "hooks.json") ||
		!strings.Contains(string(hooks[1].JSON), `"Stop"`) {
		t.Errorf("hooks %q %v", hooks, probs)
	}
	servers, probs := review.MCPServers()
	if len(probs) > 0 || len(servers) != 2 {
		t.Fatalf("servers %v %v", servers, probs)
	}
	if s := string(servers["review-db"]); !strings.Contains(s, `"`+root+`/bin/db-server"`) || strings.Contains(s, "CLAUDE_PLUGIN_ROOT") {
		t.Errorf("review-db: ${CLAUDE_PLUGIN_ROOT} not replaced: %s", s)
	}
	cs := Servers(review, "/project")
	if len(cs) != 2 || cs[0].Name != "plugin:review:review-db" || cs[0].Env[RootVariable] != root || cs[0].Env["DB_PATH"] != root+"/data" ||
		cs[0].Dir != "" || cs[0].Source != "plugin review" || cs[1].Name != "plugin:review:review-docs" {
		t.Errorf("servers in dsh's shape: %+v", cs)
	}

	lint := f.Bundles[0]
	if lint.Name != "lint" || lint.Root != filepath.Join(testdata(t), "marketplace", "lint") {
		t.Errorf("a plugin without a manifest: %+v", lint)
	}
}

// Plugins Claude Code installed (installed_plugins.json) or whose
// marketplace it cloned (known_marketplaces.json) work without declaring
// anything in settings.
func TestFindWhatClaudeCodeInstalled(t *testing.T) {
	h := home(t, map[string]any{"enabledPlugins": map[string]bool{
		"installed@claude-plugins-official": true, "cloned@claude-plugins-official": true}}, true)
	f := Find(Locations{UserHome: h}, false)
	if got := names(f); !slices.Equal(got, []string{"cloned", "installed"}) {
		t.Fatalf("found %v\n%s", got, messages(f))
	}
	if f.Bundles[1].Root != filepath.Join(testdata(t), "cache", "installed", "1.0.0") {
		t.Errorf("installed at %s", f.Bundles[1].Root)
	}
}

// A project's enabledPlugins and marketplaces count only once it is
// trusted; then its settings outrank the user's (a project's false
// switches the user's plugin off), and its plugins are marked Project.
func TestFindProjectNeedsTrust(t *testing.T) {
	h := home(t, map[string]any{"enabledPlugins": map[string]bool{"review@team-tools": true}, "extraKnownMarketplaces": local(t)}, false)
	proj := t.TempDir()
	write(t, filepath.Join(proj, ".claude", "settings.json"), map[string]any{"enabledPlugins": map[string]bool{"lint@team-tools": true}})
	write(t, filepath.Join(proj, ".claude", "settings.local.json"), map[string]any{"enabledPlugins": map[string]bool{"review@team-tools": false}})

	f := Find(Locations{UserHome: h, Project: proj}, false)
	if got := names(f); !slices.Equal(got, []string{"review"}) {
		t.Fatalf("untrusted: %v\n%s", got, messages(f))
	}
	var skipped []string
	for _, x := range f.Findings {
		if x.Severity == doctor.Warning && strings.Contains(x.Message, "count once the project is trusted") {
			skipped = append(skipped, x.Subject)
		}
	}
	if !slices.Equal(skipped, []string{filepath.Join(proj, ".claude", "settings.json"), filepath.Join(proj, ".claude", "settings.local.json")}) {
		t.Errorf("skipped files %v\n%s", skipped, messages(f))
	}

	f = Find(Locations{UserHome: h, Project: proj}, true)
	if got := names(f); !slices.Equal(got, []string{"lint"}) || !f.Bundles[0].Project {
		t.Fatalf("trusted: %v %+v\n%s", got, f.Bundles, messages(f))
	}
}

// A directory given by path is enabled as the user's own; two plugins of
// one name are refused rather than merged.
func TestFindByPath(t *testing.T) {
	lint := filepath.Join(testdata(t), "marketplace", "lint")
	h := home(t, map[string]any{"enabledPlugins": map[string]bool{"lint@team-tools": true}, "extraKnownMarketplaces": local(t)}, false)
	f := Find(Locations{UserHome: h, Dirs: []string{lint, filepath.Join(testdata(t), "nope")}}, false)
	if got := names(f); !slices.Equal(got, []string{"lint"}) || f.Bundles[0].EnabledBy != "--plugin-dir" {
		t.Fatalf("%v %+v\n%s", got, f.Bundles, messages(f))
	}
	msgs := messages(f)
	if !strings.Contains(msgs, "nope is not a directory") || !strings.Contains(msgs, `a plugin named "lint" is already enabled`) {
		t.Fatalf("findings:\n%s", msgs)
	}
}

// A manifest that is not JSON, and component fields of the wrong shape,
// are reported with the file; the plugin's standard layout still counts.
func TestManifestProblems(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "bad", ".claude-plugin", "plugin.json"), []byte("{not json"))
	write(t, filepath.Join(dir, "odd", ".claude-plugin", "plugin.json"), map[string]any{
		"name": "odd", "commands": 42, "agents": "../../etc", "skills": "./one-file.md", "hooks": "./missing.json"})
	write(t, filepath.Join(dir, "odd", "one-file.md"), []byte("x"))
	f := Find(Locations{Dirs: []string{filepath.Join(dir, "bad"), filepath.Join(dir, "odd")}}, false)
	if got := names(f); !slices.Equal(got, []string{"odd"}) {
		t.Fatalf("%v\n%s", got, messages(f))
	}
	msgs := messages(f)
	for _, want := range []string{"plugin.json is not valid JSON", `"commands" is not a path or a list of paths`,
		`agents path "../../etc" is outside the plugin`, "one-file.md is not a directory", "missing.json: no such file"} {
		if !strings.Contains(msgs, want) {
			t.Errorf("findings lack %q:\n%s", want, msgs)
		}
	}
}
