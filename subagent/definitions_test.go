package subagent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Claude Code's disallowedTools is read (inline and as a block list);
// front matter keys dsh does not use are noted, not dropped silently; a
// later directory's agent shadows an earlier one, and Load says which.
func TestLoadDisallowedNotesAndShadows(t *testing.T) {
	user, proj := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(user, "a.md"), []byte("---\nname: a\ndescription: old\n---\nOLD\n"), 0o644)
	os.WriteFile(filepath.Join(proj, "a.md"), []byte("---\nname: a\ndescription: new\ndisallowedTools: Bash, Write\ncolor: red\npermissionMode: plan\nfuture: x\n---\nNEW\n"), 0o644)
	os.WriteFile(filepath.Join(proj, "b.md"), []byte("---\nname: b\ndisallowedTools:\n  - Edit\n---\nB\n"), 0o644)
	defs, shadowed, err := Load([]Dir{{Path: user, Source: "user"}, {Path: proj, Source: "project", Prefix: "p:"}, {Path: proj, Source: "project"}})
	if err != nil {
		t.Fatal(err)
	}
	var a, b *Definition
	for i := range defs {
		switch defs[i].Name {
		case "a":
			a = &defs[i]
		case "b":
			b = &defs[i]
		}
	}
	if a == nil || b == nil || a.Prompt != "NEW" || a.Source != "project" || a.Tools != nil {
		t.Fatalf("defs %+v", defs)
	}
	if !slices.Equal(a.DisallowedTools, []string{"Bash", "Write"}) || !slices.Equal(b.DisallowedTools, []string{"Edit"}) {
		t.Fatalf("disallowed %v %v", a.DisallowedTools, b.DisallowedTools)
	}
	notes := strings.Join(a.Notes, "\n")
	for _, want := range []string{"color: not used by dsh", "permissionMode: not used by dsh (a subagent runs in its parent's permission mode)", "future: not used by dsh"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q: %v", want, a.Notes)
		}
	}
	if len(shadowed) != 1 || shadowed[0].Name != "a" || shadowed[0].Path != filepath.Join(user, "a.md") || shadowed[0].By != filepath.Join(proj, "a.md") {
		t.Fatalf("shadowed %+v", shadowed)
	}
	if !slices.ContainsFunc(defs, func(d Definition) bool { return d.Name == "p:a" }) {
		t.Fatalf("the prefixed directory's agent is missing: %+v", defs)
	}
}
