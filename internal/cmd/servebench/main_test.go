package main

import (
	"context"
	"testing"

	"github.com/dshq/dsh/internal/dshtest"
)

func TestMain(m *testing.M) {
	if model, ok := isRelay(); ok { // the baseline re-executes this binary
		if err := runRelay(model); err != nil {
			panic(err)
		}
		return
	}
	dshtest.Main(m, "../../..", raceBuild)
}

// TestBaselineSmoke runs the baseline tiny: every step's chunks are timed
// through the relay process.
func TestBaselineSmoke(t *testing.T) {
	r, err := runBaseline(context.Background(), Config{Sessions: 6, Concurrency: 3, Steps: 5, Chunks: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors != 0 || r.Turns != 6 || len(r.Latencies) != 6*5*2 || r.Quantile(0) <= 0 {
		t.Fatalf("%d turns, %d errors (first: %s), %d chunks timed", r.Turns, r.Errors, r.FirstErr, len(r.Latencies))
	}
}

// TestLoadSmoke runs the load test tiny: every session's turn completes,
// every chunk of every step is timed through the SSE stream, every session
// is evicted, and the server's RSS was read.
func TestLoadSmoke(t *testing.T) {
	r, err := Run(context.Background(), Config{Bin: dshtest.Bin, Sessions: 6, Concurrency: 3, Steps: 5, Chunks: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors != 0 || r.Turns != 6 {
		t.Fatalf("%d turns, %d errors (first: %s)", r.Turns, r.Errors, r.FirstErr)
	}
	if len(r.Latencies) != 6*5*2 || r.Quantile(0) <= 0 || len(r.Ingest) != len(r.Latencies) || len(r.Stream) != len(r.Latencies) {
		t.Fatalf("%d chunks timed, want 60 (smallest %v)", len(r.Latencies), r.Quantile(0))
	}
	if r.Evicted != 6 || r.RSSStart <= 0 || r.RSSPeak < r.RSSStart || r.CPU <= 0 {
		t.Fatalf("evicted %d, RSS start %d peak %d KiB, CPU %v", r.Evicted, r.RSSStart, r.RSSPeak, r.CPU)
	}
}
