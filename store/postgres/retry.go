package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// transient reports errors that say the database could not be reached or
// went away (a restart, a failover, a dropped connection), as opposed to
// errors about the request: retrying is the right answer to the first kind
// only.
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch {
		case strings.HasPrefix(pg.Code, "08"): // connection exception
			return true
		case pg.Code == "57P01", pg.Code == "57P02", pg.Code == "57P03": // admin/crash shutdown, cannot connect now
			return true
		case pg.Code == "53300": // too many connections
			return true
		case pg.Code == "40001", pg.Code == "40P01": // serialization failure, deadlock
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "unexpected EOF") || strings.Contains(msg, "connection reset")
}

// retry runs fn until it succeeds, fails for a reason other than an
// unreachable database, ctx ends, or Options.RetryFor has passed since the
// first failure. Every retry is reported through Logf, so an outage is
// never silent.
func (b *Backend) retry(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	err := fn(ctx)
	if err == nil || b.opts.RetryFor < 0 || !transient(err) {
		return err
	}
	start := time.Now()
	wait := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		if time.Since(start) >= b.opts.RetryFor {
			b.logf("postgres: %s: the database is still unreachable after %s; giving up: %v", what, b.opts.RetryFor, b.secret.scrub(err))
			return err
		}
		b.logf("postgres: %s failed, the database is unreachable (%v); retrying in %s (attempt %d)", what, b.secret.scrub(err), wait, attempt)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
		if err = fn(ctx); err == nil || !transient(err) {
			if err == nil {
				b.logf("postgres: %s succeeded after %d retries", what, attempt)
			}
			return err
		}
	}
}
