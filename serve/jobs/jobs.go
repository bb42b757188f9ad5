// Package jobs is the queue of dsh serve's background runs (POST /v1/runs):
// River (github.com/riverqueue/river) on the PostgreSQL database and
// schema of the session store, so every worker of a fleet takes runs from
// one queue and runs each as a session any worker can stream.
//
// A run is a River job whose arguments hold its prompt, workspace and the
// id of its own session, chosen when it is queued. Every attempt, on
// whichever worker, continues that one session: the writer lease of the
// session store decides who may append to it, and a session that already
// holds a completed turn is never prompted again. River decides who runs
// the job, retries it after a failure, and rescues it from a worker that
// died (after RescueAfter); the lease makes sure that, whatever River
// does, the turn is run by one writer at a time and completed at most
// once (docs/rfc/implemented/architecture/2026-12-02-runs-on-river.md).
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/dshq/dsh/internal/uuid"
	"github.com/dshq/dsh/serve"
	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/tokens"
	"github.com/dshq/dsh/session"
)

// The job kinds and the queue runs go through.
const (
	KindRun      = "dsh_run"
	KindCallback = "dsh_run_callback"
	queueName    = "dsh_runs"
)

// DefaultMaxAttempts is a run's attempts when its request names none.
const DefaultMaxAttempts = 3

// Options configure a [Queue].
type Options struct {
	// URL and Schema name the database and schema of the session store;
	// River's tables go in the same schema.
	URL    string
	Schema string
	// Workers is how many runs this process works at once; 0 makes a
	// queue that only inserts, reads and cancels (dsh serve jobs).
	Workers int
	// WorkspaceLimit is how many runs may work in one workspace directory
	// at once across every worker on the database (0: no limit). A run
	// over the limit waits (it is snoozed, not failed).
	WorkspaceLimit int
	// RescueAfter is how long a run may stay running before River takes
	// it back as stuck (its worker died) and retries it (default 5m). A
	// run still working past it is not run twice: the retry finds its
	// session held and waits for it.
	RescueAfter time.Duration
	// Timeout bounds one attempt (0: none).
	Timeout time.Duration
	// RetryBackoff is the wait before the first retry, doubled for each
	// further attempt up to 10 minutes (default 5s).
	RetryBackoff time.Duration
	// BusyWait is how long a run whose session another writer holds
	// waits before it is tried again (default 2s).
	BusyWait time.Duration
	// CallbackAttempts bounds the POSTs of a run's callback (default 5).
	CallbackAttempts int
	// HTTP posts callbacks (default: a client with a 30s timeout).
	HTTP *http.Client
	// Worker names this process in River (its client id).
	Worker string
	Logger *slog.Logger
	// NewID makes a run's session id (default: a random UUID).
	NewID func() string
}

// Executor runs one attempt of a run (the serve.Server of this process).
type Executor interface {
	ExecuteRun(ctx context.Context, spec serve.RunSpec) (string, error)
}

// Queue is the run queue: it implements [serve.Runs] and works runs with
// an [Executor] once started.
type Queue struct {
	o      Options
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
	exec   Executor
	log    *slog.Logger

	closeOnce sync.Once
	closeErr  error
	unobserve func()
}

var _ serve.Runs = (*Queue)(nil)

// RunArgs are a run's job arguments.
type RunArgs struct {
	Workspace      string     `json:"workspace"`
	Prompt         string     `json:"prompt"`
	Model          string     `json:"model,omitempty"`
	PermissionMode string     `json:"permissionMode,omitempty"`
	Callback       string     `json:"callback,omitempty"`
	Session        session.ID `json:"session"`
	// Token is the name of the token that queued the run (for people
	// reading the queue; never the token).
	Token string `json:"token,omitempty"`
}

// Kind implements river.JobArgs.
func (RunArgs) Kind() string { return KindRun }

