package session_test

import (
	"runtime"
	"testing"
)

// BenchmarkReleasedLogMemory measures what a released streamed session
// still holds in memory per event: 200 tool steps of 40 streamed chunks,
// all flushed and released (the heap after a collection, less the heap
// before the session was built, over its events).
func BenchmarkReleasedLogMemory(b *testing.B) {
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := &copyStore{}
		s := streamedSession(b, c, 200, 40)
		s.Release(int64(s.Len()))
		c.events = nil // the stand-in store's copies are not the session's
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(s.Len()), "heapB/event")
		runtime.KeepAlive(s)
	}
}
