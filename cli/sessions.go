package cli

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/internal/redact"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/backends"
	"github.com/dshq/dsh/ui/browser"
	"github.com/dshq/dsh/ui/term"
)

// openStore opens the session store alone: listing and reading sessions
// needs no model or tools, only the user's choice of store.
func openStore(stdio IO, settingsFile string) (*store.Coordinator, func(), error) {
	cfg, o, err := storeChoice(stdio, settingsFile)
	if err != nil {
		return nil, nil, err
	}
	return openNamedStore(cfg, o)
}

// storeChoice returns the store the user's settings choose and how to open
// it here.
func storeChoice(stdio IO, settingsFile string) (backends.Config, backends.Options, error) {
	h, err := home(stdio.Env)
	if err != nil {
		return backends.Config{}, backends.Options{}, usageErr("%v", err)
	}
	if err := privateHome(stdio, h); err != nil {
		return backends.Config{}, backends.Options{}, usageErr("creating %s: %v", h, err)
	}
	cfg, err := settings.Load(settings.Input{Paths: settings.Paths{Home: h, SettingsFile: settingsFile}, Schema: app.Schema()})
	if err != nil {
		return backends.Config{}, backends.Options{}, err
	}
	o := backends.Options{Home: h, Getenv: stdio.Env, Logf: func(f string, args ...any) {
		fmt.Fprintf(stdio.Err, "dsh: "+f+"\n", args...)
	}}
	return backends.FromSettings(cfg), o, nil
}

func openNamedStore(cfg backends.Config, o backends.Options) (*store.Coordinator, func(), error) {
	b, err := backends.Open(context.Background(), cfg, o)
	if err != nil {
		return nil, nil, err
	}
	scope := kernel.NewScope("sessions")
	c, err := store.Attach(scope, session.NewLive(nil), b, store.Options{})
	if err != nil {
		_ = scope.Close()
		return nil, nil, err
	}
	return c, func() { _ = scope.Close() }, nil
}

// copySessions copies every session of from into to, each through the
// coordinators: loading takes the session's writer lock (a session another
// process is running is skipped, not copied half-written) and closes a
// turn a crash left open, as resuming it would; creating refuses an id the
// destination already has, so copying twice copies nothing new.
func copySessions(ctx context.Context, from, to *store.Coordinator, errw io.Writer) (copied, present int, failed int) {
	infos, err := from.List(ctx, store.Query{})
	if err != nil {
		fmt.Fprintf(errw, "listing %s: %v\n", from.Name(), err)
		return 0, 0, 1
	}
	for _, in := range infos {
		id := in.Header.ID
		err := func() error {
			h, events, err := from.Load(ctx, id)
			if err != nil {
				return err
			}
			defer from.Release(ctx, id)
			if err := to.Create(ctx, h); err != nil {
				return err
			}
			defer to.Release(ctx, id)
			return to.Append(ctx, id, events)
		}()
		switch {
		case err == nil:
			copied++
		case errors.Is(err, store.ErrExists):
			present++
		default:
			failed++
			fmt.Fprintf(errw, "session %s: %v\n", id, err)
		}
	}
	return copied, present, failed
}

