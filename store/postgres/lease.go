package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

// acquireSQL takes the lease of $1 when nobody holds it, its holder let it
// expire, this very holder had it (a retried acquisition), or its token is
// still $11, the one the caller saw held by a process it knows is dead.
// Every acquisition increments the token.
const acquireSQL = `
INSERT INTO leases AS l (session_id, token, holder, host, pid, pid_start, machine, acquired_at, renewed_at, expires_at)
VALUES ($1, 1, $2, $3, $4, $5, $6, coalesce($7::timestamptz, clock_timestamp()), coalesce($7::timestamptz, clock_timestamp()), coalesce($7::timestamptz, clock_timestamp()) + $8::interval)
ON CONFLICT (session_id) DO UPDATE SET token = l.token + 1, holder = excluded.holder, host = excluded.host, pid = excluded.pid,
	pid_start = excluded.pid_start, machine = excluded.machine,
	acquired_at = excluded.acquired_at, renewed_at = excluded.renewed_at, expires_at = excluded.expires_at
WHERE l.holder = '' OR l.expires_at <= excluded.acquired_at OR l.holder = excluded.holder OR l.token = $9
RETURNING token`

const leaseSQL = `
SELECT token, holder, host, pid, pid_start, machine, renewed_at, expires_at, coalesce($2::timestamptz, clock_timestamp())
FROM leases WHERE session_id = $1`

type leaseRow struct {
	token              int64
	holder, host       string
	pid                int
	pidStart           int64
	machine            string
	renewed, expires   time.Time
	now                time.Time
	found              bool
	orphaned, released bool
}

func (b *Backend) readLease(ctx context.Context, id session.ID) (leaseRow, error) {
	var r leaseRow
	var pid int32
	err := b.pool.QueryRow(ctx, leaseSQL, key(id), b.now()).Scan(&r.token, &r.holder, &r.host, &pid, &r.pidStart, &r.machine, &r.renewed, &r.expires, &r.now)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, nil
	}
	if err != nil {
		return r, err
	}
	r.found, r.pid = true, int(pid)
	r.released = r.holder == ""
	// A holder on this machine (same host identity, same process space)
	// whose process is gone is dead now, whatever its lease says: resuming
	// after a crash on the same host need not wait for the expiry.
	if !r.released && r.host == b.self.host && r.machine != "" && r.machine == b.self.machine && r.holder != b.self.id {
		if start := processStart(r.pid); start == 0 || start != r.pidStart {
			r.orphaned = true
		}
	}
	return r, nil
}

func (r leaseRow) free() bool { return !r.found || r.released || r.orphaned || !r.expires.After(r.now) }

func (r leaseRow) lease(id session.ID, ttl time.Duration) store.Lease {
	l := store.Lease{ID: id, Token: r.token, Holder: store.Holder{Host: r.host, PID: r.pid}, Free: r.free(), Renewed: r.renewed, TTL: ttl}
	if !l.Free {
		l.Remaining = r.expires.Sub(r.now)
	}
	return l
}

// Lock implements [store.Backend]: it acquires the session's lease (a new
// fencing token) unless another live holder has it, then this backend
// renews it until Unlock or Close.
func (b *Backend) Lock(ctx context.Context, id session.ID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return fmt.Errorf("postgres: %w", store.ErrClosed)
	}
	if h := b.leases[id]; h != nil && h.lost == nil {
		b.mu.Unlock()
		return nil
	}
	b.mu.Unlock()
	var token int64
	err := b.retry(ctx, "locking "+strconv.Quote(string(id)), func(ctx context.Context) error {
		var err error
		token, err = b.acquire(ctx, id)
		return err
	})
	if err != nil {
		var inUse *store.InUseError
		if errors.As(err, &inUse) {
			return err
		}
		return b.wrap("locking "+strconv.Quote(string(id)), err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		go func() { _ = b.release(context.Background(), id, token) }()
		return fmt.Errorf("postgres: %w", store.ErrClosed)
	}
	b.leases[id] = &held{token: token}
	return nil
}

func (b *Backend) acquire(ctx context.Context, id session.ID) (int64, error) {
	force := int64(-1)
	var last leaseRow
	// A lease read as free may be taken by someone else before the
	// acquisition: try a few times, then report whoever has it.
	for range 10 {
		var token int64
		err := b.pool.QueryRow(ctx, acquireSQL, key(id), b.self.id, b.self.host, int32(b.self.pid), b.self.pidStart, b.self.machine,
			b.now(), b.opts.LeaseTTL, force).Scan(&token)
		if err == nil {
			return token, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return 0, err
		}
		if last, err = b.readLease(ctx, id); err != nil {
			return 0, err
		}
		if !last.free() {
			break
		}
		if last.orphaned {
			force = last.token // take it from the dead holder, unless it changed hands meanwhile
		}
	}
	return 0, &store.InUseError{ID: id, PID: last.pid, Host: last.host, Lease: true, Remaining: max(0, last.expires.Sub(last.now))}
}

