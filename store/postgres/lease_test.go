package postgres

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"github.com/dshq/dsh/internal/pgtest"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/storetest"
)

// fakeClock is a lease clock the test moves.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// writer is one "host": a backend with its own identity and a coordinator
// over it.
type writer struct {
	b    *Backend
	c    *store.Coordinator
	logs *logSink
}

type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) logf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *logSink) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func newWriter(t testing.TB, url, schema string, o Options) *writer {
	t.Helper()
	w := &writer{logs: &logSink{}}
	o.URL, o.Schema = url, schema
	if o.Logf == nil {
		o.Logf = w.logs.logf
	}
	b, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	scope := kernel.NewScope("writer")
	c, err := store.Attach(scope, nil, b, store.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = scope.Close() })
	w.b, w.c = b, c
	return w
}

func (w *writer) token(t testing.TB, id session.ID) int64 {
	t.Helper()
	h, err := w.b.heldLease(id)
	if err != nil {
		t.Fatal(err)
	}
	return h.token
}

func hdr(id session.ID) session.Header {
	return session.Header{Version: session.FormatVersion, ID: id, CreatedAt: storetest.BaseTime - 1, Cwd: "/work"}
}

func TestLeaseFencing(t *testing.T) {
	ctx := context.Background()
	url, schema := pgtest.Schema(t)
	clock := newFakeClock()
	ttl := 10 * time.Second
	a := newWriter(t, url, schema, Options{Host: "host-a", LeaseTTL: ttl, Now: clock.Now})
	b := newWriter(t, url, schema, Options{Host: "host-b", LeaseTTL: ttl, Now: clock.Now})
	id := session.ID("fenced")
	if err := a.c.Create(ctx, hdr(id)); err != nil {
		t.Fatal(err)
	}
	// A runs a turn that it never finishes.
	log := append(storetest.Build(0, storetest.OneTurn(1, "one")), storetest.Build(6, []storetest.Op{storetest.TurnStart(2), storetest.StepStart(2, 1)})...)
	if err := a.c.Append(ctx, id, log); err != nil {
		t.Fatal(err)
	}
	tokenA := a.token(t, id)

	// B cannot take it while A's lease is live, and is told who has it.
	_, _, err := b.c.Load(ctx, id)
	var inUse *store.InUseError
	if !errors.As(err, &inUse) || inUse.Host != "host-a" || !inUse.Lease || inUse.Remaining != ttl {
		t.Fatalf("load while held: %v", err)
	}
	if !strings.Contains(err.Error(), "on host host-a") || !strings.Contains(err.Error(), "--takeover") {
		t.Fatalf("message: %v", err)
	}
	// A's writes renew the lease: it is still held just before the old
	// expiry.
	clock.Advance(ttl - time.Second)
	if err := a.c.Append(ctx, id, storetest.Build(8, []storetest.Op{storetest.Chunk(2, 1, "x")})); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	if _, _, err := b.c.Load(ctx, id); !errors.Is(err, store.ErrInUse) {
		t.Fatalf("load after a renewing write: %v", err)
	}

	// A stops renewing (it hangs); once the lease expires B takes over and
	// closes A's open turn as interrupted.
	clock.Advance(ttl)
	_, evs, err := b.c.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := evs[len(evs)-1]; got.Type != session.TypeTurnEnd {
		t.Fatalf("the open turn was not closed: %v", got.Type)
	}
	te, _ := session.Decode[session.TurnEnd](evs[len(evs)-1])
	if te.Reason.Kind != session.EndInterrupted {
		t.Fatalf("closed as %q", te.Reason.Kind)
	}
	if tokenB := b.token(t, id); tokenB != tokenA+1 {
		t.Fatalf("token %d after %d", tokenB, tokenA)
	}

	// A wakes up: its next write is refused, names the new holder, and
	// leaves nothing behind.
	err = a.c.Append(ctx, id, storetest.Build(9, []storetest.Op{storetest.Chunk(2, 1, "late")}))
	var fenced *store.FencedError
	if !errors.As(err, &fenced) || !errors.Is(err, store.ErrFenced) || fenced.Current.Holder.Host != "host-b" {
		t.Fatalf("append after takeover: %v", err)
	}
	if !strings.Contains(err.Error(), "taken over by pid") || !strings.Contains(err.Error(), "host-b") {
		t.Fatalf("message: %v", err)
	}
	if !strings.Contains(a.logs.all(), "taken over") {
		t.Fatalf("the loss was not logged: %q", a.logs.all())
	}
	// Even a write that skips the coordinator's bookkeeping is refused by
	// the database itself.
	if err := a.b.write(ctx, id, tokenA, hdr(id), false, nil, storetest.Build(int64(len(evs)), []storetest.Op{storetest.TurnStart(3)}), store.Info{}); !isCode(err, codeFenced) {
		t.Fatalf("raw write with the old token: %v", err)
	}
	// A releasing does not release B's lease.
	if err := a.c.Release(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := b.c.Append(ctx, id, storetest.Build(int64(len(evs)), []storetest.Op{storetest.TurnStart(3), storetest.TurnEnd(3)})); err != nil {
		t.Fatal(err)
	}
	_, final, err := b.c.Read(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(final) != len(evs)+2 {
		t.Fatalf("%d events, want %d", len(final), len(evs)+2)
	}
	for _, e := range final {
		if strings.Contains(string(e.Data), "late") {
			t.Fatal("the fenced writer's event was stored")
		}
	}
}

func TestLeaseRenewedWhileHolderLives(t *testing.T) {
	ctx := context.Background()
	url, schema := pgtest.Schema(t)
	ttl := 300 * time.Millisecond
	a := newWriter(t, url, schema, Options{Host: "host-a", LeaseTTL: ttl})
	b := newWriter(t, url, schema, Options{Host: "host-b", LeaseTTL: ttl})
	id := session.ID("renewed")
	if err := a.c.Create(ctx, hdr(id)); err != nil {
		t.Fatal(err)
	}
	if err := a.c.Append(ctx, id, storetest.Build(0, storetest.OneTurn(1, "x"))); err != nil {
		t.Fatal(err)
	}
	// Several TTLs without a write: the renewal goroutine keeps it.
	time.Sleep(4 * ttl)
	if _, _, err := b.c.Load(ctx, id); !errors.Is(err, store.ErrInUse) {
		t.Fatalf("load while renewed: %v", err)
	}
	// AwaitLease sees the holder renew and says who holds it.
	err := store.AwaitLease(ctx, b.c.Leases(), id, store.AwaitOptions{})
	var inUse *store.InUseError
	if !errors.As(err, &inUse) || inUse.Host != "host-a" {
		t.Fatalf("await a live holder: %v", err)
	}
	// The holder dies without releasing (its renewals stop): the lease
	// expires and AwaitLease returns once it has.
	a.b.stop()
	<-a.b.done
	start := time.Now()
	var notes []string
	if err := store.AwaitLease(ctx, b.c.Leases(), id, store.AwaitOptions{Notify: func(m string) { notes = append(notes, m) }}); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > 3*ttl {
		t.Errorf("waited %s for a lease of %s", waited, ttl)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "held by pid") || !strings.Contains(notes[0], "host-a") {
		t.Fatalf("notes %q", notes)
	}
	if _, _, err := b.c.Load(ctx, id); err != nil {
		t.Fatal(err)
	}
}

func TestLeaseTakeover(t *testing.T) {
	ctx := context.Background()
	url, schema := pgtest.Schema(t)
	var lost atomic.Value
	// A renews often, so the loss is found quickly.
	a := newWriter(t, url, schema, Options{Host: "host-a", LeaseTTL: 300 * time.Millisecond,
		OnLost: func(id session.ID, err error) { lost.Store(err) }})
	b := newWriter(t, url, schema, Options{Host: "host-b"})
	id := session.ID("taken")
	if err := a.c.Create(ctx, hdr(id)); err != nil {
		t.Fatal(err)
	}
	if err := a.c.Append(ctx, id, storetest.Build(0, storetest.OneTurn(1, "x"))); err != nil {
		t.Fatal(err)
	}
	var slept time.Duration
	err := store.AwaitLease(ctx, b.c.Leases(), id, store.AwaitOptions{Takeover: 5 * time.Second,
		Sleep: func(_ context.Context, d time.Duration) error { slept += d; return nil }})
	if err != nil || slept != 5*time.Second {
		t.Fatalf("takeover: %v after %s", err, slept)
	}
	if _, _, err := b.c.Load(ctx, id); err != nil {
		t.Fatal(err)
	}
	// The old holder learns it at its next renewal, before any write.
	deadline := time.Now().Add(5 * time.Second)
	for lost.Load() == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err, _ := lost.Load().(error); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("OnLost: %v", err)
	}
	if err := a.c.Append(ctx, id, storetest.Build(6, storetest.OneTurn(2, "y"))); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("append after takeover: %v", err)
	}
}

