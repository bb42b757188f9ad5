package weblogin

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/dshq/dsh/internal/pgtest"
)

// TestLoginsExpire: a log-in is good until its expiry and not at it or
// after, in memory and in the database alike (times are given, not
// waited for); a later Put forgets expired log-ins, and Delete ends one.
func TestLoginsExpire(t *testing.T) {
	stores := map[string]Store{"memory": &Memory{}}
	if os.Getenv(pgtest.EnvURL) != "" {
		url, schema := pgtest.Schema(t)
		p, err := OpenPostgres(context.Background(), url, schema)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		stores["postgres"] = p
	}
	ctx := context.Background()
	t0 := time.UnixMilli(1_700_000_000_000)
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			l := Login{TokenID: "0a1b2c3d", TokenHash: "h", Expires: t0.Add(time.Hour)}
			if err := s.Put(ctx, "k1", l, t0); err != nil {
				t.Fatal(err)
			}
			if err := s.Put(ctx, "k2", Login{TokenID: "x", TokenHash: "h2", Expires: t0.Add(2 * time.Hour)}, t0); err != nil {
				t.Fatal(err)
			}
			if got, ok, err := s.Get(ctx, "k1", t0.Add(time.Hour-time.Millisecond)); err != nil || !ok || got.TokenID != "0a1b2c3d" || !got.Expires.Equal(l.Expires) {
				t.Fatalf("before expiry: %+v %v %v", got, ok, err)
			}
			for _, at := range []time.Duration{time.Hour, time.Hour + time.Minute} {
				if _, ok, err := s.Get(ctx, "k1", t0.Add(at)); err != nil || ok {
					t.Fatalf("at +%v the log-in is still good (%v)", at, err)
				}
			}
			// A Put after k1 expired forgets it even for a reader whose
			// clock is behind.
			if err := s.Put(ctx, "k3", Login{TokenID: "y", TokenHash: "h3", Expires: t0.Add(3 * time.Hour)}, t0.Add(90*time.Minute)); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := s.Get(ctx, "k1", t0); ok {
				t.Fatal("an expired log-in survived a later Put")
			}
			if _, ok, _ := s.Get(ctx, "k2", t0.Add(90*time.Minute)); !ok {
				t.Fatal("a log-in that had not expired was forgotten")
			}
			if err := s.Delete(ctx, "k2"); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := s.Get(ctx, "k2", t0); ok {
				t.Fatal("a deleted log-in is still good")
			}
		})
	}
}
