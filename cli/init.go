package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newInitCmd) }

// newInitCmd is `dsh init`: the built-in /init command run headless in
// this directory, writing or updating AGENTS.md.
func newInitCmd(stdio IO) *cobra.Command {
	var (
		f                  flags
		importClaude, keep bool
	)
	cmd := &cobra.Command{
		Use:   "init",
		Short: "survey this repository and write or update AGENTS.md",
		Long: `dsh init runs the built-in /init command headless: the agent reads the
repository with read-only tools and writes AGENTS.md (the instructions
Codex, dsh and other agents read), or updates the one there. It may write
only AGENTS.md. When the repository has a CLAUDE.md, dsh asks whether to
carry its instructions over (--import-claude or --keep-claude answer
without asking).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if importClaude && keep {
				return usageErr("--import-claude and --keep-claude contradict each other")
			}
			arg := ""
			switch {
			case importClaude:
				arg = "import-claude"
			case keep:
				arg = "keep-claude"
			case stdio.Interactive && hasClaudeMD():
				fmt.Fprint(stdio.Err, "This repository has a CLAUDE.md. Carry its instructions into AGENTS.md? [y/N] ")
				line, _ := bufio.NewReader(stdio.In).ReadString('\n')
				if strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y") {
					arg = "import-claude"
				} else {
					arg = "keep-claude"
				}
			}
			f.print = true
			prompt := strings.TrimSpace("/init " + arg)
			return runRoot(cmd.Context(), stdio, f, []string{prompt})
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&importClaude, "import-claude", false, "carry CLAUDE.md's instructions into AGENTS.md")
	fl.BoolVar(&keep, "keep-claude", false, "leave CLAUDE.md out of AGENTS.md")
	fl.StringVar(&f.outputFormat, "output-format", "text", "output: text, json or stream-json")
	f.register(fl, false)
	return cmd
}

// hasClaudeMD reports whether the working directory has a CLAUDE.md.
func hasClaudeMD() bool {
	for _, p := range []string{"CLAUDE.md", filepath.Join(".claude", "CLAUDE.md")} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}
