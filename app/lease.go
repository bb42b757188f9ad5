package app

import (
	"context"
	"time"

	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/backends"
)

// LeaseLost returns the error that took the session's lease away from this
// process (another host took the session over), or nil.
func (a *App) LeaseLost(id session.ID) error {
	lost, _ := core.Lookup[*backends.LostLeases](a.Host)
	return lost.Err(id)
}

// AwaitSession waits until the session can be resumed here: at once with a
// store without leases, or when its lease is free or expired; it returns an
// error naming the holder when another process is alive and holds it. A
// positive takeover takes the session over from a live holder after that
// grace instead. notify hears what it waits for.
func (a *App) AwaitSession(ctx context.Context, id session.ID, takeover time.Duration, notify func(string)) error {
	l := a.Coordinator.Leases()
	if l == nil {
		return nil
	}
	return store.AwaitLease(ctx, l, id, store.AwaitOptions{Takeover: takeover, Notify: notify})
}

// LeaseTTL is the lease duration of the session store (0 for stores
// without leases): what --takeover waits before fencing a live holder.
func (a *App) LeaseTTL(ctx context.Context, id session.ID) time.Duration {
	l := a.Coordinator.Leases()
	if l == nil {
		return 0
	}
	lease, err := l.Lease(ctx, id)
	if err != nil {
		return 0
	}
	return lease.TTL
}