func newSessionsCmd(stdio IO) *cobra.Command {
	var here, all bool
	var asJSON bool
	var settingsFile string
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "list saved sessions (newest first)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, done, err := openStore(stdio, settingsFile)
			if err != nil {
				return err
			}
			defer done()
			q := store.Query{}
			if here {
				if q.Cwd, err = os.Getwd(); err != nil {
					return err
				}
			}
			infos, err := c.List(cmd.Context(), q)
			if err != nil {
				return err
			}
			// Subagent children belong to their parent (its SUBAGENTS
			// count); --all lists them too.
			rows := term.SessionRows(infos, all)
			if asJSON {
				shown := make([]store.Info, len(rows))
				for i, r := range rows {
					shown[i] = r.Info
				}
				return json.NewEncoder(stdio.Out).Encode(shown)
			}
			if len(rows) == 0 {
				fmt.Fprintln(stdio.Out, "no sessions yet")
				return nil
			}
			out := bufio.NewWriterSize(stdio.Out, 64<<10)
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tLAST ACTIVITY\tTURNS\tEVENTS\tSUBAGENTS\tCWD\tTITLE")
			for _, r := range rows {
				title := r.Title
				if r.Header.ParentSession != "" {
					title = strings.TrimSpace("↳ subagent of " + string(r.Header.ParentSession) + " " + title)
				}
				fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", r.Header.ID, time.UnixMilli(r.LastActivity).Format("2006-01-02 15:04"), r.Turns, r.Events, r.Children, r.Header.Cwd, title)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			return out.Flush()
		},
	}
	cmd.Flags().BoolVar(&here, "here", false, "only sessions of the current directory")
	cmd.Flags().BoolVar(&all, "all", false, "also list subagent sessions (by default they are counted under their parent)")
	cmd.PersistentFlags().StringVar(&settingsFile, "settings", "", "an extra settings file (its sessionStore picks the store to read)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	var from, to string
	copyCmd := &cobra.Command{
		Use:   "copy --from STORE [--to STORE]",
		Short: "copy every session of one store (jsonl, sqlite or postgres) into another (default: the one your settings choose)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, o, err := storeChoice(stdio, settingsFile)
			if err != nil {
				return err
			}
			if to == "" {
				to = cmp.Or(cfg.Store, backends.JSONL)
			}
			if from == "" {
				from = backends.JSONL
				if to == backends.JSONL {
					from = backends.SQLite
				}
			}
			for _, name := range []string{from, to} {
				if !slices.Contains(backends.Names, name) {
					return usageErr("unknown store %q: want one of %s", name, strings.Join(backends.Names, ", "))
				}
			}
			if from == to {
				return usageErr("--from and --to are both %s; choose two different stores", from)
			}
			srcCfg, dstCfg := cfg, cfg
			srcCfg.Store, dstCfg.Store = from, to
			src, doneSrc, err := openNamedStore(srcCfg, o)
			if err != nil {
				return err
			}
			defer doneSrc()
			dst, doneDst, err := openNamedStore(dstCfg, o)
			if err != nil {
				return err
			}
			defer doneDst()
			copied, present, failed := copySessions(cmd.Context(), src, dst, stdio.Err)
			fmt.Fprintf(stdio.Out, "copied %d sessions from %s to %s (%d already there, %d failed)\n", copied, from, to, present, failed)
			if failed > 0 {
				return fmt.Errorf("%d sessions were not copied", failed)
			}
			return nil
		},
	}
	copyCmd.Flags().StringVar(&from, "from", "", "the store to copy from: jsonl, sqlite or postgres (default: jsonl, or sqlite when copying to jsonl)")
	copyCmd.Flags().StringVar(&to, "to", "", "the store to copy to (default: the one your settings choose)")
	var asHTML, noToolOutput bool
	showCmd := &cobra.Command{
		Use:   "show ID",
		Short: "print a readable transcript of a session (ID may be a unique prefix), or with --html a self-contained web page of it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if noToolOutput && !asHTML {
				return &ExitError{Code: app.ExitUsage, Err: errors.New("--no-tool-output applies to --html")}
			}
			c, done, err := openStore(stdio, settingsFile)
			if err != nil {
				return err
			}
			defer done()
			id, err := resolveSession(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if asHTML {
				return writeHTMLTrace(cmd.Context(), stdio, c, id, noToolOutput)
			}
			h, events, err := c.Read(cmd.Context(), id)
			if err != nil {
				return &ExitError{Code: app.ExitError, Err: fmt.Errorf("reading session %s: %s", id, plainError(err))}
			}
			// A transcript is many small writes: one system call each on
			// an unbuffered stdout.
			out := bufio.NewWriterSize(stdio.Out, 64<<10)
			bstdio := stdio
			bstdio.Out = out
			fmt.Fprintf(out, "session %s  (%s, created %s)\n\n", h.ID, h.Cwd, time.UnixMilli(h.CreatedAt).Format(time.RFC3339))
			Transcript(out, events[h.SeedLength:])
			if err := showChildren(cmd.Context(), bstdio, c, h.ID, 1); err != nil {
				out.Flush()
				return err
			}
			return out.Flush()
		},
	}
	showCmd.Flags().BoolVar(&asHTML, "html", false, "write the session (and its subagents) as one self-contained HTML page: nothing fetched, secrets scrubbed")
	showCmd.Flags().BoolVar(&noToolOutput, "no-tool-output", false, "with --html: leave out what tools returned (calls, arguments and diffs stay)")
	cmd.AddCommand(showCmd, copyCmd, newTailCmd(stdio, &settingsFile), newExportCmd(stdio, &settingsFile))
	return cmd
}

