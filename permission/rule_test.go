package permission

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dshq/dsh/settings"

	"github.com/dshq/dsh/session"
)

func TestRuleForms(t *testing.T) {
	e := newEnv(t)
	A, Q, D := Allow, Ask, Deny
	tests := []struct {
		name string
		rule Rule
		tool string
		args map[string]string
		want Behavior
	}{
		// Path forms.
		{"./x is relative to the root", Rule{Text: "Edit(./src/**)", Behavior: A}, "edit", map[string]string{"file_path": "src/a/b.go"}, A},
		{"x is relative to the root", Rule{Text: "Edit(src/**)", Behavior: A}, "edit", map[string]string{"file_path": filepath.Join(e.root, "src", "b.go")}, A},
		{"relative rule does not match elsewhere", Rule{Text: "Edit(src/**)", Behavior: A}, "edit", map[string]string{"file_path": "docs/src/x"}, Q},
		{"/abs is absolute", Rule{Text: "Read(" + e.outside + "/**)", Behavior: A}, "read", map[string]string{"file_path": filepath.Join(e.outside, "a", "b")}, A},
		{"//abs is Claude's absolute form", Rule{Text: "Read(/" + e.outside + "/*.txt)", Behavior: A}, "read", map[string]string{"file_path": filepath.Join(e.outside, "n.txt")}, A},
		{"single star stays in one directory", Rule{Text: "Read(/" + e.outside + "/*.txt)", Behavior: A}, "read", map[string]string{"file_path": filepath.Join(e.outside, "d", "n.txt")}, Q},
		{"~/x is under home", Rule{Text: "Read(~/notes/**)", Behavior: A}, "read", map[string]string{"file_path": filepath.Join(e.home, "notes", "a.md")}, A},
		{"a directory covers its contents", Rule{Text: "Read(~/.ssh)", Behavior: D}, "read", map[string]string{"file_path": filepath.Join(e.home, ".ssh", "id_rsa")}, D},
		{"doublestar in the middle", Rule{Text: "Edit(**/*.gen.go)", Behavior: D}, "write", map[string]string{"file_path": "src/x/y.gen.go"}, D},
		{"Read rules cover grep", Rule{Text: "Read(~/.ssh/**)", Behavior: D}, "grep", map[string]string{"pattern": "x", "path": filepath.Join(e.home, ".ssh")}, D},
		{"Read rules cover glob and ls", Rule{Text: "Read(~/.ssh/**)", Behavior: D}, "ls", map[string]string{"path": filepath.Join(e.home, ".ssh")}, D},
		{"Edit rules cover write", Rule{Text: "Edit(docs/**)", Behavior: A}, "write", map[string]string{"file_path": "docs/new.md"}, A},
		{"Write rules do not cover edit", Rule{Text: "Write(docs/**)", Behavior: A}, "edit", map[string]string{"file_path": "docs/new.md"}, Q},
		{"Grep rules cover only grep", Rule{Text: "Grep(" + e.outside + ")", Behavior: A}, "glob", map[string]string{"pattern": "*", "path": e.outside}, Q},
		{"bare Edit allows every edit", Rule{Text: "Edit", Behavior: A}, "edit", map[string]string{"file_path": filepath.Join(e.outside, "x")}, A},
		{"bare Read denies every read", Rule{Text: "Read", Behavior: D}, "read", map[string]string{"file_path": "src/a.go"}, D},
		// dsh names are aliases of the Claude names.
		{"bash alias", Rule{Text: "bash(make:*)", Behavior: A}, "bash", map[string]string{"command": "make all"}, A},
		{"edit alias", Rule{Text: "edit(docs/**)", Behavior: A}, "write", map[string]string{"file_path": "docs/x"}, A},
		{"read alias", Rule{Text: "read(~/.ssh/**)", Behavior: D}, "read", map[string]string{"file_path": filepath.Join(e.home, ".ssh", "k")}, D},
		{"web_fetch alias", Rule{Text: "web_fetch(domain:go.dev)", Behavior: A}, "web_fetch", map[string]string{"url": "https://go.dev/doc"}, A},
		{"todo_write alias", Rule{Text: "todo_write", Behavior: D}, "todo_write", map[string]string{}, D},
		{"TodoWrite", Rule{Text: "TodoWrite", Behavior: D}, "todo_write", map[string]string{}, D},
		{"Claude name on a call", Rule{Text: "Bash(make:*)", Behavior: A}, "Bash", map[string]string{"command": "make"}, A},
		// WebFetch domains.
		{"domain", Rule{Text: "WebFetch(domain:example.com)", Behavior: A}, "web_fetch", map[string]string{"url": "https://example.com/a?b"}, A},
		{"domain is exact", Rule{Text: "WebFetch(domain:example.com)", Behavior: A}, "web_fetch", map[string]string{"url": "https://api.example.com/"}, Q},
		{"subdomains", Rule{Text: "WebFetch(domain:*.example.com)", Behavior: A}, "web_fetch", map[string]string{"url": "https://api.example.com/"}, A},
		{"domain deny", Rule{Text: "WebFetch(domain:evil.test)", Behavior: D}, "web_fetch", map[string]string{"url": "http://EVIL.test:8080/x"}, D},
		{"bare WebFetch", Rule{Text: "WebFetch", Behavior: A}, "web_fetch", map[string]string{"url": "https://x.y/"}, A},
		// MCP.
		{"mcp tool", Rule{Text: "mcp__github__create_issue", Behavior: A}, "mcp__github__create_issue", map[string]string{}, A},
		{"mcp tool is exact", Rule{Text: "mcp__github__create_issue", Behavior: A}, "mcp__github__delete_repo", map[string]string{}, Q},
		{"mcp server", Rule{Text: "mcp__github", Behavior: A}, "mcp__github__list_issues", map[string]string{}, A},
		{"mcp server star", Rule{Text: "mcp__github__*", Behavior: D}, "mcp__github__list_issues", map[string]string{}, D},
		{"mcp server does not cover a prefix", Rule{Text: "mcp__git", Behavior: A}, "mcp__github__list_issues", map[string]string{}, Q},
		// Plugin tools.
		{"plugin tool", Rule{Text: "deploy", Behavior: A}, "deploy", map[string]string{}, A},
		// Bash(*) is Bash.
		{"Bash(*)", Rule{Text: "Bash(*)", Behavior: A}, "bash", map[string]string{"command": "anything goes"}, A},
		{"Bash(ls *)", Rule{Text: "Bash(ls *)", Behavior: A}, "bash", map[string]string{"command": "ls -la src"}, A},
		{"quoted words", Rule{Text: `Bash(echo "a b":*)`, Behavior: D}, "bash", map[string]string{"command": "echo 'a b' c"}, D},
	}
	for _, tt := range tests {
		tt.rule.Source = "test"
		c := mustNew(t, Config{Rules: []Rule{tt.rule}, Home: e.home, Cwd: e.root})
		if d := c.Decide(context.Background(), call(tt.tool, tt.args), e.root); d.Behavior != tt.want {
			t.Errorf("%s: %s on %s %v: got %s, want %s (%s)", tt.name, tt.rule.Text, tt.tool, tt.args, d.Behavior, tt.want, d.Reason)
		}
	}
}

