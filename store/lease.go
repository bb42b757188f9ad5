package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dshq/dsh/session"
)

// Leases are the writer locks of a store that many hosts share: a lock file
// cannot span machines, and a host that dies cannot release anything, so
// the lock is a lease that its holder renews while it lives and that
// expires when it stops. Each acquisition gets a fencing token one greater
// than the last; the backend checks the token inside every write
// transaction, so a holder that was paused or cut off while another host
// took the session over cannot write a single event after it (it gets an
// error wrapping [ErrFenced] instead). Backends that keep leases implement
// [Leaser]; their Lock acquires one and fails with an [*InUseError] naming
// the holder while someone else's lease is live.

// Holder identifies the process that holds (or held) a lease.
type Holder struct {
	// Host is the host identity the holder was configured with
	// (DSH_HOST_ID, or the hostname).
	Host string `json:"host"`
	PID  int    `json:"pid"`
}

func (h Holder) String() string {
	if h.Host == "" {
		return fmt.Sprintf("pid %d", h.PID)
	}
	return fmt.Sprintf("pid %d on host %s", h.PID, h.Host)
}

// Lease is the state of one session's writer lease.
type Lease struct {
	ID session.ID `json:"id"`
	// Token is the fencing token of the latest acquisition (0: never
	// leased). It only grows.
	Token  int64  `json:"token"`
	Holder Holder `json:"holder"`
	// Free reports a lease nobody holds: never taken, released, or
	// expired (its holder stopped renewing, or is known dead).
	Free bool `json:"free"`
	// Renewed is when the holder last renewed it, and Remaining how long it
	// has left from now (both by the clock the backend uses for leases).
	Renewed   time.Time     `json:"renewed"`
	Remaining time.Duration `json:"remaining"`
	// TTL is how long a renewal keeps the lease.
	TTL time.Duration `json:"ttl"`
}

// Leaser is implemented by backends whose writer locks are leases.
type Leaser interface {
	// Lease returns the current lease of id.
	Lease(ctx context.Context, id session.ID) (Lease, error)
	// Expire ends the lease of id if its token is still token, whoever
	// holds it: the next Lock anywhere may take the session, and the
	// holder is fenced off at its next write. It is how a takeover of a
	// live holder is forced; it reports whether the lease was ended (false:
	// it had already changed hands).
	Expire(ctx context.Context, id session.ID, token int64) (bool, error)
}

// ErrFenced: this process's lease on a session was taken over (or lost),
// so it may not write the session any more.
var ErrFenced = errors.New("session lease lost")

// FencedError reports a write refused because the writer's lease is no
// longer the session's current one.
type FencedError struct {
	ID session.ID
	// Token is the fencing token the writer held; Current is the lease as
	// the backend found it (its Token is 0 when unknown).
	Token   int64
	Current Lease
}

func (e *FencedError) Error() string {
	by := "another process"
	if e.Current.Holder.PID != 0 {
		// The latest holder, even if it has released the lease since.
		by = e.Current.Holder.String()
	}
	return fmt.Sprintf("session %s was taken over by %s (lease token %d, this process held %d): this process no longer writes it; resume it again with dsh -r %s once the other holder is done",
		e.ID, by, e.Current.Token, e.Token, e.ID)
}

// Is makes errors.Is(err, ErrFenced) true.
func (e *FencedError) Is(target error) bool { return target == ErrFenced }

// AwaitOptions tune [AwaitLease].
type AwaitOptions struct {
	// Takeover, when positive, takes the session over from a live holder
	// after this grace: the lease is expired (fencing the holder) unless it
	// was released or changed hands meanwhile.
	Takeover time.Duration
	// Notify, when set, is told what AwaitLease is waiting for.
	Notify func(msg string)
	// Sleep waits for d or until ctx ends (tests inject a fake; nil sleeps
	// for real).
	Sleep func(ctx context.Context, d time.Duration) error
}

// AwaitLease waits until a Lock of id can succeed here: at once when the
// lease is free or expired; when it is held, until it expires, for as long
// as it takes to tell a dead holder from a live one. A holder that renews
// meanwhile is alive, and AwaitLease returns an [*InUseError] naming it
// (or, with o.Takeover, expires its lease after the grace and returns nil).
func AwaitLease(ctx context.Context, l Leaser, id session.ID, o AwaitOptions) error {
	sleep := o.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	notify := func(format string, args ...any) {
		if o.Notify != nil {
			o.Notify(fmt.Sprintf(format, args...))
		}
	}
	first, err := l.Lease(ctx, id)
	if err != nil || first.Free {
		return err
	}
	if o.Takeover > 0 {
		notify("session %s is held by %s; taking it over in %s (its holder is fenced off and writes nothing more)",
			id, first.Holder, o.Takeover.Round(time.Second))
		if err := sleep(ctx, o.Takeover); err != nil {
			return err
		}
		cur, err := l.Lease(ctx, id)
		if err != nil || cur.Free || cur.Token != first.Token {
			return err // released or changed hands: Lock decides
		}
		_, err = l.Expire(ctx, id, cur.Token)
		return err
	}
	notify("session %s is held by %s; waiting up to %s for its lease to expire (a live holder keeps renewing it)",
		id, first.Holder, first.Remaining.Round(time.Second))
	for {
		// Poll a few times per renewal period, so a live holder is seen
		// renewing long before its lease would have run out.
		wait := max(10*time.Millisecond, min(first.TTL/8, first.Remaining+10*time.Millisecond))
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		cur, err := l.Lease(ctx, id)
		if err != nil || cur.Free {
			return err
		}
		if cur.Token != first.Token || cur.Renewed.After(first.Renewed) {
			return &InUseError{ID: id, PID: cur.Holder.PID, Host: cur.Holder.Host, Lease: true, Remaining: cur.Remaining}
		}
		first.Remaining = cur.Remaining
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