func TestDeadHolderOnThisMachineTakenAtOnce(t *testing.T) {
	ctx := context.Background()
	url, schema := pgtest.Schema(t)
	b := newWriter(t, url, schema, Options{Host: "here"})
	// A process that has exited, recorded as the live holder of a lease
	// on this machine.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	id := session.ID("orphan")
	pgtest.Exec(t, url, fmt.Sprintf(`INSERT INTO %s.leases(session_id, token, holder, host, pid, pid_start, machine, acquired_at, renewed_at, expires_at)
		VALUES ($1, 7, 'dead', 'here', $2, 12345, $3, now(), now(), now() + interval '1 hour')`, schema), string(id), cmd.Process.Pid, machineKey())
	if err := b.c.Create(ctx, hdr(id)); err != nil {
		t.Fatalf("create over a dead holder's lease: %v", err)
	}
	if tok := b.token(t, id); tok != 8 {
		t.Fatalf("token %d", tok)
	}
	// The same holder recorded under another host identity is not judged
	// by its pid: it is someone else's machine.
	id2 := session.ID("elsewhere")
	pgtest.Exec(t, url, fmt.Sprintf(`INSERT INTO %s.leases(session_id, token, holder, host, pid, pid_start, machine, acquired_at, renewed_at, expires_at)
		VALUES ($1, 1, 'other', 'there', $2, 12345, $3, now(), now(), now() + interval '1 hour')`, schema), string(id2), cmd.Process.Pid, machineKey())
	if err := b.c.Create(ctx, hdr(id2)); !errors.Is(err, store.ErrInUse) {
		t.Fatalf("create over another host's lease: %v", err)
	}
}

