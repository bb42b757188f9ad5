package postgres

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dshq/dsh/session"
)

// The live tail. Every write that adds events calls pg_notify(channel,
// "<last seq> <session id>") inside its transaction, so PostgreSQL delivers
// it at commit and never for a write that rolled back. Notifications are a
// doorbell, not a feed: they are small, only sent at commit and never
// replayed (a listener that was disconnected misses them), so a follower
// re-reads from its last seq on every ring, and the listener rings every
// follower after each (re)connect.

// listener is one connection LISTENing on the backend's channel, shared by
// every follower of this backend.
type listener struct {
	b      *Backend
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	subs  map[string]map[chan struct{}]struct{} // by stored session key
	ready chan struct{}                         // closed at the first successful LISTEN
	once  sync.Once
}

// Watch implements [store.Watcher]. It returns once the listener is
// LISTENing (or after a few seconds without a connection: the follower's
// poll covers that time), so no commit after Watch returns goes unrung.
func (b *Backend) Watch(ctx context.Context, id session.ID) (<-chan struct{}, func(), error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, nil, errClosed
	}
	l := b.watch
	if l == nil {
		lctx, cancel := context.WithCancel(context.Background())
		l = &listener{b: b, cancel: cancel, done: make(chan struct{}), subs: map[string]map[chan struct{}]struct{}{}, ready: make(chan struct{})}
		b.watch = l
		go l.run(lctx)
	}
	b.mu.Unlock()
	ch := make(chan struct{}, 1)
	k := key(id)
	l.mu.Lock()
	if l.subs[k] == nil {
		l.subs[k] = map[chan struct{}]struct{}{}
	}
	l.subs[k][ch] = struct{}{}
	l.mu.Unlock()
	stop := func() {
		l.mu.Lock()
		delete(l.subs[k], ch)
		if len(l.subs[k]) == 0 {
			delete(l.subs, k)
		}
		l.mu.Unlock()
	}
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-l.ready:
	case <-t.C:
	case <-ctx.Done():
		stop()
		return nil, nil, ctx.Err()
	}
	return ch, stop, nil
}

func ring(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default: // a ring is pending already
	}
}

func (l *listener) ringAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, subs := range l.subs {
		for ch := range subs {
			ring(ch)
		}
	}
}

func (l *listener) ringKey(k string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch := range l.subs[k] {
		ring(ch)
	}
}

func (l *listener) close() {
	l.cancel()
	<-l.done
}

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	wait := 50 * time.Millisecond
	for ctx.Err() == nil {
		err := l.session(ctx)
		if ctx.Err() != nil {
			return
		}
		l.b.logf("postgres: the live-tail connection failed (%v); reconnecting in %s", l.b.secret.scrub(err), wait)
		l.ringAll() // whatever was missed is re-read
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// session connects, LISTENs and rings followers until the connection
// fails.
func (l *listener) session(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, l.b.connCfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.b.channel}.Sanitize()); err != nil {
		return err
	}
	l.once.Do(func() { close(l.ready) })
	l.ringAll() // commits between the last connection and this one
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if _, k, ok := strings.Cut(n.Payload, " "); ok {
			l.ringKey(k)
		}
	}
}