// Unlock implements [store.Backend]: the lease is released (its row keeps
// the token, so tokens only grow).
func (b *Backend) Unlock(id session.ID) error {
	b.mu.Lock()
	h := b.leases[id]
	delete(b.leases, id)
	b.mu.Unlock()
	if h == nil || h.lost != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return b.release(ctx, id, h.token)
}

func (b *Backend) release(ctx context.Context, id session.ID, token int64) error {
	err := b.retry(ctx, "releasing the lease of "+strconv.Quote(string(id)), func(ctx context.Context) error {
		_, err := b.pool.Exec(ctx, "UPDATE leases SET holder = '', expires_at = coalesce($4::timestamptz, clock_timestamp()) WHERE session_id = $1 AND token = $2 AND holder = $3",
			key(id), token, b.self.id, b.now())
		return err
	})
	return b.wrap("releasing the lease of "+strconv.Quote(string(id)), err)
}

// heldLease returns the lease a write of id must carry.
func (b *Backend) heldLease(id session.ID) (held, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return held{}, fmt.Errorf("postgres: %w", store.ErrClosed)
	}
	h := b.leases[id]
	if h == nil {
		return held{}, fmt.Errorf("postgres: session %q is not locked by this backend", id)
	}
	if h.lost != nil {
		return held{}, h.lost
	}
	return *h, nil
}

// fenced records that the lease with token was lost to cur and returns
// the error every later write of id gets.
func (b *Backend) fenced(id session.ID, token int64, cur store.Lease) *store.FencedError {
	ferr := &store.FencedError{ID: id, Token: token, Current: cur}
	b.mu.Lock()
	h := b.leases[id]
	first := h != nil && h.token == token && h.lost == nil
	if first {
		h.lost = ferr
	}
	b.mu.Unlock()
	if first {
		b.logf("postgres: %v", ferr)
		if b.opts.OnLost != nil {
			b.opts.OnLost(id, ferr)
		}
	}
	return ferr
}

// Lease implements [store.Leaser].
func (b *Backend) Lease(ctx context.Context, id session.ID) (store.Lease, error) {
	var r leaseRow
	err := b.retry(ctx, "reading the lease of "+strconv.Quote(string(id)), func(ctx context.Context) error {
		var err error
		r, err = b.readLease(ctx, id)
		return err
	})
	if err != nil {
		return store.Lease{}, b.wrap("reading the lease of "+strconv.Quote(string(id)), err)
	}
	return r.lease(id, b.opts.LeaseTTL), nil
}

// Expire implements [store.Leaser].
func (b *Backend) Expire(ctx context.Context, id session.ID, token int64) (bool, error) {
	var n int64
	err := b.retry(ctx, "expiring the lease of "+strconv.Quote(string(id)), func(ctx context.Context) error {
		tag, err := b.pool.Exec(ctx, "UPDATE leases SET expires_at = coalesce($3::timestamptz, clock_timestamp()) WHERE session_id = $1 AND token = $2 AND holder <> ''",
			key(id), token, b.now())
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return false, b.wrap("expiring the lease of "+strconv.Quote(string(id)), err)
	}
	return n > 0, nil
}

// renewLoop renews every held lease every third of the TTL, in one
// statement; a lease it finds in other hands is marked lost.
func (b *Backend) renewLoop(ctx context.Context) {
	defer close(b.done)
	t := time.NewTicker(max(b.opts.LeaseTTL/3, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b.renew(ctx)
	}
}

// renew renews the leases held now and reports the ones lost.
func (b *Backend) renew(ctx context.Context) {
	b.mu.Lock()
	var ids []string
	var tokens []int64
	byKey := map[string]session.ID{}
	for id, h := range b.leases {
		if h.lost == nil {
			ids, tokens = append(ids, key(id)), append(tokens, h.token)
			byKey[key(id)] = id
		}
	}
	b.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, max(b.opts.LeaseTTL/3, time.Second))
	defer cancel()
	rows, err := b.pool.Query(rctx, `
UPDATE leases SET renewed_at = coalesce($4::timestamptz, clock_timestamp()), expires_at = coalesce($4::timestamptz, clock_timestamp()) + $5::interval
FROM unnest($1::text[], $2::bigint[]) AS h(id, token)
WHERE leases.session_id = h.id AND leases.token = h.token AND leases.holder = $3
RETURNING leases.session_id`, ids, tokens, b.self.id, b.now(), b.opts.LeaseTTL)
	if err != nil {
		if ctx.Err() == nil {
			b.logf("postgres: renewing %d lease(s) failed: %v (retrying in %s)", len(ids), b.secret.scrub(err), b.opts.LeaseTTL/3)
		}
		return
	}
	renewed := map[string]bool{}
	for rows.Next() {
		var k string
		if rows.Scan(&k) == nil {
			renewed[k] = true
		}
	}
	rows.Close()
	if rows.Err() != nil {
		return
	}
	for i, k := range ids {
		if renewed[k] {
			continue
		}
		id := byKey[k]
		cur, err := b.readLease(rctx, id)
		if err != nil {
			continue
		}
		b.fenced(id, tokens[i], cur.lease(id, b.opts.LeaseTTL))
	}
}
