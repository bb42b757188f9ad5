package permission

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshq/dsh/settings"
)

func TestModes(t *testing.T) {
	e := newEnv(t)
	if err := os.Symlink(e.outside, filepath.Join(e.root, "link")); err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Home: e.home, Cwd: e.root,
		Rules: append(rules(Deny, "/p/.dsh/settings.json", "Read(~/.ssh/**)", "Edit(.env)"),
			rules(Allow, userSettings, "Edit(docs/**)")...),
	}
	in := filepath.Join(e.root, "src", "main.go")
	out := filepath.Join(e.outside, "notes.txt")
	type want [4]Behavior // default, acceptEdits, plan, bypassPermissions
	A, Q, D := Allow, Ask, Deny
	tests := []struct {
		name string
		tool string
		args map[string]string
		want want
	}{
		{"read inside", "read", map[string]string{"file_path": in}, want{A, A, A, A}},
		{"read inside, relative", "read", map[string]string{"file_path": "src/main.go"}, want{A, A, A, A}},
		{"read outside", "read", map[string]string{"file_path": out}, want{Q, Q, Q, A}},
		{"read ../ escaping the root", "read", map[string]string{"file_path": "../elsewhere/notes.txt"}, want{Q, Q, Q, A}},
		{"read through a symlink that leaves the workspace", "read", map[string]string{"file_path": "link/notes.txt"}, want{Q, Q, Q, A}},
		{"read denied by rule", "read", map[string]string{"file_path": filepath.Join(e.home, ".ssh", "id_rsa")}, want{D, D, D, D}},
		{"Claude alias Read", "Read", map[string]string{"file_path": in}, want{A, A, A, A}},
		{"write inside", "write", map[string]string{"file_path": "src/new.go"}, want{Q, A, D, A}},
		{"write outside", "write", map[string]string{"file_path": out}, want{Q, Q, D, A}},
		{"edit inside", "edit", map[string]string{"file_path": in}, want{Q, A, D, A}},
		{"edit through a symlink to outside", "edit", map[string]string{"file_path": "link/notes.txt"}, want{Q, Q, D, A}},
		{"edit allowed by Edit(docs/**)", "edit", map[string]string{"file_path": "docs/guide.md"}, want{A, A, D, A}},
		{"write covered by Edit(docs/**)", "write", map[string]string{"file_path": "docs/new.md"}, want{A, A, D, A}},
		{"write denied by Edit(.env)", "write", map[string]string{"file_path": ".env"}, want{D, D, D, D}},
		{"write without a path", "write", map[string]string{"content": "x"}, want{Q, Q, Q, Q}},
		{"glob without a path searches the cwd", "glob", map[string]string{"pattern": "**/*.go"}, want{A, A, A, A}},
		{"glob with a literal subdirectory", "glob", map[string]string{"pattern": "src/**/*.go"}, want{A, A, A, A}},
		// The glob tool searches a pattern's literal leading directories.
		{"glob pattern naming an outside directory", "glob", map[string]string{"pattern": e.outside + "/**/*.txt"}, want{Q, Q, Q, A}},
		{"glob pattern climbing out with ..", "glob", map[string]string{"pattern": "../elsewhere/*"}, want{Q, Q, Q, A}},
		{"glob pattern into a denied directory", "glob", map[string]string{"pattern": filepath.Join(e.home, ".ssh") + "/*"}, want{D, D, D, D}},
		{"grep outside", "grep", map[string]string{"pattern": "x", "path": e.outside}, want{Q, Q, Q, A}},
		{"ls a denied directory", "ls", map[string]string{"path": filepath.Join(e.home, ".ssh")}, want{D, D, D, D}},
		{"grep above a denied directory", "grep", map[string]string{"pattern": "KEY", "path": e.home}, want{Q, Q, Q, Q}},
		{"bash command", "bash", map[string]string{"command": "make"}, want{Q, Q, D, A}},
		{"bash read-only command without a rule", "bash", map[string]string{"command": "git status"}, want{Q, Q, Q, A}},
		{"bash redirection inside", "bash", map[string]string{"command": "echo now > src/now.txt"}, want{Q, A, D, A}},
		{"exit_plan_mode", "exit_plan_mode", map[string]string{"plan": "1. do it"}, want{D, D, Q, D}},
		{"todo_write", "todo_write", map[string]string{}, want{A, A, A, A}},
		{"web_fetch", "web_fetch", map[string]string{"url": "https://example.com/x"}, want{Q, Q, Q, A}},
		{"web_search", "web_search", map[string]string{"query": "go"}, want{Q, Q, Q, A}},
		{"unknown MCP tool", "mcp__github__create_issue", map[string]string{}, want{Q, Q, D, A}},
	}
	for i, m := range Modes {
		c := cfg
		c.Mode, c.ModeSource = m, settings.LayerUser
		ch := mustNew(t, c)
		for _, tt := range tests {
			d := ch.Decide(context.Background(), call(tt.tool, tt.args), e.root)
			if d.Behavior != tt.want[i] {
				t.Errorf("%s in %s: got %s, want %s (%s)", tt.name, m, d.Behavior, tt.want[i], d.Reason)
			}
		}
	}
}

func TestModeReasonsAndBy(t *testing.T) {
	e := newEnv(t)
	c := mustNew(t, Config{Mode: ModeAcceptEdits, ModeSource: settings.LayerUser, Home: e.home, Cwd: e.root})
	d := c.Decide(context.Background(), call("edit", map[string]string{"file_path": "src/a.go"}), e.root)
	if d.Behavior != Allow || d.By() != "permission:mode acceptEdits" || !strings.Contains(d.Reason, "acceptEdits") {
		t.Errorf("%+v by %s", d, d.By())
	}
	d = c.Decide(context.Background(), call("read", map[string]string{"file_path": filepath.Join(e.outside, "x")}), e.root)
	if d.Behavior != Ask || !strings.Contains(d.Reason, "outside the workspace") || len(d.Suggest) != 1 || d.Suggest[0] != "Read(/"+e.outside+"/**)" {
		t.Errorf("%+v", d)
	}
}

