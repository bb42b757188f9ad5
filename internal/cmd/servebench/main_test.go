package main

import (
	"context"
	"testing"
	"time"

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

// TestPause checks the model's pacing: a fixed gap without Spread, and
// with it pauses drawn over [Gap/2, 3·Gap/2) that land on both sides of
// the mean, so the streams really drift out of phase.
func TestPause(t *testing.T) {
	const gap = 200 * time.Millisecond
	if d := (Config{Gap: gap}).pause(); d != gap {
		t.Fatalf("fixed pause %v, want %v", d, gap)
	}
	if d := (Config{Spread: true}).pause(); d != 0 {
		t.Fatalf("spread pause with no gap %v, want 0", d)
	}
	c := Config{Gap: gap, Spread: true}
	var short, long int
	for range 1000 {
		d := c.pause()
		if d < gap/2 || d >= gap*3/2 {
			t.Fatalf("spread pause %v outside [%v, %v)", d, gap/2, gap*3/2)
		}
		if d < gap {
			short++
		} else {
			long++
		}
	}
	if short < 100 || long < 100 {
		t.Fatalf("spread pauses not spread: %d below the gap, %d above", short, long)
	}
}