// TestPropertyConcurrentWriters: several hosts race for one session, with
// leases expiring under them at random moments (the lease clock jumps), and
// each writes tagged turns whenever it believes it holds the lease. The log
// never has a gap or a duplicate seq, holds every acknowledged write once
// and no refused one, and its fencing tokens never go down: no event of a
// fenced writer lands after its successor's.
func TestPropertyConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	url, schema := pgtest.Schema(t)
	clock := newFakeClock()
	ttl := 10 * time.Second
	var ws []*writer
	for i := range 4 {
		ws = append(ws, newWriter(t, url, schema, Options{Host: fmt.Sprintf("host-%d", i), LeaseTTL: ttl, Now: clock.Now}))
	}
	tagRe := regexp.MustCompile(`^tok=(\d+) w=(\d+) n=(\d+)$`)
	iteration := 0
	rapid.Check(t, func(rt *rapid.T) {
		iteration++
		id := session.ID(fmt.Sprintf("prop-%d", iteration))
		n := rapid.IntRange(2, 4).Draw(rt, "writers")
		type round struct {
			batches int
			pause   time.Duration
			release bool
		}
		scripts := make([][]round, n)
		for w := range n {
			for range rapid.IntRange(1, 5).Draw(rt, fmt.Sprintf("rounds-%d", w)) {
				scripts[w] = append(scripts[w], round{
					batches: rapid.IntRange(1, 3).Draw(rt, "batches"),
					pause:   time.Duration(rapid.IntRange(0, 2000).Draw(rt, "pause-us")) * time.Microsecond,
					release: rapid.Bool().Draw(rt, "release"),
				})
			}
		}
		var jumps []time.Duration
		for range rapid.IntRange(0, 6).Draw(rt, "expiries") {
			jumps = append(jumps, time.Duration(rapid.IntRange(0, 3000).Draw(rt, "jump-at-us"))*time.Microsecond)
		}

		var mu sync.Mutex
		acked, refused := map[string]bool{}, map[string]bool{}
		var failures []string
		var wg sync.WaitGroup
		wg.Go(func() {
			for _, d := range jumps {
				time.Sleep(d)
				clock.Advance(ttl + time.Second)
			}
		})
		for w := range n {
			wr := ws[w]
			wg.Go(func() {
				k := 0
				for _, r := range scripts[w] {
					_, evs, err := wr.c.Load(ctx, id)
					if errors.Is(err, store.ErrNotFound) {
						if err = wr.c.Create(ctx, hdr(id)); err == nil {
							evs = nil
						}
					}
					if err != nil {
						if !errors.Is(err, store.ErrInUse) && !errors.Is(err, store.ErrExists) {
							mu.Lock()
							failures = append(failures, fmt.Sprintf("writer %d load: %v", w, err))
							mu.Unlock()
						}
						time.Sleep(r.pause)
						continue
					}
					h, err := wr.b.heldLease(id)
					if err != nil {
						continue // lost between Load and here
					}
					next := int64(len(evs))
					for range r.batches {
						k++
						tag := fmt.Sprintf("tok=%d w=%d n=%d", h.token, w, k)
						err := wr.c.Append(ctx, id, storetest.Build(next, []storetest.Op{storetest.TurnStart(k), storetest.User(tag), storetest.TurnEnd(k)}))
						mu.Lock()
						switch {
						case err == nil:
							acked[tag] = true
							next += 3
						case errors.Is(err, store.ErrFenced):
							refused[tag] = true
						default:
							failures = append(failures, fmt.Sprintf("writer %d append: %v", w, err))
						}
						mu.Unlock()
						if err != nil {
							break
						}
					}
					time.Sleep(r.pause)
					if r.release {
						_ = wr.c.Release(ctx, id)
					}
				}
				_ = wr.c.Release(ctx, id)
			})
		}
		wg.Wait()
		if len(failures) > 0 {
			rt.Fatalf("unexpected errors:\n%s", strings.Join(failures, "\n"))
		}
		// The rows as stored: every seq once, no gap.
		seqs, err := storedSeqs(url, schema, id)
		if err != nil {
			rt.Fatal(err)
		}
		for i, s := range seqs {
			if s != int64(i) {
				rt.Fatalf("seq %d at position %d: %v", s, i, seqs)
			}
		}
		if len(acked) == 0 {
			return // nobody got the lease: nothing stored
		}
		_, evs, err := ws[0].c.Read(ctx, id)
		if err != nil {
			rt.Fatal(err)
		}
		if len(evs) != len(seqs) {
			rt.Fatalf("read %d events of %d rows", len(evs), len(seqs))
		}
		lastToken := int64(0)
		seen := map[string]bool{}
		for _, e := range evs {
			if e.Type != session.TypeUserMessage {
				continue
			}
			p, err := session.Decode[session.Prompt](e)
			if err != nil {
				rt.Fatal(err)
			}
			tag := strings.TrimSpace(p.Content[0].Text)
			m := tagRe.FindStringSubmatch(tag)
			if m == nil {
				rt.Fatalf("untagged prompt %q", tag)
			}
			var tok int64
			fmt.Sscan(m[1], &tok)
			if tok < lastToken {
				rt.Fatalf("an event of token %d after one of token %d (a fenced writer wrote): %s", tok, lastToken, tag)
			}
			lastToken = tok
			if seen[tag] {
				rt.Fatalf("%s stored twice", tag)
			}
			seen[tag] = true
			if refused[tag] {
				rt.Fatalf("%s was refused but is stored", tag)
			}
		}
		for tag := range acked {
			if !seen[tag] {
				rt.Fatalf("%s was acknowledged but is not stored", tag)
			}
		}
	})
}

