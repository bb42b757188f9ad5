package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/dshq/dsh/serve"
)

// runWorker works one attempt of a run.
type runWorker struct {
	river.WorkerDefaults[RunArgs]
	q *Queue
}

func (w *runWorker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	q := w.q
	slot, ok, err := q.workspaceSlot(ctx, job.Args.Workspace)
	if err != nil {
		return err
	}
	if !ok {
		// The workspace is at its limit: wait without spending an attempt.
		return river.JobSnooze(jitter(q.o.BusyWait))
	}
	defer slot.release()
	spec := serve.RunSpec{Run: job.ID, Attempt: job.Attempt, Session: job.Args.Session, Workspace: job.Args.Workspace,
		Prompt: job.Args.Prompt, Model: job.Args.Model, PermissionMode: job.Args.PermissionMode}
	wctx, cancel := pastDeadline(ctx)
	defer cancel()
	if q.o.Timeout > 0 {
		var stop context.CancelFunc
		wctx, stop = context.WithTimeout(wctx, q.o.Timeout)
		defer stop()
	}
	text, err := q.exec.ExecuteRun(wctx, spec)
	if err != nil && q.o.Timeout > 0 && errors.Is(wctx.Err(), context.DeadlineExceeded) {
		// The run's own time limit: a failed attempt like any other.
		err = fmt.Errorf("jobs: run %d: attempt %d took longer than %s: %w", job.ID, job.Attempt, q.o.Timeout, err)
	}
	switch {
	case errors.Is(err, serve.ErrRunBusy):
		// Another writer holds the session (an earlier attempt still
		// working after a rescue, or a dead worker's lease not yet
		// expired): nothing was done; try again later, not as a failure.
		q.log.Info("jobs: run's session is busy; waiting", "run", job.ID, "err", err)
		return river.JobSnooze(jitter(q.o.BusyWait))
	case err != nil && errors.Is(context.Cause(ctx), river.ErrJobCancelledRemotely):
		q.callback(context.WithoutCancel(ctx), nil, job.JobRow, rivertype.JobStateCancelled)
		return river.JobCancel(err)
	case err != nil && errors.Is(ctx.Err(), context.Canceled):
		// This worker is stopping: its turn was cancelled; the run goes
		// back to the queue at once without spending the attempt.
		return river.JobSnooze(0)
	case err != nil:
		if job.Attempt >= job.MaxAttempts {
			// The last attempt: River discards the run as it returns.
			q.callback(context.WithoutCancel(ctx), nil, job.JobRow, rivertype.JobStateDiscarded)
		}
		return err
	}
	// Past River's deadline (the rescue time) ctx is done: finish on wctx.
	ctx = wctx
	if err := river.RecordOutput(ctx, runOutput{Result: text}); err != nil {
		return fmt.Errorf("jobs: recording run %d's result: %w", job.ID, err)
	}
	if job.Args.Callback == "" {
		return nil
	}
	// Completing the run and queueing its callback commit together, so
	// a completed run always reports, once.
	tx, err := q.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("jobs: completing run %d: %w", job.ID, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
		return fmt.Errorf("jobs: completing run %d: %w", job.ID, err)
	}
	q.callback(ctx, tx, job.JobRow, rivertype.JobStateCompleted)
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("jobs: completing run %d: %w", job.ID, err)
	}
	return nil
}

// Timeout is River's deadline for an attempt, which is also when its
// rescuer may take the run back from a worker presumed dead: the rescue
// time. The attempt itself ignores it (see pastDeadline).
func (w *runWorker) Timeout(*river.Job[RunArgs]) time.Duration { return w.q.o.RescueAfter }

// pastDeadline is ctx without its deadline: cancelled (with ctx's cause)
// when ctx is cancelled for any other reason, a remote cancellation or
// the worker stopping. A run working past the rescue time goes on; the
// writer lease keeps the rescued retry from running it a second time.
func pastDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel(context.Cause(ctx))
		}
	})
	return out, func() { stop(); cancel(context.Canceled) }
}

