package jsonl

import (
	"testing"

	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/storetest"
)

func benchOpen(dir string, noSync bool) (store.Backend, error) {
	return Open(dir, Options{NoSync: noSync})
}

func BenchmarkAppendStep(b *testing.B) {
	b.Run("buffered", func(b *testing.B) { storetest.BenchAppendStep(b, benchOpen, true) })
	b.Run("fsync", func(b *testing.B) { storetest.BenchAppendStep(b, benchOpen, false) })
}

func BenchmarkLoad100k(b *testing.B) { storetest.BenchLoad(b, benchOpen, 100_000) }

func BenchmarkTail50(b *testing.B) { storetest.BenchTail(b, benchOpen, 100_000, 50) }

func BenchmarkList10k(b *testing.B) {
	b.Run("all", func(b *testing.B) { storetest.BenchList(b, benchOpen, 10_000, false) })
	b.Run("cwd", func(b *testing.B) { storetest.BenchList(b, benchOpen, 10_000, true) })
}

func BenchmarkConcurrent50(b *testing.B) {
	b.Run("buffered", func(b *testing.B) { storetest.BenchConcurrent(b, benchOpen, 50, true) })
	b.Run("fsync", func(b *testing.B) { storetest.BenchConcurrent(b, benchOpen, 50, false) })
}