func TestAdditionalDirectories(t *testing.T) {
	e := newEnv(t)
	c := mustNew(t, Config{Mode: ModeAcceptEdits, Home: e.home, Cwd: e.root, Roots: []string{"../elsewhere"}})
	for _, tool := range []string{"read", "write"} {
		d := c.Decide(context.Background(), call(tool, map[string]string{"file_path": filepath.Join(e.outside, "x")}), e.root)
		if d.Behavior != Allow {
			t.Errorf("%s in an added directory: %+v", tool, d)
		}
	}
	d := c.Decide(context.Background(), call("read", map[string]string{"file_path": filepath.Join(e.home, "x")}), e.root)
	if d.Behavior != Ask {
		t.Errorf("read outside every root: %+v", d)
	}
}

func TestProjectCannotChooseBypass(t *testing.T) {
	for _, layer := range []settings.Layer{settings.LayerProject, settings.LayerLocal} {
		c, err := New(Config{Mode: ModeBypass, ModeSource: layer})
		if err != nil {
			t.Fatal(err)
		}
		if c.Mode() != ModeDefault {
			t.Errorf("%s bypass: mode %s", layer, c.Mode())
		}
		if w := c.Warnings(); len(w) != 1 || !strings.Contains(w[0], "bypassPermissions") || !strings.Contains(w[0], string(layer)) {
			t.Errorf("%s bypass: warnings %q", layer, w)
		}
	}
	for _, layer := range []settings.Layer{settings.LayerUser, settings.LayerSettingsFile, settings.LayerCLI} {
		c := mustNew(t, Config{Mode: ModeBypass, ModeSource: layer})
		if c.Mode() != ModeBypass || len(c.Warnings()) != 0 {
			t.Errorf("%s bypass: mode %s, warnings %q", layer, c.Mode(), c.Warnings())
		}
	}
	// From settings: the project's bypass is skipped and the user's mode
	// below it applies.
	user := Key.In(settings.LayerUser, "/home/u/.dsh/settings.json", Settings{DefaultMode: "acceptEdits", Allow: []string{"Bash(ls:*)"}})
	project := Key.In(settings.LayerProject, "/p/.dsh/settings.json", Settings{DefaultMode: "bypassPermissions", Deny: []string{"Bash(rm:*)"}, AdditionalDirectories: []string{"../lib"}})
	sc, err := settings.From(settings.Schema{Key}, true, user, project)
	if err != nil {
		t.Fatal(err)
	}
	cfg := FromSettings(sc)
	if cfg.Mode != ModeAcceptEdits || cfg.ModeSource != settings.LayerUser {
		t.Errorf("mode %s from %s", cfg.Mode, cfg.ModeSource)
	}
	if w := sc.Warnings(); len(w) != 1 || !strings.Contains(w[0], "/p/.dsh/settings.json") {
		t.Errorf("warnings %q", w)
	}
	want := []Rule{{"Bash(ls:*)", Allow, "/home/u/.dsh/settings.json"}, {"Bash(rm:*)", Deny, "/p/.dsh/settings.json"}}
	if len(cfg.Rules) != 2 || cfg.Rules[0] != want[0] || cfg.Rules[1] != want[1] || len(cfg.Roots) != 1 {
		t.Errorf("rules %v roots %v", cfg.Rules, cfg.Roots)
	}
	flag := Key.In(settings.LayerSettingsFile, "/tmp/extra.json", Settings{DefaultMode: "bypassPermissions"})
	sc, err = settings.From(settings.Schema{Key}, true, user, flag)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := FromSettings(sc); cfg.Mode != ModeBypass || len(sc.Warnings()) != 0 {
		t.Errorf("a --settings file the user named may choose bypass: %s %q", cfg.Mode, sc.Warnings())
	}
}

func TestSetModeAndPlanReturn(t *testing.T) {
	c := mustNew(t, Config{Mode: ModeAcceptEdits})
	var changes []ModeChange
	c.ModeChanged.Listen(func(_ context.Context, mc ModeChange) error { changes = append(changes, mc); return nil })
	if err := c.SetMode("yolo"); err == nil {
		t.Error("unknown mode accepted")
	}
	if err := c.SetMode(ModePlan); err != nil {
		t.Fatal(err)
	}
	res, err := (&exitPlanTool{c: c}).Run(context.Background(), call(ExitPlanTool, map[string]string{"plan": "p"}))
	if err != nil || res.IsError {
		t.Fatal(err, res)
	}
	if c.Mode() != ModeAcceptEdits {
		t.Errorf("after the plan: %s, want the mode before plan", c.Mode())
	}
	if len(changes) != 2 || changes[1] != (ModeChange{From: ModePlan, To: ModeAcceptEdits, By: ExitPlanTool}) {
		t.Errorf("changes %+v", changes)
	}
	// Starting in plan mode returns to default.
	c = mustNew(t, Config{Mode: ModePlan})
	if _, err := (&exitPlanTool{c: c}).Run(context.Background(), call(ExitPlanTool, map[string]string{"plan": "p"})); err != nil {
		t.Fatal(err)
	}
	if c.Mode() != ModeDefault {
		t.Errorf("after a plan started in plan mode: %s", c.Mode())
	}
}