// callback queues the POST of a run's callback, in tx when given. The
// run's final state is read when the callback is worked (it snoozes until
// the run is finalized); final is only logged.
func (q *Queue) callback(ctx context.Context, tx pgx.Tx, row *rivertype.JobRow, final ...rivertype.JobState) {
	var args RunArgs
	if json.Unmarshal(row.EncodedArgs, &args) != nil || args.Callback == "" {
		return
	}
	cb := CallbackArgs{Run: row.ID, URL: args.Callback}
	opts := &river.InsertOpts{Queue: queueName, MaxAttempts: q.o.CallbackAttempts}
	var err error
	if tx != nil {
		_, err = q.client.InsertTx(ctx, tx, cb, opts)
	} else {
		_, err = q.client.Insert(ctx, cb, opts)
	}
	if err != nil {
		q.log.Warn("jobs: queueing a run's callback", "run", row.ID, "final", final, "err", err)
	}
}

// callbackWorker POSTs a finished run to its callback URL.
type callbackWorker struct {
	river.WorkerDefaults[CallbackArgs]
	q *Queue
}

func (w *callbackWorker) Timeout(*river.Job[CallbackArgs]) time.Duration { return time.Minute }

func (w *callbackWorker) Work(ctx context.Context, job *river.Job[CallbackArgs]) error {
	q := w.q
	row, err := q.row(ctx, job.Args.Run)
	if err != nil {
		if errors.Is(err, serve.ErrRunNotFound) {
			return river.JobCancel(err) // deleted meanwhile: nothing to report
		}
		return err
	}
	if row.FinalizedAt == nil {
		// Queued by the last attempt as it ended: River finalizes the
		// run a moment later.
		return river.JobSnooze(200 * time.Millisecond)
	}
	body, err := json.Marshal(view(row))
	if err != nil {
		return river.JobCancel(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, job.Args.URL, bytes.NewReader(body))
	if err != nil {
		return river.JobCancel(fmt.Errorf("jobs: callback URL of run %d: %w", row.ID, err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "dsh-serve")
	req.Header.Set("X-Dsh-Run", fmt.Sprint(row.ID))
	req.Header.Set("X-Dsh-Delivery", fmt.Sprint(job.ID))
	resp, err := q.o.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("jobs: callback of run %d: %w", row.ID, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("jobs: callback of run %d: %s answered %s", row.ID, job.Args.URL, resp.Status)
	}
	return nil
}

// slot is a held place in a workspace's concurrency limit: a
// session-level advisory lock on a connection of its own, so it is freed
// by the database when the worker dies.
type slot struct {
	conn   *pgxpool.Conn
	k1, k2 int32
}

func (s *slot) release() {
	if s == nil || s.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.conn.Exec(ctx, "SELECT pg_advisory_unlock($1, $2)", s.k1, s.k2); err != nil {
		// A connection whose lock state is unknown must not go back to
		// the pool holding the slot.
		_ = s.conn.Conn().Close(ctx)
	}
	s.conn.Release()
}

// workspaceSlot takes one of the workspace's WorkspaceLimit places; ok is
// false when all are taken. Without a limit it takes nothing.
func (q *Queue) workspaceSlot(ctx context.Context, dir string) (*slot, bool, error) {
	if q.o.WorkspaceLimit <= 0 {
		return nil, true, nil
	}
	conn, err := q.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("jobs: workspace limit: %w", err)
	}
	k1 := int32(lockKey("dsh-workspace", q.o.Schema, dir))
	for i := range q.o.WorkspaceLimit {
		var got bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", k1, int32(i)).Scan(&got); err != nil {
			conn.Release()
			return nil, false, fmt.Errorf("jobs: workspace limit: %w", err)
		}
		if got {
			return &slot{conn: conn, k1: k1, k2: int32(i)}, true, nil
		}
	}
	conn.Release()
	return nil, false, nil
}

// jitter spreads waits by up to a quarter, so snoozed runs do not all
// come back at once.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration(rand.Int64N(int64(d)/4+1))
}
