// Package cli is the dsh command line: flags named as Claude Code users
// expect, settings and state discovery, headless mode, session commands,
// and the interactive terminal front-end. cmd/dsh only calls Main.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/headless"
	"github.com/dshq/dsh/internal/private"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/telemetry"
	ui "github.com/dshq/dsh/ui/term"
)

// Version is set at build time with -ldflags "-X github.com/dshq/dsh/cli.Version=…".
var Version = "0.1.0-dev"

// IO is the process's standard streams and environment.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
	Env      func(string) string
	// Interactive reports whether In and Out are a terminal.
	Interactive bool
	// InTerminal reports whether In is a terminal (piped input to -p is
	// read only when it is not).
	InTerminal bool
}

// ExitError carries an exit code and a one-line message.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

func usageErr(format string, args ...any) error {
	return &ExitError{Code: app.ExitUsage, Err: fmt.Errorf(format, args...)}
}

// flags are the root command's flags.
type flags struct {
	configFlags
	print        bool
	outputFormat string
	cont         bool
	resume       string
	takeover     bool
	headless     headlessFlags
}

// Main runs dsh and returns the process exit code.
func Main(args []string, stdio IO) int {
	if stdio.Env == nil {
		stdio.Env = os.Getenv
	}
	// Every way of being asked to stop ends the run through the context
	// (see signals): the first signal shuts down in order, a second at once.
	sig := watchSignals(context.Background())
	defer sig.stop()
	ctx := withSignals(sig.ctx, sig)
	cmd := newRoot(stdio)
	cmd.SetArgs(optionalResume(args))
	cmd.SetIn(stdio.In)
	cmd.SetOut(stdio.Out)
	cmd.SetErr(stdio.Err)
	err := cmd.ExecuteContext(ctx)
	if err == nil && sig.received() != nil {
		// The work finished, but dsh was asked to stop while it shut down
		// (a SessionEnd hook, a cleanup): say so in the exit status.
		err = &ExitError{Code: app.ExitAborted, Err: fmt.Errorf("interrupted by %s", signalName(sig.received()))}
	}
	if err == nil {
		return 0
	}
	code := app.ExitError
	var ee *ExitError
	if errors.As(err, &ee) {
		code = ee.Code
	}
	if sig := sig.forced(); sig != nil {
		code = forcedExit(sig)
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintln(stdio.Err, "dsh: "+msg)
	}
	return code
}

// startTelemetry starts the OpenTelemetry export the environment asks for
// (OTEL_EXPORTER_OTLP_*; nothing otherwise) and returns what flushes it,
// bounded so an unreachable collector cannot hold up the exit.
func startTelemetry(ctx context.Context, stdio IO, o telemetry.Options) (stop func()) {
	rt, err := telemetry.Start(ctx, o)
	if err != nil {
		fmt.Fprintln(stdio.Err, "dsh: warning: telemetry is off:", err)
		return func() {}
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := rt.Shutdown(sctx); err != nil {
			fmt.Fprintln(stdio.Err, "dsh: warning:", err)
		}
	}
}

// unprefixed is err with a package prefix dropped from its message.
type unprefixed struct {
	err    error
	prefix string
}

func (u unprefixed) Error() string { return strings.TrimPrefix(u.err.Error(), u.prefix) }
func (u unprefixed) Unwrap() error { return u.err }

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

func newRoot(stdio IO) *cobra.Command {
	var f flags
	root := &cobra.Command{
		Use:   "dsh [prompt]",
		Short: "dsh — a plugin-based coding agent",
		Long: `dsh runs an LLM coding agent in the current directory.

  dsh                     start the interactive agent
  dsh -p "fix the tests"  run one prompt headless and print the answer
  dsh sessions            list saved sessions
  dsh acp                 serve the Agent Client Protocol on stdio (editors)`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.ArbitraryArgs,
		Version:       Version,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRoot(cmd.Context(), stdio, f, args)
		},
	}
	root.SetVersionTemplate("dsh {{.Version}}\n")
	// A bad flag is a usage error (exit 2, nothing ran), on every command.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr("%v (dsh --help lists the flags)", err) })
	fl := root.Flags()
	fl.BoolVarP(&f.print, "print", "p", false, "run the prompt headless, print the result and exit (prompt from arguments or stdin)")
	fl.StringVar(&f.outputFormat, "output-format", "text", "headless output: text, json (Claude Code's result), stream-json (Claude Code's messages) or events (dsh's session events)")
	fl.BoolVarP(&f.cont, "continue", "c", false, "continue the latest session of this directory")
	fl.StringVarP(&f.resume, "resume", "r", "", "resume the session with this id (or a unique prefix of it); without one, pick from the recent sessions")
	fl.Lookup("resume").NoOptDefVal = pickSession
	fl.BoolVar(&f.takeover, "takeover", false, "with --resume or --continue on a shared (postgres) store: take the session over from the live process holding it, after one lease period")
	f.register(fl, false)
	f.headless.register(fl)
	root.AddCommand(newSessionsCmd(stdio), newStoreCmd(stdio), newVersionCmd(stdio))
	for _, c := range extraCommands {
		root.AddCommand(c(stdio))
	}
	return root
}

