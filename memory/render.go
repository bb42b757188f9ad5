package memory

import (
	"path/filepath"
	"strings"
)

// Render is the system prompt section of a set: every file taken, each
// under a heading naming it ("" when none was taken).
func (s *Set) Render() string {
	if s == nil || len(s.Files) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("# Memory\n\nInstructions from the memory files below: the user's own first, then the project's from its root down to the working directory. A later file is more specific and takes precedence where they disagree. Follow them.")
	s.write(&b)
	var over []string
	for _, sk := range s.Skipped {
		if sk.Reason == SkipBudget {
			over = append(over, sk.Path)
		}
	}
	if len(over) > 0 {
		b.WriteString("\n\n[Not included, over the memory size budget: " + strings.Join(over, ", ") + "]")
	}
	return b.String()
}

// RenderNested is the context attached to a tool result when the agent
// first touches a file under dir: the memory files of the directories on
// the way there.
func (s *Set) RenderNested(dir string) string {
	if s == nil || len(s.Files) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Memory files of " + dir + " (loaded because you touched a file there; they apply to the files under their directories and take precedence over the project's root files there):")
	s.write(&b)
	return b.String()
}

func (s *Set) write(b *strings.Builder) {
	for _, f := range s.Files {
		b.WriteString("\n\n## " + f.Path + " (" + f.label() + ")\n\n")
		b.WriteString(f.Text)
	}
}

// label says whose the file is.
func (f File) label() string {
	if f.ImportedBy != "" {
		return "imported by " + f.ImportedBy
	}
	switch {
	case f.Scope == ScopeUser:
		return "your instructions for every project"
	case filepath.Base(f.Path) == "CLAUDE.local.md":
		return "your own instructions for this project"
	case f.Scope == ScopeNested:
		d := filepath.Dir(f.Path)
		if filepath.Base(d) == ".claude" {
			d = filepath.Dir(d)
		}
		return "instructions for the files under " + d
	}
	return "project instructions"
}
