package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/checkpoint"
	"github.com/dshq/dsh/session"
)

func init() { extraCommands = append(extraCommands, newRewindCmd) }

func newRewindCmd(stdio IO) *cobra.Command {
	var (
		to                       string
		code, chat, both         bool
		dryRun, force, skipConfl bool
	)
	cmd := &cobra.Command{
		Use:   "rewind SESSION [--to TURN[.STEP]] [--code|--chat|--both] [--dry-run] [--force]",
		Short: "take a session's files and/or conversation back to before an earlier turn",
		Long: `dsh rewind takes a session back to before an earlier turn (or a step of it):
its files (--code), its conversation (--chat) or both (--both, the default).
Without --to it lists the turns with their prompts and file changes.

Files someone else changed since the agent's checkpoint are conflicts: the
rewind refuses and shows them, unless --force (overwrite them) or
--skip-conflicts (restore the rest). --dry-run prints the diff and changes
nothing. Ignored files and files over the size cap are reported, never
restored.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n := 0
			for _, b := range []bool{code, chat, both} {
				if b {
					n++
				}
			}
			if n > 1 {
				return usageErr("--code, --chat and --both exclude each other")
			}
			if force && skipConfl {
				return usageErr("--force and --skip-conflicts exclude each other")
			}
			r := checkpoint.Request{Code: code || both || n == 0, Chat: chat || both || n == 0, DryRun: dryRun, Force: force, SkipConflicts: skipConfl}
			if to != "" {
				t, err := checkpoint.ParseTarget(to)
				if err != nil {
					return usageErr("--to: %v", err)
				}
				r.To = t
			}
			return runRewind(cmd.Context(), stdio, args[0], to != "", r)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&to, "to", "", "the turn to go back to before (TURN, or TURN.STEP for a step of it)")
	fl.BoolVar(&code, "code", false, "rewind only the files")
	fl.BoolVar(&chat, "chat", false, "rewind only the conversation")
	fl.BoolVar(&both, "both", false, "rewind files and conversation (the default)")
	fl.BoolVar(&dryRun, "dry-run", false, "print what would change (a diff) and change nothing")
	fl.BoolVar(&force, "force", false, "overwrite files changed by someone else since the agent's checkpoint")
	fl.BoolVar(&skipConfl, "skip-conflicts", false, "restore everything but the files changed by someone else")
	return cmd
}

func runRewind(ctx context.Context, stdio IO, typed string, haveTarget bool, r checkpoint.Request) error {
	cwd, err := os.Getwd()
	if err != nil {
		return usageErr("cannot read the working directory: %v", err)
	}
	a, done, err := setupIn(ctx, stdio, flags{}, cwd)
	if err != nil {
		return err
	}
	defer done()
	if a.Checkpoints == nil {
		return usageErr("the checkpoints plugin is switched off (enabledPlugins)")
	}
	id, err := resolveSession(ctx, a.Coordinator, typed)
	if err != nil {
		return err
	}
	if err := a.AwaitSession(ctx, id, 0, nil); err != nil {
		return &ExitError{Code: app.ExitError, Err: err}
	}
	h, err := a.Resume(ctx, id, nil)
	if err != nil {
		return &ExitError{Code: app.ExitError, Err: fmt.Errorf("opening session %s: %s", id, plainError(err))}
	}
	defer h.Dispose(context.WithoutCancel(ctx))
	s := h.Agent.Session()
	if !haveTarget {
		return listPoints(stdio, a.Checkpoints, s)
	}
	rep, err := a.Checkpoints.Rewind(ctx, s, r)
	fmt.Fprint(stdio.Out, rep.Text())
	switch {
	case errors.Is(err, checkpoint.ErrConflicts):
		return &ExitError{Code: app.ExitError, Err: fmt.Errorf("rewind refused: %s would be overwritten (--force overwrites them, --skip-conflicts leaves them)", plural(len(rep.Conflicts), "changed file"))}
	case err != nil:
		return &ExitError{Code: app.ExitError, Err: fmt.Errorf("%s", plainError(err))}
	}
	if rep.Applied != nil && len(rep.Applied.Failed) > 0 {
		return &ExitError{Code: app.ExitError, Err: fmt.Errorf("%s could not be restored", plural(len(rep.Applied.Failed), "file"))}
	}
	return nil
}

func listPoints(stdio IO, c *checkpoint.Checkpoints, s *session.Session) error {
	pts, err := c.Points(s)
	if err != nil {
		return err
	}
	if len(pts) == 0 {
		fmt.Fprintln(stdio.Out, "no turns to rewind to")
		return nil
	}
	for _, p := range pts {
		steps := ""
		if len(p.Steps) > 0 {
			steps = fmt.Sprintf(" [steps %v]", p.Steps)
		}
		fmt.Fprintf(stdio.Out, "%4d  %-60s  %s%s\n", p.Target.Turn, clipLine(p.Prompt, 60), p.Summary(), steps)
	}
	return nil
}

func clipLine(s string, n int) string {
	r := []rune(s)
	for i, c := range r {
		if c == '\n' {
			r = r[:i]
			break
		}
	}
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return string(r)
}

func plural(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}
