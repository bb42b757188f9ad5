package cli

import (
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/dshq/dsh/acp"
	"github.com/dshq/dsh/settings"
)

func init() { extraCommands = append(extraCommands, newACPCmd) }

// newACPCmd is `dsh acp`: the Agent Client Protocol over stdio, for
// editors (Zed, and any ACP client). Standard output carries protocol
// frames only; diagnostics go to $DSH_HOME/logs/dsh.log, and warnings also
// to standard error, which editors show in their logs.
func newACPCmd(stdio IO) *cobra.Command {
	var f configFlags
	cmd := &cobra.Command{
		Use:   "acp",
		Short: "serve the Agent Client Protocol on stdio (for editors such as Zed)",
		Long: `dsh acp speaks the Agent Client Protocol on standard input and output, so an
editor can run dsh as its agent. Each editor session is a dsh session: it can
be listed, shown and continued with the dsh command, and the other way round.

Zed (settings.json):
  "agent_servers": { "dsh": { "command": "dsh", "args": ["acp"] } }`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := home(stdio.Env)
			if err != nil {
				return usageErr("%v", err)
			}
			if err := privateHome(stdio, h); err != nil {
				return usageErr("creating %s: %v", h, err)
			}
			// Bad flags stop dsh before it serves anything.
			if _, err := f.layers(); err != nil {
				return usageErr("%v", err)
			}
			fileLog, closeLog, err := logger(h, f.verbose, stdio.Err)
			if err != nil {
				return usageErr("%v", err)
			}
			defer closeLog()
			log := slog.New(slog.NewMultiHandler(fileLog.Handler(),
				slog.NewTextHandler(stdio.Err, &slog.HandlerOptions{Level: slog.LevelWarn})))
			out := stdio.Out
			if f, ok := out.(*os.File); ok && f == os.Stdout {
				claimed, err := acp.ClaimStdout()
				if err != nil {
					log.Warn("acp: cannot protect standard output; serving on it directly", "err", err)
				} else {
					defer claimed.Close()
					out = claimed
				}
			}
			cwd, _ := os.Getwd()
			// No prompt can be shown over ACP: a workspace's own
			// configuration applies once trusted (interactively, or with
			// --trust, which records it).
			policy := f.trustPolicy(IO{Err: stdio.Err, Env: stdio.Env}, h, false)
			return acp.Serve(cmd.Context(), stdio.In, out, acp.Options{
				Home: h, Env: stdio.Env, Logger: log, Version: Version, Cwd: cwd, UserHome: userHome(stdio.Env),
				Configure: func(dir string, extra ...settings.File) (*settings.Config, func(string) bool, error) {
					return f.configure(h, userHome(stdio.Env), dir, policy, extra...)
				},
			})
		},
	}
	// The same configuration flags as dsh and dsh -p: one command line
	// means the same permissions, model and limits in every front door.
	f.register(cmd.Flags(), true)
	return cmd
}
