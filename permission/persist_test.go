package permission

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSaveRuleWritesTheLocalSettingsAndHoldsAtOnce(t *testing.T) {
	e := newEnv(t)
	c := mustNew(t, Config{Home: e.home, Cwd: e.root})
	path := LocalSettingsFile(e.root)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"model":"x/y","permissions":{"deny":["Bash(rm:*)"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if d := c.Decide(context.Background(), bashCall("git log -3"), e.root); d.Behavior != Ask {
		t.Fatalf("before: %+v", d)
	}
	for range 2 { // the second save changes nothing
		if err := c.SaveRule(path, Rule{Text: "Bash(git log:*)", Behavior: Allow}); err != nil {
			t.Fatal(err)
		}
	}
	if d := c.Decide(context.Background(), bashCall("git log -3"), e.root); d.Behavior != Allow || d.Source != path {
		t.Fatalf("after: %+v", d)
	}
	var doc struct {
		Model       string              `json:"model"`
		Permissions map[string][]string `json:"permissions"`
	}
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Model != "x/y" || strings.Join(doc.Permissions["deny"], ",") != "Bash(rm:*)" || strings.Join(doc.Permissions["allow"], ",") != "Bash(git log:*)" {
		t.Fatalf("file: %s", b)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	n := 0
	for _, r := range c.Rules("") {
		if r.Text == "Bash(git log:*)" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("rules %v", c.Rules(""))
	}
}

func TestSaveRuleLeavesABrokenFileAlone(t *testing.T) {
	e := newEnv(t)
	c := mustNew(t, Config{Home: e.home, Cwd: e.root})
	path := filepath.Join(t.TempDir(), "settings.local.json")
	if err := os.WriteFile(path, []byte(`{"permissions": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	err := c.SaveRule(path, Rule{Text: "Bash(git log:*)", Behavior: Allow})
	if err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Fatalf("err %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"permissions": [` {
		t.Fatalf("the file changed: %s", b)
	}
	if d := c.Decide(context.Background(), bashCall("git log -3"), e.root); d.Behavior == Allow {
		t.Fatal("a rule that was not saved holds")
	}
}
