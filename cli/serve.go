package cli

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/time/rate"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/internal/memlimit"
	sbplugin "github.com/dshq/dsh/sandbox/plugin"
	"github.com/dshq/dsh/serve"
	"github.com/dshq/dsh/serve/jobs"
	"github.com/dshq/dsh/serve/tokens"
	"github.com/dshq/dsh/serve/weblogin"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/store/backends"
	"github.com/dshq/dsh/telemetry"
)

func init() { extraCommands = append(extraCommands, newServeCmd) }

// serveFlags are dsh serve's own flags.
type serveFlags struct {
	configFlags
	listen         string
	tlsCert        string
	tlsKey         string
	roots          []string
	cors           []string
	rate           float64
	burst          int
	maxBody        string
	idleEvict      time.Duration
	memoryBudget   string
	approvalWait   time.Duration
	approvalPolicy string
	worker         string
	runs           runFlags
}

// runFlags configure the background-run workers (PostgreSQL only).
type runFlags struct {
	workers        int
	workspaceLimit int
	rescueAfter    time.Duration
	retryBackoff   time.Duration
	timeout        time.Duration
}

func newServeCmd(stdio IO) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "serve dsh over HTTP: many agents in one process, sessions, live event streams, approvals, background runs",
		Long: `dsh serve runs an HTTP API (docs/serve.md; GET /openapi.json describes it) on
loopback by default. Sessions work in directories under the --root directories
(the current directory by default); every route but /healthz needs a bearer
token made with "dsh serve token create".

  dsh serve token create laptop            # prints the token once
  dsh serve --root ~/src --listen 127.0.0.1:7878
  curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:7878/v1/sessions

Idle sessions leave memory after --idle-evict and load again on demand. On a
PostgreSQL session store several dsh serve processes share every session and
run background runs (POST /v1/runs) from one queue.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), stdio, f)
		},
	}
	fl := cmd.Flags()
	f.register(fl, false)
	fl.StringVar(&f.listen, "listen", "127.0.0.1:7878", "address to listen on (host:port; port 0 picks one, printed on stderr)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with this certificate (PEM), with --tls-key")
	fl.StringVar(&f.tlsKey, "tls-key", "", "the private key of --tls-cert (PEM)")
	stringArrayVar(fl, &f.roots, "root", "a directory sessions may work in, or under (repeatable; default: the current directory)")
	stringArrayVar(fl, &f.cors, "cors-origin", "an origin browsers may call the API from (repeatable; default: none, CORS off)")
	fl.Float64Var(&f.rate, "rate", 50, "requests per second each token may make")
	fl.IntVar(&f.burst, "burst", 100, "requests a token may make at once above --rate")
	fl.StringVar(&f.maxBody, "max-request", "1MiB", "the largest request body")
	fl.DurationVar(&f.idleEvict, "idle-evict", 2*time.Minute, "how long an idle session stays in memory (then it is loaded again on demand); 0: never")
	fl.StringVar(&f.memoryBudget, "memory-budget", "", "heap the server aims to stay under, evicting idle sessions (e.g. 512MiB; also sets the Go memory limit)")
	fl.DurationVar(&f.approvalWait, "approval-timeout", 10*time.Minute, "how long a permission question waits for an answer")
	fl.StringVar(&f.approvalPolicy, "approval-timeout-policy", "deny", "what an unanswered question becomes: deny, or cancel (deny and cancel the turn)")
	fl.StringVar(&f.worker, "worker", "", "this worker's name (default: host-pid)")
	fl.IntVar(&f.runs.workers, "run-workers", 4, "background runs this worker works at once (PostgreSQL store; 0: none, the API still queues them)")
	fl.IntVar(&f.runs.workspaceLimit, "run-workspace-limit", 1, "background runs working in one workspace directory at once, across every worker (0: no limit)")
	fl.DurationVar(&f.runs.rescueAfter, "run-rescue-after", 5*time.Minute, "how long a run may stay running before it is taken back from a worker presumed dead and retried")
	fl.DurationVar(&f.runs.retryBackoff, "run-retry-backoff", 5*time.Second, "the wait before a failed run's first retry (doubled for each further one)")
	fl.DurationVar(&f.runs.timeout, "run-timeout", 0, "the longest one attempt of a run may take (0: no limit)")
	fl.SetNormalizeFunc(claudeNames)
	cmd.AddCommand(newServeTokenCmd(stdio), newServeJobsCmd(stdio))
	return cmd
}

// parseBytes reads 512MiB, 64KiB, 2GB, 1000.
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.n
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size (e.g. 512MiB)", s)
	}
	return n * mult, nil
}

func runServe(ctx context.Context, stdio IO, f serveFlags) error {
	h, err := home(stdio.Env)
	if err != nil {
		return usageErr("%v", err)
	}
	if err := privateHome(stdio, h); err != nil {
		return usageErr("creating %s: %v", h, err)
	}
	if _, err := f.layers(); err != nil {
		return usageErr("%v", err)
	}
	maxBody, err := parseBytes(f.maxBody)
	if err != nil {
		return usageErr("--max-request: %v", err)
	}
	var budget int64
	if f.memoryBudget != "" {
		if budget, err = parseBytes(f.memoryBudget); err != nil {
			return usageErr("--memory-budget: %v", err)
		}
		// The Go runtime collects harder as the heap nears the budget, so
		// evicted sessions' memory is given back before it is exceeded.
		debug.SetMemoryLimit(budget)
	} else if stdio.Env(memlimit.Env) == "" {
		// The front doors' default limit is sized for one session; a
		// server holding hundreds would collect without pause under it.
		// Without a budget (or GOMEMLIMIT) the server sets none.
		debug.SetMemoryLimit(math.MaxInt64)
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return usageErr("--tls-cert and --tls-key go together")
	}
	roots := f.roots
	if len(roots) == 0 {
		cwd, err := os.Getwd()
		if err != nil {
			return usageErr("cannot read the working directory: %v", err)
		}
		roots = []string{cwd}
	}
	for i, r := range roots {
		if roots[i], err = filepath.Abs(r); err != nil {
			return usageErr("--root %s: %v", r, err)
		}
	}
	worker := f.worker
	if worker == "" {
		host, _ := os.Hostname()
		worker = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	fileLog, closeLog, err := logger(h, f.verbose, stdio.Err)
	if err != nil {
		return usageErr("%v", err)
	}
	defer closeLog()
	log := slog.New(slog.NewMultiHandler(fileLog.Handler(), slog.NewTextHandler(stdio.Err, &slog.HandlerOptions{Level: slog.LevelWarn})))
	policy := f.trustPolicy(IO{Err: stdio.Err, Env: stdio.Env}, h, false)
	userCfg, _, err := f.configure(h, userHome(stdio.Env), "", policy)
	if err != nil {
		return usageErr("%v", strings.TrimPrefix(err.Error(), "settings: "))
	}
	storeCfg := backends.FromSettings(userCfg)
	catalog, closeCatalog, err := openNamedStore(storeCfg, backends.Options{Home: h, Getenv: stdio.Env,
		Logf: func(format string, args ...any) { log.Warn(fmt.Sprintf(format, args...)) }})
	if err != nil {
		return err
	}
	defer closeCatalog()
	st := site(stdio, h, "", nil)
	st.Version, st.Warn = Version, func(msg string) { log.Warn(msg) }
	build := func(ctx context.Context, dir, sandbox string) (*app.App, error) {
		var extra []settings.File
		if sandbox != "" {
			l, err := sbplugin.Flag(sandbox)
			if err != nil {
				return nil, err
			}
			extra = append(extra, l)
		}
		cfg, trusted, err := f.configure(h, userHome(stdio.Env), dir, policy, extra...)
		if err != nil {
			return nil, err
		}
		for _, w := range cfg.Warnings() {
			log.Warn(w, "workspace", dir)
		}
		ws := st
		ws.Cwd, ws.Trusted = dir, trusted
		a, err := app.New(ctx, app.Options{Config: cfg, Site: ws, Logger: log.With("workspace", dir)})
		if err != nil && errors.Is(err, core.ErrConfig) {
			return nil, fmt.Errorf("%v", strings.TrimPrefix(err.Error(), "app: "))
		}
		return a, err
	}
	// Metrics are always kept for /metrics; spans and metrics are exported
	// when OTEL_EXPORTER_OTLP_* name a collector. Started before the first
	// app is composed, so every workspace's agents are instrumented.
	rt, err := telemetry.Start(ctx, telemetry.Options{Version: Version, Instance: worker, Env: stdio.Env, Prometheus: true})
	if err != nil {
		return usageErr("%v", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := rt.Shutdown(sctx); err != nil {
			log.Warn(err.Error())
		}
	}()
	var queue *jobs.Queue
	if storeCfg.Store == backends.Postgres {
		if queue, err = openQueue(ctx, storeCfg, stdio, worker, f.runs.workers, f.runs, log); err != nil {
			return err
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := queue.Close(cctx); err != nil {
				log.Warn("serve: stopping the run workers", "err", err)
			}
		}()
	}
	var runs serve.Runs
	if queue != nil {
		runs = queue
	}
	// Web log-ins live where the sessions do when that is shared, so a
	// cookie made on one worker is good on the others.
	var logins weblogin.Store
	if storeCfg.Store == backends.Postgres {
		pc, err := storeCfg.Postgres.Resolve(stdio.Env)
		if err != nil {
			return usageErr("%v", err)
		}
		pl, err := weblogin.OpenPostgres(ctx, pc.URL, pc.Schema)
		if err != nil {
			return fmt.Errorf("dsh serve: web log-ins at %s: %w", backends.Where(storeCfg, backends.Options{Getenv: stdio.Env}), err)
		}
		defer pl.Close()
		logins = pl
	}
	keeper, closeTokens, err := openTokens(ctx, h, storeCfg, stdio.Env)
	if err != nil {
		return err
	}
	defer closeTokens()
	srv, err := serve.New(serve.Options{
		Runs:    runs,
		Logins:  logins,
		Metrics: rt.Metrics(),
		Roots:   roots, Tokens: keeper, App: build, Catalog: catalog, Logger: log,
		Worker: worker, Version: Version, MaxRequestBytes: maxBody, Rate: rate.Limit(f.rate), Burst: f.burst,
		CORSOrigins: f.cors, IdleEvict: f.idleEvict, MemoryBudget: budget,
		ApprovalTimeout: f.approvalWait, ApprovalPolicy: f.approvalPolicy,
	})
	if err != nil {
		return usageErr("%v", err)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		_ = srv.Close(context.Background())
		return usageErr("--listen %s: %v", f.listen, err)
	}
	scheme := "http"
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	if f.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			_ = srv.Close(context.Background())
			return usageErr("--tls-cert: %v", err)
		}
		hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, hs.TLSConfig)
		scheme = "https"
	}
	if queue != nil {
		if err := queue.Start(ctx, srv); err != nil {
			_ = srv.Close(context.Background())
			return err
		}
	}
	if toks, _ := keeper.List(); len(toks) == 0 {
		fmt.Fprintln(stdio.Err, "dsh serve: no token exists yet: make one with dsh serve token create NAME")
	}
	fmt.Fprintf(stdio.Err, "dsh serve: listening on %s://%s (worker %s; roots %s)\n", scheme, ln.Addr(), worker, strings.Join(roots, ", "))
	fmt.Fprintf(stdio.Err, "dsh serve: web UI at %s://%s/ui (log in with a token)\n", scheme, ln.Addr())
	log.Info("serve: listening", "addr", ln.Addr().String(), "worker", worker)
	var wg sync.WaitGroup
	wg.Go(func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	})
	err = hs.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	wg.Wait()
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if queue != nil {
		// Runs stop first (each given a few seconds, then its turn is
		// cancelled and the run handed back to the queue), so none is
		// cut off by its agent being disposed.
		if err := queue.Close(cctx); err != nil {
			log.Warn("serve: stopping the run workers", "err", err)
		}
	}
	if cerr := srv.Close(cctx); cerr != nil {
		log.Warn("serve: closing", "err", cerr)
	}
	return err
}

func newServeTokenCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "make, list and revoke the bearer tokens of dsh serve",
		Args:  cobra.NoArgs,
	}
	var readOnly bool
	var workspaces []string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "make a token and print it (only its hash is kept)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			st, done, err := tokenStore(stdio)
			if err != nil {
				return err
			}
			defer done()
			access := tokens.Full
			if readOnly {
				access = tokens.Read
			}
			for i, w := range workspaces {
				if workspaces[i], err = filepath.Abs(w); err != nil {
					return usageErr("--workspace %s: %v", w, err)
				}
			}
			raw, _, err := st.Create(args[0], access, workspaces, time.Now())
			if err != nil {
				return usageErr("%v", strings.TrimPrefix(err.Error(), "tokens: "))
			}
			fmt.Fprintln(stdio.Out, raw)
			return nil
		},
	}
	create.Flags().BoolVar(&readOnly, "read-only", false, "the token may only read (list, get, stream), never act")
	stringArrayVar(create.Flags(), &workspaces, "workspace", "a directory the token is limited to (repeatable; default: every root)")
	revoke := &cobra.Command{
		Use:   "revoke NAME",
		Short: "revoke a token (by name or id); a running server refuses it from its next request",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			st, done, err := tokenStore(stdio)
			if err != nil {
				return err
			}
			defer done()
			t, err := st.Revoke(args[0])
			if err != nil {
				return usageErr("%v", strings.TrimPrefix(err.Error(), "tokens: "))
			}
			fmt.Fprintf(stdio.Err, "dsh serve: revoked token %s (%s)\n", t.Name, t.ID)
			return nil
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "list the tokens (names, access, workspaces; never the tokens)",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			st, done, err := tokenStore(stdio)
			if err != nil {
				return err
			}
			defer done()
			toks, err := st.List()
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tID\tACCESS\tWORKSPACES\tCREATED")
			for _, t := range toks {
				ws := strings.Join(t.Workspaces, ",")
				if ws == "" {
					ws = "(every root)"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", t.Name, t.ID, t.Access, ws, time.UnixMilli(t.Created).Format(time.RFC3339))
			}
			return w.Flush()
		},
	}
	cmd.AddCommand(create, revoke, list)
	return cmd
}

// tokenStore is where dsh serve keeps its tokens: the database when the
// session store is PostgreSQL (a fleet shares it), else the file under
// DSH_HOME. done closes it.
func tokenStore(stdio IO) (st tokens.Keeper, done func(), err error) {
	h, err := home(stdio.Env)
	if err != nil {
		return nil, nil, usageErr("%v", err)
	}
	if err := privateHome(stdio, h); err != nil {
		return nil, nil, usageErr("creating %s: %v", h, err)
	}
	var f configFlags
	userCfg, _, err := f.configure(h, userHome(stdio.Env), "", f.trustPolicy(IO{Err: stdio.Err, Env: stdio.Env}, h, false))
	if err != nil {
		return nil, nil, usageErr("%v", strings.TrimPrefix(err.Error(), "settings: "))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return openTokens(ctx, h, backends.FromSettings(userCfg), stdio.Env)
}

// openTokens opens the tokens of the session store cfg names: with
// PostgreSQL the database's, so any worker of a fleet authenticates a token
// made against it and a revocation holds on every worker; else the file
// under home. done closes it.
func openTokens(ctx context.Context, home string, cfg backends.Config, env func(string) string) (tokens.Keeper, func(), error) {
	if cfg.Store != backends.Postgres {
		return tokens.Open(tokens.Path(home)), func() {}, nil
	}
	pc, err := cfg.Postgres.Resolve(env)
	if err != nil {
		return nil, nil, usageErr("%v", err)
	}
	pt, err := tokens.OpenPostgres(ctx, pc.URL, pc.Schema)
	if err != nil {
		return nil, nil, fmt.Errorf("dsh serve: the tokens at %s: %w", backends.Where(cfg, backends.Options{Getenv: env}), err)
	}
	return pt, pt.Close, nil
}

// openQueue opens the background-run queue on the PostgreSQL store's
// database and schema.
func openQueue(ctx context.Context, cfg backends.Config, stdio IO, worker string, workers int, rf runFlags, log *slog.Logger) (*jobs.Queue, error) {
	pc, err := cfg.Postgres.Resolve(stdio.Env)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if workers < 0 || rf.workspaceLimit < 0 {
		return nil, usageErr("--run-workers and --run-workspace-limit must not be negative")
	}
	q, err := jobs.Open(ctx, jobs.Options{URL: pc.URL, Schema: pc.Schema, Workers: workers, WorkspaceLimit: rf.workspaceLimit,
		RescueAfter: rf.rescueAfter, RetryBackoff: rf.retryBackoff, Timeout: rf.timeout, Worker: worker, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("dsh serve: the run queue at %s: %w", backends.Where(cfg, backends.Options{Getenv: stdio.Env}), err)
	}
	return q, nil
}

func newServeJobsCmd(stdio IO) *cobra.Command {
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "list the background runs of the fleet (the queue on the PostgreSQL session store)",
		Long: `dsh serve jobs lists background runs (POST /v1/runs), newest first, from the