// CallbackArgs are a callback's job arguments: the run to report.
type CallbackArgs struct {
	Run int64  `json:"run"`
	URL string `json:"url"`
}

// Kind implements river.JobArgs.
func (CallbackArgs) Kind() string { return KindCallback }

// Open connects, migrates River's tables into the schema (serialized with
// an advisory lock: a fleet starting at once migrates once) and makes the
// River client. It starts no work: see [Queue.Start].
func Open(ctx context.Context, o Options) (*Queue, error) {
	if o.Schema == "" {
		o.Schema = "dsh"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.RescueAfter <= 0 {
		o.RescueAfter = 5 * time.Minute
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = 5 * time.Second
	}
	if o.BusyWait <= 0 {
		o.BusyWait = 2 * time.Second
	}
	if o.CallbackAttempts <= 0 {
		o.CallbackAttempts = 5
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if o.NewID == nil {
		o.NewID = uuid.New
	}
	if o.Workers < 0 || o.WorkspaceLimit < 0 {
		return nil, errors.New("jobs: Workers and WorkspaceLimit must not be negative")
	}
	cfg, err := pgxpool.ParseConfig(o.URL)
	if err != nil {
		return nil, errors.New("jobs: the connection string does not parse")
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = o.Schema
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "dsh-jobs"
	}
	// River's producer, notifier and leader need a few connections; each
	// working run holds one more for its workspace slot.
	cfg.MaxConns = int32(6 + 2*o.Workers)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("jobs: connecting: %w", err)
	}
	q := &Queue{o: o, pool: pool, log: o.Logger}
	if err := q.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &runWorker{q: q}); err != nil {
		pool.Close()
		return nil, fmt.Errorf("jobs: %w", err)
	}
	if err := river.AddWorkerSafely(workers, &callbackWorker{q: q}); err != nil {
		pool.Close()
		return nil, fmt.Errorf("jobs: %w", err)
	}
	rc := &river.Config{
		Schema:               o.Schema,
		Logger:               riverLogger(o.Logger),
		Workers:              workers,
		ID:                   clientID(o.Worker),
		RescueStuckJobsAfter: o.RescueAfter,
		// River's rescuer takes a running job back only once its timeout
		// has passed (never, without one), so River's timeout is the
		// rescue time; a run's own limit (Options.Timeout) is applied by
		// the worker, which keeps working past River's deadline.
		JobTimeout:  o.RescueAfter,
		RetryPolicy: &backoff{base: o.RetryBackoff},
		MaxAttempts: DefaultMaxAttempts,
	}
	if o.Workers > 0 {
		rc.Queues = map[string]river.QueueConfig{queueName: {MaxWorkers: o.Workers}}
	}
	q.client, err = river.NewClient(riverpgxv5.New(pool), rc)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return q, nil
}

// migrate brings River's tables up to date in the schema. River's
// migrations cannot share one transaction (a new enum value is used by
// the next), so a session-level advisory lock on a connection of its own
// serializes workers that start together.
func (q *Queue) migrate(ctx context.Context) error {
	m, err := rivermigrate.New(riverpgxv5.New(q.pool), &rivermigrate.Config{Schema: q.o.Schema, Logger: riverLogger(q.log)})
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	conn, err := q.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("jobs: migrating: %w", err)
	}
	defer conn.Release()
	key := lockKey("river-migrate", q.o.Schema)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		return fmt.Errorf("jobs: migrating: %w", err)
	}
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", key); err != nil {
			_ = conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{q.o.Schema}.Sanitize()); err != nil {
		return fmt.Errorf("jobs: migrating: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("jobs: migrating River's tables: %w", err)
	}
	return nil
}

// Start works runs with exec until [Queue.Close]; a queue opened without
// Workers only inserts and reads.
func (q *Queue) Start(ctx context.Context, exec Executor) error {
	if q.o.Workers == 0 {
		return nil
	}
	q.exec = exec
	if err := q.client.Start(ctx); err != nil {
		return fmt.Errorf("jobs: starting the workers: %w", err)
	}
	return nil
}