func storedSeqs(url, schema string, id session.ID) ([]int64, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, fmt.Sprintf("SELECT seq FROM %s.events WHERE session_id = $1 ORDER BY seq", schema), string(id))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// TestFencedLiveSessionReleased: a live session whose lease was taken over
// cannot flush, and releasing it forgets it (its pending events can never
// be written), so a long-lived process does not keep it.
func TestFencedLiveSessionReleased(t *testing.T) {
	ctx := context.Background()
	url, schema := pgtest.Schema(t)
	clock := newFakeClock()
	ttl := 10 * time.Second
	bA, err := Open(ctx, Options{URL: url, Schema: schema, Host: "host-a", LeaseTTL: ttl, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	live := session.NewLive(storetest.FixedClock())
	scope := kernel.NewScope("a")
	defer scope.Close()
	a, err := store.Attach(scope, live, bA, store.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	s, err := live.Create(ctx, scope, "live-fenced", session.Options{Header: session.Header{Cwd: "/w"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := storetest.Apply(ctx, s, storetest.OneTurn(1, "one")); err != nil {
		t.Fatal(err)
	}
	if err := live.FlushSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	b := newWriter(t, url, schema, Options{Host: "host-b", LeaseTTL: ttl, Now: clock.Now})
	clock.Advance(ttl + time.Second)
	if _, _, err := b.c.Load(ctx, "live-fenced"); err != nil {
		t.Fatal(err)
	}
	if err := storetest.Apply(ctx, s, storetest.OneTurn(2, "lost")); err != nil {
		t.Fatal(err)
	}
	if err := live.FlushSession(ctx, s); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("flush after the takeover: %v", err)
	}
	if err := a.Release(ctx, "live-fenced"); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("release: %v", err)
	}
	// Forgotten: loading it again asks the lease, which host-b has.
	if _, _, err := a.Load(ctx, "live-fenced"); !errors.Is(err, store.ErrInUse) {
		t.Fatalf("load after the release: %v", err)
	}
	if err := a.Release(ctx, "live-fenced"); err != nil {
		t.Fatalf("a second release: %v", err)
	}
}
