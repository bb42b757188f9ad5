package skills_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshq/dsh/bundles"
	"github.com/dshq/dsh/commands"
	"github.com/dshq/dsh/memory"
	"github.com/dshq/dsh/skills"
)

// BenchmarkDropinStart is what the drop-in files add to a start (issue
// 21's budget: under 5 ms with 50 commands, 50 skills and 5 memory files):
// a cold read of each — new loaders, nothing cached — and what the first
// request needs of them: the memory section, the skill index and the
// command list (the terminal's completion and the stream-json init line),
// and the look for enabled Claude Code plugins (none here).
func BenchmarkDropinStart(b *testing.B) {
	home, proj := b.TempDir(), b.TempDir()
	put := func(p, s string) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(proj, ".git"), 0o755)
	rules := strings.Repeat("- Prefer table-driven tests; keep functions short and names plain.\n", 40)
	put(filepath.Join(home, ".claude", "CLAUDE.md"), "# Me\n"+rules)
	put(filepath.Join(home, ".codex", "AGENTS.md"), "# Codex\n"+rules)
	put(filepath.Join(proj, "CLAUDE.md"), "# Project\n"+rules+"See @docs/style.md\n")
	put(filepath.Join(proj, "docs", "style.md"), "# Style\n"+rules)
	put(filepath.Join(proj, "AGENTS.md"), "# Agents\n"+rules)
	for i := 0; i < 50; i++ {
		put(filepath.Join(proj, ".claude", "commands", fmt.Sprintf("group%d", i%5), fmt.Sprintf("cmd%d.md", i)),
			fmt.Sprintf("---\ndescription: Command number %d does a thing\nargument-hint: [file]\nallowed-tools: Bash(git status:*), Read\n---\nDo thing %d to $ARGUMENTS.\n%s", i, i, rules))
		put(filepath.Join(proj, ".claude", "skills", fmt.Sprintf("skill-%d", i), "SKILL.md"),
			fmt.Sprintf("---\nname: skill-%d\ndescription: Skill %d handles one kind of task; use it when the user asks for that kind of task.\nallowed-tools: Read, Grep\n---\n# Skill %d\n%s", i, i, i, rules))
	}
	trusted := func(string) bool { return true }
	loc := memory.Locations{UserHome: home, CodexHome: filepath.Join(home, ".codex"), DSHHome: filepath.Join(home, ".dsh")}
	check := true
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l := &memory.Loader{Locations: loc, Trusted: trusted}
		mem := l.Load(proj)
		cmds := commands.Load(nil, []commands.Dir{{Path: filepath.Join(proj, ".claude", "commands"), Source: "project"}})
		ks := skills.Load([]skills.Dir{{Path: filepath.Join(proj, ".claude", "skills"), Source: "project"}})
		// No plugin is enabled: what a start pays to find that out.
		found := bundles.Find(bundles.Locations{UserHome: home, Project: proj}, true)
		section, index := mem.Render(), ks.Index()
		var names []string
		for _, c := range cmds.All() {
			names = append(names, c.Name+" "+c.Summary())
		}
		if check {
			check = false
			if len(found.Bundles) != 0 || len(mem.Files) != 5 || len(cmds.All()) != 50 || len(ks.All()) != 50 || section == "" || !strings.Contains(index, "skill-49") || len(names) != 50 {
				b.Fatalf("loaded %d memory files, %d commands, %d skills", len(mem.Files), len(cmds.All()), len(ks.All()))
			}
		}
	}
}