// Close stops working: running attempts are given a few seconds to end,
// then cancelled (their turns cancelled; River retries them later), and
// the pool closed.
func (q *Queue) Close(ctx context.Context) error {
	q.closeOnce.Do(func() {
		if q.unobserve != nil {
			q.unobserve()
		}
		if q.o.Workers > 0 && q.exec != nil {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := q.client.Stop(sctx)
			cancel()
			if err != nil {
				err = q.client.StopAndCancel(ctx)
			}
			q.closeErr = err
		}
		q.pool.Close()
	})
	return q.closeErr
}

// Create queues a run.
func (q *Queue) Create(ctx context.Context, tok tokens.Token, req api.CreateRun, workspace string) (api.Run, error) {
	attempts := req.MaxAttempts
	if attempts == 0 {
		attempts = DefaultMaxAttempts
	}
	args := RunArgs{Workspace: workspace, Prompt: req.Prompt, Model: req.Model, PermissionMode: req.PermissionMode,
		Callback: req.Callback, Session: session.ID(q.o.NewID()), Token: tok.Name}
	res, err := q.client.Insert(ctx, args, &river.InsertOpts{Queue: queueName, MaxAttempts: attempts})
	if err != nil {
		return api.Run{}, fmt.Errorf("jobs: queueing the run: %w", err)
	}
	return view(res.Job), nil
}

// Get reads a run.
func (q *Queue) Get(ctx context.Context, id int64) (api.Run, error) {
	row, err := q.row(ctx, id)
	if err != nil {
		return api.Run{}, err
	}
	return view(row), nil
}