// extraCommands lets other files (acp) add subcommands.
var extraCommands []func(IO) *cobra.Command

func home(env func(string) string) (string, error) {
	if h := env("DSH_HOME"); h != "" {
		return filepath.Abs(h)
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find the home directory (set DSH_HOME): %w", err)
	}
	return filepath.Join(u, ".dsh"), nil
}

// privateHome makes $DSH_HOME private (see package private), saying on
// stderr what it had to tighten.
func privateHome(stdio IO, dir string) error {
	return private.Home(dir, func(path string, old, now fs.FileMode, err error) {
		fmt.Fprintln(stdio.Err, "dsh: "+private.Describe(path, old, now, err))
	})
}

// logger writes to $DSH_HOME/logs/dsh.log: never to stdout, never
// interleaved with the UI — unless the file cannot be written (a full
// disk), when records go to stderr rather than nowhere.
func logger(dir string, verbose bool, stderr io.Writer) (*slog.Logger, func(), error) {
	if err := private.MkdirAll(filepath.Join(dir, "logs")); err != nil {
		return nil, nil, fmt.Errorf("creating the log directory: %w", err)
	}
	f, err := private.OpenFile(filepath.Join(dir, "logs", "dsh.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the log file: %w", err)
	}
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	w := &logWriter{f: f, stderr: stderr}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})), func() { f.Close() }, nil
}

// logWriter writes log records to the log file and, while the file cannot
// be written, to stderr, saying so once per outage: a full disk must not
// also silence the record of what failed because of it.
type logWriter struct {
	mu      sync.Mutex
	f       *os.File
	stderr  io.Writer
	failing bool
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.f.Write(p)
	if err == nil {
		w.failing = false
		return len(p), nil
	}
	if !w.failing {
		w.failing = true
		fmt.Fprintf(w.stderr, "dsh: cannot write the log file (%v); logging to stderr until it can\n", err)
	}
	return w.stderr.Write(p)
}

// setup runs the configuration pipeline and builds the app.
func setup(ctx context.Context, stdio IO, f flags) (*app.App, func(), error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, nil, usageErr("cannot read the working directory: %v", err)
	}
	return setupIn(ctx, stdio, f, cwd)
}

// setupIn builds the app for the directory cwd (absolute).
func setupIn(ctx context.Context, stdio IO, f flags, cwd string) (*app.App, func(), error) {
	h, err := home(stdio.Env)
	if err != nil {
		return nil, nil, usageErr("%v", err)
	}
	if err := privateHome(stdio, h); err != nil {
		return nil, nil, usageErr("creating %s: %v", h, err)
	}
	cfg, trusted, err := f.configure(h, userHome(stdio.Env), cwd, f.trustPolicy(stdio, h, stdio.Interactive))
	if err != nil {
		return nil, nil, usageErr("%v", strings.TrimPrefix(err.Error(), "settings: "))
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintln(stdio.Err, "dsh: "+w)
	}
	log, closeLog, err := logger(h, f.verbose || f.headless.debug != "", stdio.Err)
	if err != nil {
		return nil, nil, usageErr("%v", err)
	}
	if f.headless.debug != "" {
		log = slog.New(slog.NewMultiHandler(log.Handler(), slog.NewTextHandler(stdio.Err, &slog.HandlerOptions{Level: slog.LevelDebug})))
	}
	st := site(stdio, h, cwd, trusted)
	st.Version, st.Warn = Version, stdioWarner(stdio).warn
	st.Stopping, st.Aborting = stopChannels(ctx)
	a, err := app.New(ctx, app.Options{Config: cfg, Site: st, Logger: log})
	if err != nil {
		closeLog()
		if errors.Is(err, core.ErrConfig) {
			return nil, nil, usageErr("%v", err)
		}
		if errors.Is(err, app.ErrStoreOpen) {
			return nil, nil, &ExitError{Code: app.ExitNotSaved, Err: fmt.Errorf("nothing ran: the session could not be saved: %w", unprefixed{err, "app: "})}
		}
		return nil, nil, err
	}
	return a, func() {
		_ = a.Close(context.Background())
		closeLog()
	}, nil
}