database every dsh serve worker shares: state, attempts, workspace, session,
the worker of the latest attempt, and the prompt or the last error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := home(stdio.Env)
			if err != nil {
				return usageErr("%v", err)
			}
			var f configFlags
			userCfg, _, err := f.configure(h, userHome(stdio.Env), "", f.trustPolicy(IO{Err: stdio.Err, Env: stdio.Env}, h, false))
			if err != nil {
				return usageErr("%v", strings.TrimPrefix(err.Error(), "settings: "))
			}
			cfg := backends.FromSettings(userCfg)
			if cfg.Store != backends.Postgres {
				return usageErr("background runs need the PostgreSQL session store (\"sessionStore\": \"postgres\" in your user settings); this one is %s", cfg.Store)
			}
			q, err := openQueue(cmd.Context(), cfg, stdio, "", 0, runFlags{}, slog.New(slog.NewTextHandler(stdio.Err, &slog.HandlerOptions{Level: slog.LevelWarn})))
			if err != nil {
				return err
			}
			defer func() { _ = q.Close(context.Background()) }()
			runs, err := q.List(cmd.Context(), limit)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(stdio.Out)
				for _, r := range runs {
					if err := enc.Encode(r); err != nil {
						return err
					}
				}
				return nil
			}
			w := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tSTATE\tATTEMPT\tWORKSPACE\tSESSION\tWORKER\tCREATED\tPROMPT / ERROR")
			for _, r := range runs {
				what := r.Prompt
				if r.State != "succeeded" && len(r.Errors) > 0 {
					what = r.Errors[len(r.Errors)-1]
				}
				fmt.Fprintf(w, "%d\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.State, r.Attempt, r.MaxAttempts, r.Workspace, r.Session,
					r.Worker, time.UnixMilli(r.CreatedAt).Format(time.RFC3339), oneLine(what, 60))
			}
			return w.Flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "how many runs to list")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (the API's Run) per line")
	return cmd
}

// oneLine shortens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
