package skills

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadAndIndex(t *testing.T) {
	user, proj := t.TempDir(), t.TempDir()
	write(t, filepath.Join(user, "pdf", "SKILL.md"), "---\nname: pdf\ndescription: user pdf\n---\nuser body")
	write(t, filepath.Join(proj, "pdf", "SKILL.md"), "---\nname: pdf\ndescription: >\n  Extract text and tables from PDF files.\n  Use when the user mentions PDFs.\nallowed-tools: Read, Bash(python3 scripts/extract.py:*)\n---\n# PDF\n\nRun scripts/extract.py.\n")
	write(t, filepath.Join(proj, "pdf", "scripts", "extract.py"), "print('x')")
	write(t, filepath.Join(proj, "long", "SKILL.md"), "---\ndescription: "+strings.Repeat("very long description ", 100)+"\n---\nbody")
	write(t, filepath.Join(proj, "secret", "SKILL.md"), "---\ndescription: internal only\ndisable-model-invocation: true\n---\nbody")
	write(t, filepath.Join(proj, "nodesc", "SKILL.md"), "---\nname: nodesc\n---\nbody")
	write(t, filepath.Join(proj, "empty", "README.md"), "no skill here")
	s := Load([]Dir{{Path: user, Source: "user"}, {Path: proj, Source: "project"}, {Path: filepath.Join(proj, "nope"), Source: "project"}})
	k, ok := s.Lookup("pdf")
	if !ok || k.Source != "project" || k.Description != "Extract text and tables from PDF files. Use when the user mentions PDFs." || len(k.AllowedTools) != 2 {
		t.Fatalf("pdf %+v", k)
	}
	if len(s.Shadowed) != 1 || len(s.Problems) != 2 {
		t.Fatalf("shadowed %+v problems %+v", s.Shadowed, s.Problems)
	}
	idx := s.Index()
	if strings.Contains(idx, "Run scripts/extract.py") || strings.Contains(idx, "internal only") {
		t.Fatalf("the index carries a body or a hidden skill:\n%s", idx)
	}
	for _, line := range strings.Split(idx, "\n") {
		if strings.HasPrefix(line, "- ") && len(line)/4 > 100 {
			t.Fatalf("an index line costs about %d tokens: %q", len(line)/4, line)
		}
	}
	if !strings.Contains(idx, "- pdf: Extract text") || !strings.Contains(idx, "- long: very long description") {
		t.Fatalf("index:\n%s", idx)
	}
	body, err := k.Body()
	if err != nil || body != "# PDF\n\nRun scripts/extract.py." {
		t.Fatalf("body %q %v", body, err)
	}
}
