//go:build pprof

package main

// Built only with -tags pprof: DSH_PPROF=127.0.0.1:6060 serves
// net/http/pprof there, with mutex and block profiling on, so a load test
// can profile a real dsh serve. Never in a release build: the listener has
// no authentication.

import (
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
)

func init() {
	addr := os.Getenv("DSH_PPROF")
	if addr == "" {
		return
	}
	runtime.SetMutexProfileFraction(5)
	runtime.SetBlockProfileRate(100000) // one sample per 100 µs blocked
	go func() { _ = http.ListenAndServe(addr, nil) }()
}
