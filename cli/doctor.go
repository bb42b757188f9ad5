package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/dshq/dsh/doctor"
	"github.com/dshq/dsh/internal/memlimit"
)

func init() { extraCommands = append(extraCommands, newDoctorCmd) }

// newDoctorCmd is `dsh doctor`: what each capability found wrong with this
// directory's configuration, the same facts a run prints at start.
func newDoctorCmd(stdio IO) *cobra.Command {
	var (
		asJSON  bool
		timeout time.Duration
		f       flags
	)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "check this directory's dsh configuration: hooks, MCP servers and what they would meet",
		Long: `dsh doctor builds the application as a run in this directory would,
starts its MCP servers, and prints what every capability reports: hook
files it could not read and hook types it does not run, MCP servers that
fail to start (with the end of their stderr), project configuration held
back until the folder is trusted. It exits 1 when something is an error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(cmd.Context(), stdio, f, asJSON, timeout)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&asJSON, "json", false, "print the findings as JSON")
	fl.DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait for each MCP server to start")
	fl.StringVar(&f.settingsFile, "settings", "", "an extra settings file, applied last")
	fl.StringVar(&f.model, "model", "", "model reference to check with (default as for a run)")
	return cmd
}

func runDoctor(ctx context.Context, stdio IO, f flags, asJSON bool, timeout time.Duration) error {
	quiet := stdio
	quiet.Interactive = false // never ask for trust: report it
	a, done, err := setup(ctx, quiet, f)
	if err != nil {
		return err
	}
	defer done()
	fs := append(a.Diagnose(ctx, timeout), doctor.Finding{Capability: "runtime", Severity: doctor.OK,
		Subject: "memory limit", Message: "Go soft memory limit " + memlimit.Current()})
	if asJSON {
		if err := doctor.PrintJSON(stdio.Out, fs); err != nil {
			return err
		}
	} else {
		doctor.Print(stdio.Out, fs)
	}
	if doctor.Worst(fs) == doctor.Error {
		return &ExitError{Code: 1, Err: errSilent}
	}
	return nil
}

// errSilent ends a command with an exit code and no message (the output
// already said why).
var errSilent = silentError{}

type silentError struct{}

func (silentError) Error() string { return "" }