func (q *Queue) row(ctx context.Context, id int64) (*rivertype.JobRow, error) {
	row, err := q.client.JobGet(ctx, id)
	if errors.Is(err, river.ErrNotFound) || (err == nil && row.Kind != KindRun) {
		return nil, fmt.Errorf("%w: %d", serve.ErrRunNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: reading run %d: %w", id, err)
	}
	return row, nil
}

// List reads the newest runs.
func (q *Queue) List(ctx context.Context, limit int) ([]api.Run, error) {
	res, err := q.client.JobList(ctx, river.NewJobListParams().Kinds(KindRun).First(limit).OrderBy(river.JobListOrderByID, river.SortOrderDesc))
	if err != nil {
		return nil, fmt.Errorf("jobs: listing runs: %w", err)
	}
	out := make([]api.Run, 0, len(res.Jobs))
	for _, row := range res.Jobs {
		out = append(out, view(row))
	}
	return out, nil
}

// Cancel cancels a run: a queued one at once, a running one by
// cancelling its turn (the worker ends the attempt, so the run may show
// running for a moment). A finished run cannot be cancelled.
func (q *Queue) Cancel(ctx context.Context, id int64) (api.Run, error) {
	row, err := q.row(ctx, id)
	if err != nil {
		return api.Run{}, err
	}
	if row.FinalizedAt != nil {
		return api.Run{}, fmt.Errorf("%w: run %d already %s", serve.ErrRunFinished, id, state(row))
	}
	row, err = q.client.JobCancel(ctx, id)
	if err != nil {
		return api.Run{}, fmt.Errorf("jobs: cancelling run %d: %w", id, err)
	}
	if row.State == rivertype.JobStateCancelled {
		// Cancelled before it ran: no worker will report it.
		q.callback(ctx, nil, row)
	}
	return view(row), nil
}

// Depth counts the runs waiting to be worked (queued and retrying) and
// those running, across the fleet (the queue-depth gauge).
func (q *Queue) Depth(ctx context.Context) (queued, running int64, err error) {
	rows, err := q.pool.Query(ctx, `SELECT state::text, count(*) FROM `+pgx.Identifier{q.o.Schema, "river_job"}.Sanitize()+
		` WHERE kind = $1 AND state IN ('available','scheduled','retryable','pending','running') GROUP BY state`, KindRun)
	if err != nil {
		return 0, 0, fmt.Errorf("jobs: counting runs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return 0, 0, fmt.Errorf("jobs: counting runs: %w", err)
		}
		if st == string(rivertype.JobStateRunning) {
			running += n
		} else {
			queued += n
		}
	}
	return queued, running, rows.Err()
}

// ---- views ----

// state is a run's state in the API's words.
func state(row *rivertype.JobRow) string {
	switch row.State {
	case rivertype.JobStateRunning:
		return api.RunRunning
	case rivertype.JobStateCompleted:
		return api.RunSucceeded
	case rivertype.JobStateCancelled:
		return api.RunCancelled
	case rivertype.JobStateDiscarded:
		return api.RunFailed
	}
	return api.RunQueued
}

func view(row *rivertype.JobRow) api.Run {
	var args RunArgs
	_ = json.Unmarshal(row.EncodedArgs, &args) // written by Create; a foreign row shows what it can
	r := api.Run{ID: row.ID, State: state(row), Workspace: args.Workspace, Prompt: args.Prompt, Model: args.Model,
		PermissionMode: args.PermissionMode, Session: args.Session, Attempt: row.Attempt, MaxAttempts: row.MaxAttempts,
		CreatedAt: row.CreatedAt.UnixMilli(), Callback: args.Callback != ""}
	if row.State == rivertype.JobStateRetryable {
		r.RetryAt = row.ScheduledAt.UnixMilli()
	}
	if row.AttemptedAt != nil {
		r.StartedAt = row.AttemptedAt.UnixMilli()
	}
	if n := len(row.AttemptedBy); n > 0 {
		r.Worker = row.AttemptedBy[n-1]
	}
	if row.FinalizedAt != nil {
		r.FinishedAt = row.FinalizedAt.UnixMilli()
	}
	if out := row.Output(); len(out) > 0 {
		var res runOutput
		if json.Unmarshal(out, &res) == nil {
			r.Result = res.Result
		}
	}
	for _, e := range row.Errors {
		r.Errors = append(r.Errors, fmt.Sprintf("attempt %d: %s", e.Attempt, e.Error))
	}
	return r
}

// runOutput is what a successful attempt records as the job's output.
type runOutput struct {
	Result string `json:"result"`
}

// ---- helpers ----

// backoff retries after base, doubled per attempt, at most 10 minutes.
type backoff struct{ base time.Duration }

func (b *backoff) NextRetry(row *rivertype.JobRow) time.Time {
	d := b.base
	for i := 1; i < row.Attempt && d < 10*time.Minute; i++ {
		d *= 2
	}
	return time.Now().Add(min(d, 10*time.Minute))
}

func lockKey(parts ...string) int64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return int64(h.Sum64())
}

// clientID is River's client id: the worker's name (at most 100 bytes),
// or River's own when unnamed.
func clientID(worker string) string {
	if len(worker) > 100 {
		worker = worker[:100]
	}
	return worker
}

// riverLogger passes River's warnings and errors on; its info lines (every
// leader election, every start) are noise in dsh's log.
func riverLogger(l *slog.Logger) *slog.Logger {
	return slog.New(levelFilter{h: l.Handler(), min: slog.LevelWarn})
}

type levelFilter struct {
	h   slog.Handler
	min slog.Level
}

func (f levelFilter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min && f.h.Enabled(ctx, l)
}
func (f levelFilter) Handle(ctx context.Context, r slog.Record) error { return f.h.Handle(ctx, r) }
func (f levelFilter) WithAttrs(a []slog.Attr) slog.Handler {
	return levelFilter{h: f.h.WithAttrs(a), min: f.min}
}
func (f levelFilter) WithGroup(g string) slog.Handler {
	return levelFilter{h: f.h.WithGroup(g), min: f.min}
}
