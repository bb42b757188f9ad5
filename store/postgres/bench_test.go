package postgres

import (
	"context"
	"sync"
	"testing"

	"github.com/dshq/dsh/internal/pgtest"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/storetest"
)

// The benchmarks run on a cluster of their own with the server's default
// durability (fsync on, synchronous_commit on), like a real database and
// unlike the test cluster: "fsync" is comparable with SQLite's
// synchronous=FULL, "buffered" (synchronous_commit off) with its NoSync.
var (
	benchMu  sync.Mutex
	benchURL string
)

func benchCluster(b *testing.B) string {
	benchMu.Lock()
	defer benchMu.Unlock()
	if benchURL == "" {
		cl := pgtest.Start(b, "fsync=on", "synchronous_commit=on", "full_page_writes=on", "shared_buffers=256MB")
		benchURL = cl.URL
		b.Cleanup(func() { benchMu.Lock(); benchURL = ""; benchMu.Unlock() })
	}
	return benchURL
}

func benchOpener(b *testing.B) storetest.OpenFunc {
	url := benchCluster(b)
	return func(dir string, noSync bool) (store.Backend, error) {
		return Open(context.Background(), Options{URL: url, Schema: schemaOf(dir), NoSync: noSync, MaxConns: 16})
	}
}

func BenchmarkAppendStep(b *testing.B) {
	open := benchOpener(b)
	b.Run("buffered", func(b *testing.B) { storetest.BenchAppendStep(b, open, true) })
	b.Run("fsync", func(b *testing.B) { storetest.BenchAppendStep(b, open, false) })
}

func BenchmarkLoad100k(b *testing.B) { storetest.BenchLoad(b, benchOpener(b), 100_000) }

func BenchmarkTail50(b *testing.B) { storetest.BenchTail(b, benchOpener(b), 100_000, 50) }

func BenchmarkList10k(b *testing.B) {
	open := benchOpener(b)
	b.Run("all", func(b *testing.B) { storetest.BenchList(b, open, 10_000, false) })
	b.Run("cwd", func(b *testing.B) { storetest.BenchList(b, open, 10_000, true) })
}

func BenchmarkConcurrent50(b *testing.B) {
	open := benchOpener(b)
	b.Run("buffered", func(b *testing.B) { storetest.BenchConcurrent(b, open, 50, true) })
	b.Run("fsync", func(b *testing.B) { storetest.BenchConcurrent(b, open, 50, false) })
}