func TestPrecedenceDenyAskAllow(t *testing.T) {
	e := newEnv(t)
	rs := append(rules(Allow, "u", "Bash(git:*)", "Edit(docs/**)"), rules(Ask, "p", "Bash(git push:*)", "Edit(docs/secret/**)")...)
	rs = append(rs, rules(Deny, "l", "Bash(git push --force:*)", "Edit(docs/secret/keys)")...)
	for _, m := range []Mode{ModeDefault, ModeBypass} {
		c := mustNew(t, Config{Mode: m, ModeSource: settings.LayerUser, Rules: rs, Home: e.home, Cwd: e.root})
		for _, tt := range []struct {
			tool, key, val string
			want           Behavior
		}{
			{"bash", "command", "git log", Allow},
			{"bash", "command", "git push origin", Ask},
			{"bash", "command", "git push --force origin", Deny},
			{"edit", "file_path", "docs/a.md", Allow},
			{"edit", "file_path", "docs/secret/a.md", Ask},
			{"edit", "file_path", "docs/secret/keys", Deny},
		} {
			if d := c.Decide(context.Background(), call(tt.tool, map[string]string{tt.key: tt.val}), e.root); d.Behavior != tt.want {
				t.Errorf("%s: %s %s: got %s want %s (%s)", m, tt.tool, tt.val, d.Behavior, tt.want, d.Reason)
			}
		}
	}
}

func TestSymlinkedDenyIsHeldEverySpelling(t *testing.T) {
	e := newEnv(t)
	// The home directory is reached through a symlink: a rule written
	// against the link holds for the resolved path and vice versa.
	link := filepath.Join(filepath.Dir(e.home), "homelink")
	if err := os.Symlink(e.home, link); err != nil {
		t.Fatal(err)
	}
	c := mustNew(t, Config{Rules: rules(Deny, "u", "Read(~/.ssh/**)"), Home: link, Cwd: e.root})
	for _, p := range []string{filepath.Join(link, ".ssh", "id_rsa"), filepath.Join(e.home, ".ssh", "id_rsa")} {
		if d := c.Decide(context.Background(), call("read", map[string]string{"file_path": p}), e.root); d.Behavior != Deny {
			t.Errorf("%s: %s", p, d.Behavior)
		}
	}
	// A symlink inside the workspace pointing at a denied file.
	if err := os.Symlink(filepath.Join(e.home, ".ssh", "id_rsa"), filepath.Join(e.root, "innocent.txt")); err != nil {
		t.Fatal(err)
	}
	if d := c.Decide(context.Background(), call("read", map[string]string{"file_path": "innocent.txt"}), e.root); d.Behavior != Deny {
		t.Errorf("symlink to a denied file: %s", d.Behavior)
	}
	// An allow rule does not extend through a symlink to the outside.
	if err := os.Symlink(e.outside, filepath.Join(e.root, "src", "ext")); err != nil {
		t.Fatal(err)
	}
	c = mustNew(t, Config{Rules: rules(Allow, "u", "Edit(src/**)"), Home: e.home, Cwd: e.root})
	if d := c.Decide(context.Background(), call("edit", map[string]string{"file_path": "src/ext/x.go"}), e.root); d.Behavior != Ask {
		t.Errorf("allow through a symlink: %s", d.Behavior)
	}
	// A dangling symlink: writing through it creates its target.
	if err := os.Symlink(filepath.Join(e.outside, "new.txt"), filepath.Join(e.root, "dangling")); err != nil {
		t.Fatal(err)
	}
	c = mustNew(t, Config{Mode: ModeAcceptEdits, Home: e.home, Cwd: e.root})
	if d := c.Decide(context.Background(), call("write", map[string]string{"file_path": "dangling"}), e.root); d.Behavior != Ask {
		t.Errorf("write through a dangling link to outside: %s", d.Behavior)
	}
}