func newExportCmd(stdio IO, settingsFile *string) *cobra.Command {
	var salvage bool
	cmd := &cobra.Command{
		Use:   "export ID",
		Short: "write the raw session log (JSONL: header line, then one event per line; ID may be a unique prefix)",
		Long: `export writes a session's log as JSONL: a header line, then one event per line.

A log damaged in its middle cannot be exported as it is (nor resumed); with
--salvage, export writes every event that can still be read and reports the
damaged ranges on stderr.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, done, err := openStore(stdio, *settingsFile)
			if err != nil {
				return err
			}
			defer done()
			id, err := resolveSession(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			var h session.Header
			var events []session.Event
			if salvage {
				sv, err := c.Salvage(cmd.Context(), id)
				if err != nil {
					return err
				}
				h, events = sv.Header, sv.Events
				defer reportSalvage(stdio.Err, id, sv)
			} else if h, events, err = c.Read(cmd.Context(), id); err != nil {
				if errors.Is(err, store.ErrCorrupt) {
					return fmt.Errorf("%w\n`dsh sessions export --salvage %s` writes every event that can still be read", err, id)
				}
				return err
			}
			w := bufio.NewWriterSize(stdio.Out, 64<<10)
			enc := json.NewEncoder(w)
			if err := enc.Encode(struct {
				Type string `json:"type"`
				session.Header
			}{"session", h}); err != nil {
				return err
			}
			for _, e := range events {
				if err := enc.Encode(e); err != nil {
					return err
				}
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&salvage, "salvage", false, "write every readable event of a damaged log and report the damaged ranges on stderr")
	return cmd
}

// reportSalvage says on stderr what a salvage kept and what it could not.
func reportSalvage(w io.Writer, id session.ID, sv *store.Salvaged) {
	if len(sv.Damage) == 0 {
		fmt.Fprintf(w, "dsh: session %s: no damage found; exported all %d events\n", id, len(sv.Events))
		return
	}
	fmt.Fprintf(w, "dsh: session %s: salvaged %d readable events; %d damaged range(s) left out:\n", id, len(sv.Events), len(sv.Damage))
	for _, d := range sv.Damage {
		fmt.Fprintf(w, "  %s\n", d)
	}
	if sv.HeaderDamaged {
		fmt.Fprintf(w, "  (the header was unreadable: the exported one carries only the session id)\n")
	}
}

// Transcript renders events for people.
func Transcript(w interface{ Write([]byte) (int, error) }, events []session.Event) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	for _, e := range events {
		switch e.Type {
		case session.TypeUserMessage:
			m, _ := session.Decode[session.Prompt](e)
			p("> %s\n\n", indent(llm.TextOf(m.Content)))
		case session.TypeAssistantMessage:
			m, _ := session.Decode[session.AssistantMessage](e)
			for _, b := range m.Content {
				switch b.Type {
				case llm.BlockText:
					p("%s\n\n", b.Text)
				case llm.BlockReasoning:
					p("(thinking) %s\n\n", clip(b.Text, 200))
				}
			}
		case session.TypeToolCall:
			c, _ := session.Decode[session.ToolCall](e)
			p("● %s %s\n", c.Name, clip(c.Arguments, 200))
		case session.TypeToolResult:
			r, _ := session.Decode[session.ToolResult](e)
			mark := "⎿"
			if r.IsError {
				mark = "⎿ error:"
			}
			p("  %s %s\n\n", mark, indent(clip(llm.TextOf(r.Content), 400)))
		case session.TypeContextMessage, session.TypeSteeringMessage:
			m, _ := session.Decode[session.Prompt](e)
			p("[%s] %s\n\n", e.Type, clip(llm.TextOf(m.Content), 200))
		case "todo/write":
			var t struct {
				Todos []session.TodoItem `json:"todos"`
			}
			_ = json.Unmarshal(e.Data, &t)
			for _, it := range t.Todos {
				box := "[ ]"
				switch it.Status {
				case "completed":
					box = "[x]"
				case "in_progress":
					box = "[~]"
				}
				p("  %s %s\n", box, it.Content)
			}
			p("\n")
		case session.TypeTurnEnd:
			te, _ := session.Decode[session.TurnEnd](e)
			if te.Reason.Kind != session.EndCompleted {
				p("(turn %d ended: %s %s%s)\n\n", te.Turn, te.Reason.Kind, te.Reason.Reason, te.Reason.Message)
			}
		}
	}
}

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }

// showChildren prints the transcripts of sessions whose lineage names id
// (subagents), indented by depth.
func showChildren(ctx context.Context, stdio IO, c *store.Coordinator, id session.ID, depth int) error {
	infos, err := c.List(ctx, store.Query{})
	if err != nil {
		return err
	}
	for _, in := range infos {
		if in.Header.ParentSession != id {
			continue
		}
		h, events, err := c.Read(ctx, in.Header.ID)
		if err != nil {
			return err
		}
		var b strings.Builder
		Transcript(&b, events[min(h.SeedLength, len(events)):])
		pad := strings.Repeat("    ", depth)
		fmt.Fprintf(stdio.Out, "%s── subagent session %s ──\n", pad, h.ID)
		for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
			fmt.Fprintf(stdio.Out, "%s%s\n", pad, line)
		}
		fmt.Fprintln(stdio.Out)
		if err := showChildren(ctx, stdio, c, h.ID, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// writeHTMLTrace writes the static trace of a session to stdout. Secrets
// are scrubbed twice over: the values of this process's secret-looking
// environment variables (the providers' keys among them) wherever they
// appear, and strings shaped like credentials.
func writeHTMLTrace(ctx context.Context, stdio IO, c *store.Coordinator, id session.ID, noToolOutput bool) error {
	root, kids, err := browser.ReadTrace(ctx, c, id)
	if err != nil {
		return &ExitError{Code: app.ExitError, Err: errors.New(plainError(err))}
	}
	o := browser.TraceOptions{
		OmitToolOutput: noToolOutput,
		Scrubber:       redact.New(redact.EnvValues(os.Environ())...),
		Version:        Version,
	}
	out := bufio.NewWriterSize(stdio.Out, 256<<10)
	if err := browser.WriteTrace(out, root, kids, o); err != nil {
		return err
	}
	return out.Flush()
}
