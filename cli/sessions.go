package cli

import (
	"bufio"
	"bytes"
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
	"github.com/dshq/dsh/internal/exepages"
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
// coordinators: the source is read under its writer lock (a session another
// process is running is skipped, not copied half-written), a turn a crash
// left open is closed in the copy as resuming it would, and creating refuses
// an id the destination already has, so copying twice copies nothing new.
// Events stream from one store to the other in batches of copyBatch events,
// so a session of any length copies in bounded memory; one that fits a
// batch is copied atomically, a longer one that fails halfway is reported
// with how much of it the destination holds.
func copySessions(ctx context.Context, from, to *store.Coordinator, errw io.Writer) (copied, present int, failed int) {
	infos, err := from.List(ctx, store.Query{})
	if err != nil {
		fmt.Fprintf(errw, "listing %s: %v\n", from.Name(), err)
		return 0, 0, 1
	}
	for _, in := range infos {
		id := in.Header.ID
		created := false
		var written int64
		err := func() error {
			var batch []session.Event
			var size int
			flush := func() error {
				if len(batch) == 0 {
					return nil
				}
				if err := to.Append(ctx, id, batch); err != nil {
					return err
				}
				written += int64(len(batch))
				batch, size = batch[:0], 0
				return nil
			}
			defer func() {
				if created {
					to.Release(ctx, id)
				}
			}()
			err := from.Export(ctx, id, func(h session.Header) error {
				if err := to.Create(ctx, h); err != nil {
					return err
				}
				created = true
				return nil
			}, func(e session.Event) error {
				batch = append(batch, e)
				if size += len(e.Data); len(batch) >= copyBatch || size >= copyBatchBytes {
					return flush()
				}
				return nil
			})
			if err != nil {
				return err
			}
			return flush()
		}()
		switch {
		case err == nil:
			copied++
		case errors.Is(err, store.ErrExists):
			present++
		default:
			failed++
			fmt.Fprintf(errw, "session %s: %v\n", id, err)
			if written > 0 {
				fmt.Fprintf(errw, "session %s: only its first %d events were copied to %s\n", id, written, to.Name())
			}
		}
	}
	return copied, present, failed
}

// A copy batch: large enough that a typical session is one durable append,
// small enough that a million-event one streams.
const (
	copyBatch      = 4096
	copyBatchBytes = 8 << 20
)

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
			exepages.ReleaseOnce(stdio.Env) // set-up is over; the copy reads every session
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
			// Set-up is over; what follows reads the whole session.
			exepages.ReleaseOnce(stdio.Env)
			if asHTML {
				return writeHTMLTrace(cmd.Context(), stdio, c, id, noToolOutput)
			}
			// A transcript is many small writes: one system call each on
			// an unbuffered stdout.
			out := bufio.NewWriterSize(stdio.Out, 64<<10)
			if err := showSession(cmd.Context(), out, c, id, ""); err != nil {
				out.Flush()
				return &ExitError{Code: app.ExitError, Err: fmt.Errorf("reading session %s: %s", id, plainError(err))}
			}
			bstdio := stdio
			bstdio.Out = out
			if err := showChildren(cmd.Context(), bstdio, c, id, 1); err != nil {
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
			// Set-up is over; what follows streams the whole log.
			exepages.ReleaseOnce(stdio.Env)
			w := bufio.NewWriterSize(stdio.Out, 64<<10)
			enc := json.NewEncoder(w)
			head := func(h session.Header) error {
				return enc.Encode(struct {
					Type string `json:"type"`
					session.Header
				}{"session", h})
			}
			if salvage {
				sv, err := c.Salvage(cmd.Context(), id)
				if err != nil {
					return err
				}
				defer reportSalvage(stdio.Err, id, sv)
				if err := head(sv.Header); err != nil {
					return err
				}
				for _, e := range sv.Events {
					if err := enc.Encode(e); err != nil {
						return err
					}
				}
				return w.Flush()
			}
			// The log streams from the store: a million-event session
			// exports in the memory of one buffer.
			err = c.Scan(cmd.Context(), id, head, func(e session.Event) error { return enc.Encode(e) })
			if ferr := w.Flush(); err == nil {
				err = ferr
			}
			if errors.Is(err, store.ErrCorrupt) {
				return fmt.Errorf("%w\n`dsh sessions export --salvage %s` writes every event that can still be read", err, id)
			}
			return err
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
func Transcript(w io.Writer, events []session.Event) {
	for _, e := range events {
		transcriptEvent(w, e)
	}
}

// transcriptEvent renders one event for people (most render as nothing).
func transcriptEvent(w io.Writer, e session.Event) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	{
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

// showSession streams the transcript of id to w, every line prefixed with
// pad: the header line, then the events after the seed (a fork's inherited
// prefix, which the parent's transcript already shows).
func showSession(ctx context.Context, w io.Writer, c *store.Coordinator, id session.ID, pad string) error {
	out := w
	if pad != "" {
		out = &padWriter{w: w, pad: pad, bol: true}
	}
	var seed int64
	return c.Scan(ctx, id, func(h session.Header) error {
		seed = int64(h.SeedLength)
		if pad != "" {
			fmt.Fprintf(out, "── subagent session %s ──\n", h.ID)
			return nil
		}
		fmt.Fprintf(out, "session %s  (%s, created %s)\n\n", h.ID, h.Cwd, time.UnixMilli(h.CreatedAt).Format(time.RFC3339))
		return nil
	}, func(e session.Event) error {
		if e.Seq >= seed {
			transcriptEvent(out, e)
		}
		return nil
	})
}

// padWriter prefixes every line written through it with pad, leaving
// empty lines empty.
type padWriter struct {
	w   io.Writer
	pad string
	bol bool // at the beginning of a line
}

func (p *padWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		line, rest, nl := bytes.Cut(b, []byte{'\n'})
		if p.bol && len(line) > 0 {
			if _, err := io.WriteString(p.w, p.pad); err != nil {
				return 0, err
			}
		}
		if _, err := p.w.Write(line); err != nil {
			return 0, err
		}
		if nl {
			if _, err := p.w.Write([]byte{'\n'}); err != nil {
				return 0, err
			}
		}
		p.bol = nl
		b = rest
	}
	return n, nil
}

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
		if err := showSession(ctx, stdio.Out, c, in.Header.ID, strings.Repeat("    ", depth)); err != nil {
			return err
		}
		fmt.Fprintln(stdio.Out)
		if err := showChildren(ctx, stdio, c, in.Header.ID, depth+1); err != nil {
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