func TestRuntimeRules(t *testing.T) {
	e := newEnv(t)
	c := mustNew(t, Config{Rules: rules(Allow, "/u/settings.json", "Bash(ls:*)"), Home: e.home, Cwd: e.root})
	ctx := context.Background()
	if err := c.AddRule(Rule{Text: "Bash(make:*)", Behavior: Allow, Source: "/p/.dsh/settings.local.json"}); err != nil {
		t.Fatal(err)
	}
	if err := c.AddRule(Rule{Text: "Bash(", Behavior: Allow}); err == nil {
		t.Error("invalid rule accepted")
	}
	if d := c.Decide(ctx, bashCall("make test"), e.root); d.Behavior != Allow || d.Source != "/p/.dsh/settings.local.json" {
		t.Errorf("%+v", d)
	}
	got := c.Rules("")
	if len(got) != 2 || got[1] != (Rule{"Bash(make:*)", Allow, "/p/.dsh/settings.local.json"}) {
		t.Errorf("rules %v", got)
	}
	if !c.RemoveRule(Rule{Text: "Bash(make:*)", Behavior: Allow}) || c.RemoveRule(Rule{Text: "Bash(make:*)", Behavior: Allow}) {
		t.Error("RemoveRule")
	}
	if d := c.Decide(ctx, bashCall("make test"), e.root); d.Behavior != Ask {
		t.Errorf("after removal: %+v", d)
	}
}

func TestSubagentSessionsInheritTheirParentsRules(t *testing.T) {
	e := newEnv(t)
	c := mustNew(t, Config{Home: e.home, Cwd: e.root})
	parent := []session.Event{{Type: EventRule, Data: []byte(`{"rule":"Bash(make:*)","behavior":"allow","source":"session"}`)}}
	if err := c.RestoreSession("parent", "", parent); err != nil {
		t.Fatal(err)
	}
	if err := c.RestoreSession("child", "parent", nil); err != nil {
		t.Fatal(err)
	}
	in := bashCall("make")
	for sid, want := range map[string]Behavior{"parent": Allow, "child": Allow, "stranger": Ask} {
		in.Host = &fakeHost{cwd: e.root, sid: sid}
		if d := c.Decide(context.Background(), in, ""); d.Behavior != want {
			t.Errorf("%s: %s", sid, d.Behavior)
		}
	}
	if got := c.Rules("child"); len(got) != 1 {
		t.Errorf("Rules(child) = %v", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	e := newEnv(t)
	c := mustNew(t, Config{Rules: bashRules(), Home: e.home, Cwd: e.root})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				in := bashCall("git status && make")
				in.Host = &fakeHost{cwd: e.root, sid: fmt.Sprint("s", i%2)}
				c.Decide(context.Background(), in, "")
				switch j % 5 {
				case 0:
					_ = c.SetMode(Modes[j%len(Modes)])
				case 1:
					_ = c.AddRule(Rule{Text: fmt.Sprintf("Bash(x%d)", j), Behavior: Allow, Source: "cli"})
				case 2:
					_ = c.RestoreSession(fmt.Sprint("s", i%2), "", nil)
				case 3:
					c.Rules("s0")
				case 4:
					c.remember(fmt.Sprint("s", i%2), []string{"Bash(make)"}, Allow)
				}
			}
		}()
	}
	wg.Wait()
}

func TestReadDenied(t *testing.T) {
	e := newEnv(t)
	c := mustNew(t, Config{Rules: append(rules(Deny, "p", "Read(./.env)", "Read(~/.ssh/**)"), rules(Deny, "p", "Edit(src/**)")...), Home: e.home, Cwd: e.root})
	for p, want := range map[string]bool{".env": true, filepath.Join(e.home, ".ssh", "id_rsa"): true, "src/main.go": false, "README.md": false} {
		if got := c.ReadDenied("", e.root, p); got != want {
			t.Errorf("%s: %v", p, got)
		}
	}
}
