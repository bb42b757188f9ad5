package memlimit

import (
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

// ProfileEnv names a file that dsh rewrites with its heap profile every
// couple of seconds while it runs: how benchmarks (internal/cmd/longbench)
// see what a long session holds at its end without a special build.
const ProfileEnv = "DSH_BENCH_HEAP_PROFILE"

// WriteProfiles rewrites path with the heap profile every interval until
// the process ends; each write replaces the file whole (a rename), so a
// reader never sees half of one.
func WriteProfiles(path string, every time.Duration) {
	runtime.MemProfileRate = 4096 // fine enough to see what a step keeps
	for {
		time.Sleep(every)
		f, err := os.Create(path + ".tmp")
		if err != nil {
			return
		}
		err = pprof.Lookup("heap").WriteTo(f, 0)
		if cerr := f.Close(); err == nil && cerr == nil {
			_ = os.Rename(path+".tmp", path)
		}
	}
}