func userHome(env func(string) string) string {
	if h := env("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

func runRoot(ctx context.Context, stdio IO, f flags, args []string) error {
	if f.cont && f.resume != "" {
		return usageErr("--continue and --resume cannot be used together")
	}
	// The Claude Agent SDK runs Claude Code with the stream-json formats
	// and without -p: they mean headless.
	if f.headless.inputFormat == headless.InputStreamJSON || (f.outputFormat != "" && f.outputFormat != headless.FormatText) {
		f.print = true
	}
	if f.headless.skipPermissions {
		if f.permissionMode != "" && f.permissionMode != string(permission.ModeBypass) {
			return usageErr("--dangerously-skip-permissions and --permission-mode %s contradict each other", f.permissionMode)
		}
		f.permissionMode = string(permission.ModeBypass)
	}
	if f.resume == pickSession && (!stdio.Interactive || f.print) {
		return listForResume(ctx, stdio, f)
	}
	if f.print {
		defer startTelemetry(ctx, stdio, telemetry.Options{Version: Version, Env: stdio.Env})()
	}
	a, done, err := setup(ctx, stdio, f)
	if err != nil {
		if f.print && errors.Is(err, app.ErrStoreOpen) {
			headless.WriteRefused(stdio.Out, f.outputFormat, f.resume, err)
		}
		return err
	}
	defer done()
	if f.headless.agents != "" {
		defs, warnings, err := headless.ParseAgents(a, f.headless.agents)
		if err != nil {
			return usageErr("%v", err)
		}
		for _, w := range warnings {
			fmt.Fprintln(stdio.Err, "dsh: --agents: "+w)
		}
		if err := headless.AddAgents(a, defs); err != nil {
			return usageErr("--agents: %v", err)
		}
	}
	var resume session.ID
	pick := false
	switch {
	case f.resume == pickSession:
		pick = true
	case f.resume != "":
		if resume, err = resolveSession(ctx, a.Coordinator, f.resume); err != nil {
			if f.print {
				headless.WriteRefused(stdio.Out, f.outputFormat, f.resume, err)
			}
			return err
		}
	case f.cont:
		id, err := a.Latest(ctx)
		if err != nil {
			return &ExitError{Code: app.ExitUsage, Err: errors.New(strings.TrimPrefix(err.Error(), "app: "))}
		}
		resume = id
	}
	if f.takeover && resume == "" {
		return usageErr("--takeover needs --resume ID or --continue")
	}
	if resume != "" {
		// On a shared store another host may hold the session: wait for a
		// dead holder's lease to expire, or take it over (--takeover).
		var grace time.Duration
		if f.takeover {
			grace = a.LeaseTTL(ctx, resume)
		}
		if err := a.AwaitSession(ctx, resume, grace, func(msg string) { fmt.Fprintln(stdio.Err, "dsh: "+msg) }); err != nil {
			return err
		}
	}
	if f.print {
		return runHeadless(ctx, stdio, a, f, args, resume)
	}
	if !stdio.Interactive && stdio.Env("DSH_BENCH_EXIT_READY") == "" {
		return usageErr("not a terminal: use -p for headless mode (dsh -p \"prompt\")")
	}
	return runInteractive(ctx, stdio, a, resume, pick, strings.Join(args, " "))
}

// listForResume answers -r without an id where no picker can be shown:
// the recent sessions of this directory, and how to resume one.
func listForResume(ctx context.Context, stdio IO, f flags) error {
	c, done, err := openStore(stdio, f.settingsFile)
	if err != nil {
		return err
	}
	defer done()
	cwd, _ := os.Getwd()
	infos, err := c.List(ctx, store.Query{Cwd: cwd})
	if err != nil {
		return &ExitError{Code: app.ExitError, Err: fmt.Errorf("listing sessions: %s", plainError(err))}
	}
	rows := ui.SessionRows(infos, false) // subagent children belong to their parent
	if len(rows) == 0 {
		return usageErr("--resume needs a session id, and there is no session in %s yet", cwd)
	}
	if len(rows) > 10 {
		rows = rows[:10]
	}
	w := tabwriter.NewWriter(stdio.Err, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tLAST ACTIVITY\tTURNS\tTITLE")
	for _, in := range rows {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", in.Header.ID, time.UnixMilli(in.LastActivity).Format("2006-01-02 15:04"), in.Turns, firstLineOf(in.Title))
	}
	_ = w.Flush()
	return usageErr("--resume needs a session id here (no terminal to pick one in): dsh -r ID, with an id above or a unique prefix of one")
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60]) + "…"
	}
	return s
}

func newVersionCmd(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print dsh's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(stdio.Out, "dsh %s\n", Version)
		},
	}
}

// warner prints the app's warnings on stderr, until a front-end that owns
// the terminal mutes it (they still reach the log).
type warner struct {
	w     io.Writer
	muted *atomic.Bool
}

var muteWarnings atomic.Bool

func stdioWarner(stdio IO) warner { return warner{w: stdio.Err, muted: &muteWarnings} }

func (w warner) warn(msg string) {
	if w.muted.Load() {
		return
	}
	fmt.Fprintln(w.w, "dsh: warning: "+msg)
}
