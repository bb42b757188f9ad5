package memlimit

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// ProfileEnv names a file that dsh rewrites with its heap profile every
// couple of seconds while it runs: how benchmarks (internal/cmd/longbench)
// see what a long session holds at its end without a special build. Beside
// it, path.goroutines holds the goroutine profile and path.txt the
// runtime's own account of its memory (stacks, free and released pages),
// which the heap profile does not show but the resident set includes.
const ProfileEnv = "DSH_BENCH_HEAP_PROFILE"

// WriteProfiles rewrites path (and its companions) every interval until
// the process ends; each write replaces a file whole (a rename), so a
// reader never sees half of one.
func WriteProfiles(path string, every time.Duration) {
	runtime.MemProfileRate = 4096 // fine enough to see what a step keeps
	for {
		time.Sleep(every)
		replace(path, func(f *os.File) error { return pprof.Lookup("heap").WriteTo(f, 0) })
		replace(path+".goroutines", func(f *os.File) error { return pprof.Lookup("goroutine").WriteTo(f, 1) })
		replace(path+".txt", writeMetrics)
	}
}

// replace writes path through a temporary file renamed over it.
func replace(path string, write func(*os.File) error) {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return
	}
	err = write(f)
	if cerr := f.Close(); err == nil && cerr == nil {
		_ = os.Rename(path+".tmp", path)
	}
}

// memoryMetrics are the runtime's figures that add up to what it maps.
var memoryMetrics = []string{
	"/memory/classes/total:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/os-stacks:bytes",
	"/memory/classes/metadata/other:bytes",
	"/memory/classes/other:bytes",
	"/gc/heap/goal:bytes",
	"/gc/heap/live:bytes",
	"/gc/cycles/total:gc-cycles",
	"/sched/goroutines:goroutines",
}

func writeMetrics(f *os.File) error {
	samples := make([]metrics.Sample, len(memoryMetrics))
	for i, name := range memoryMetrics {
		samples[i].Name = name
	}
	metrics.Read(samples)
	for _, s := range samples {
		if s.Value.Kind() != metrics.KindUint64 {
			continue
		}
		if _, err := fmt.Fprintf(f, "%s %d\n", s.Name, s.Value.Uint64()); err != nil {
			return err
		}
	}
	return nil
}
