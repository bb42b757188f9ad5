package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dshq/dsh/internal/pgtest"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/storetest"
)

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDatabaseRestartUnderLiveSession stops the database under a live
// session between two flushes (cleanly, then as a crash would): the flush
// reports the outage, retries until the server is back, and every event is
// stored once.
func TestDatabaseRestartUnderLiveSession(t *testing.T) {
	for _, mode := range []string{"fast", "immediate"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			cl := pgtest.Start(t)
			logs := &logSink{}
			b, err := Open(ctx, Options{URL: cl.URL, Logf: logs.logf, RetryFor: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			live := session.NewLive(storetest.FixedClock())
			scope := kernel.NewScope("outage")
			if _, err := store.Attach(scope, live, b, store.Options{Logf: t.Logf}); err != nil {
				t.Fatal(err)
			}
			s, err := live.Create(ctx, scope, "outage", session.Options{Header: session.Header{Cwd: "/w"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := storetest.Apply(ctx, s, storetest.OneTurn(1, "before")); err != nil {
				t.Fatal(err)
			}
			if err := live.FlushSession(ctx, s); err != nil {
				t.Fatal(err)
			}
			cl.StopServer(t, mode)
			if err := storetest.Apply(ctx, s, storetest.OneTurn(2, "during")); err != nil {
				t.Fatal(err)
			}
			flushed := make(chan error, 1)
			go func() { flushed <- live.FlushSession(ctx, s) }()
			waitFor(t, "the outage to be reported", func() bool { return strings.Contains(logs.all(), "the database is unreachable") })
			select {
			case err := <-flushed:
				t.Fatalf("the flush returned during the outage: %v", err)
			default:
			}
			cl.StartServer(t)
			select {
			case err := <-flushed:
				if err != nil {
					t.Fatalf("flush after the restart: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the flush did not finish after the restart")
			}
			if !strings.Contains(logs.all(), "succeeded after") {
				t.Errorf("the recovery was not reported:\n%s", logs.all())
			}
			if strings.Contains(logs.all(), pgPassword(cl.URL)) {
				t.Fatal("a log line holds the password")
			}
			if err := storetest.Apply(ctx, s, storetest.OneTurn(3, "after")); err != nil {
				t.Fatal(err)
			}
			if err := scope.Close(); err != nil {
				t.Fatal(err)
			}
			// A new process sees all three turns, once each.
			b2, err := Open(ctx, Options{URL: cl.URL})
			if err != nil {
				t.Fatal(err)
			}
			scope2 := kernel.NewScope("check")
			defer scope2.Close()
			c2, err := store.Attach(scope2, nil, b2, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, evs, err := c2.Read(ctx, "outage")
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 18 || len(evs) != s.Len() {
				t.Fatalf("%d events stored, %d live", len(evs), s.Len())
			}
			for i, e := range s.Events() {
				if !store.EventsEqual(e, evs[i]) {
					t.Fatalf("event %d differs", i)
				}
			}
		})
	}
}

func pgPassword(url string) string {
	i := strings.Index(url, "://dsh:")
	j := strings.Index(url, "@")
	return url[i+len("://dsh:") : j]
}

// TestRetriedWriteThatHadCommitted: a write whose answer was lost (it did
// commit) is retried; the retry finds its events stored and writes only
// what is new, for a session's first batch as for a later one.
func TestRetriedWriteThatHadCommitted(t *testing.T) {
	ctx := context.Background()
	url, schema := pgtest.Schema(t)
	w := newWriter(t, url, schema, Options{})
	id := session.ID("ambiguous")
	if err := w.b.Lock(ctx, id); err != nil {
		t.Fatal(err)
	}
	h := hdr(id)
	first := storetest.Build(0, storetest.OneTurn(1, "one"))
	tok := w.token(t, id)
	info := store.NewInfo(h, first)
	// The first attempt commits, but its caller never hears of it.
	if err := w.b.write(ctx, id, tok, h, true, nil, first, info); err != nil {
		t.Fatal(err)
	}
	// The retry (the coordinator still thinks nothing is stored) carries
	// more events by now.
	more := append(first, storetest.Build(6, storetest.OneTurn(2, "two"))...)
	if err := w.b.AppendBatch(ctx, store.Batch{Header: h, Events: more, Info: store.NewInfo(h, more)}); err != nil {
		t.Fatalf("retried first batch: %v", err)
	}
	// The same for a later batch.
	third := storetest.Build(12, storetest.OneTurn(3, "three"))
	if err := w.b.write(ctx, id, tok, h, false, nil, third, store.NewInfo(h, append(more, third...))); err != nil {
		t.Fatal(err)
	}
	all := append(more, third...)
	if err := w.b.AppendBatch(ctx, store.Batch{Header: h, Events: third, Materialized: true, Info: store.NewInfo(h, all)}); err != nil {
		t.Fatalf("retried later batch: %v", err)
	}
	// A batch that differs from what is stored is not taken for a retry.
	other := storetest.Build(12, storetest.OneTurn(3, "something else"))
	err := w.b.AppendBatch(ctx, store.Batch{Header: h, Events: other, Materialized: true, Info: store.NewInfo(h, all)})
	if !errors.Is(err, store.ErrSeq) {
		t.Fatalf("a different batch at a stored seq: %v", err)
	}
	seqs, err := storedSeqs(url, schema, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(seqs) != 18 {
		t.Fatalf("%d rows stored: %v", len(seqs), seqs)
	}
	if !strings.Contains(w.logs.all(), "already stored by an attempt whose answer was lost") {
		t.Errorf("not reported: %s", w.logs.all())
	}
}

// TestPasswordNeverInErrors: connection failures and bad connection
// strings never show the password.
func TestPasswordNeverInErrors(t *testing.T) {
	ctx := context.Background()
	const secret = "s3cr3t-Pa55word"
	for _, url := range []string{
		"postgres://dsh:" + secret + "@127.0.0.1:1/dsh?sslmode=disable&connect_timeout=2",
		"host=127.0.0.1 port=1 user=dsh password=" + secret + " dbname=dsh sslmode=disable connect_timeout=2",
		"postgres://dsh:" + secret + "@127.0.0.1:notaport/dsh",
	} {
		_, err := Open(ctx, Options{URL: url, RetryFor: -1})
		if err == nil {
			t.Fatalf("%s: opened", Redact(url))
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error holds the password: %v", err)
		}
		if r := Redact(url); strings.Contains(r, secret) || !strings.Contains(r, "xxxxx") {
			t.Fatalf("Redact(%q) = %q", url, r)
		}
	}
	// A retry loop's reports are scrubbed too.
	logs := &logSink{}
	_, err := Open(ctx, Options{URL: "postgres://dsh:" + secret + "@127.0.0.1:1/dsh?sslmode=disable", RetryFor: 200 * time.Millisecond, Logf: logs.logf})
	if err == nil || strings.Contains(logs.all()+err.Error(), secret) || !strings.Contains(logs.all(), "retrying") {
		t.Fatalf("retries: %v\n%s", err, logs.all())
	}
	_ = fmt.Sprint
}
