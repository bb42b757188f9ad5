package files

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// cpu is the process's CPU time so far (user and system): on a machine
// shared with other work it moves far less than the wall clock, so the
// benchmarks report it beside ns/op.
func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// repo10k builds a source tree of 10,000 files (~1.9 KiB each, 100
// directories of 100 files in two levels, a .gitignore), the size of a
// mid-sized project.
func repo10k(b *testing.B) (string, []string) {
	b.Helper()
	root := filepath.Join(b.TempDir(), "repo")
	body := make([]byte, 1900)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	var files []string
	for d := range 100 {
		dir := filepath.Join(root, fmt.Sprintf("pkg%02d", d/10), fmt.Sprintf("sub%d", d%10))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			p := filepath.Join(dir, fmt.Sprintf("file%03d.go", f))
			if err := os.WriteFile(p, body, 0o644); err != nil {
				b.Fatal(err)
			}
			files = append(files, p)
		}
	}
	os.WriteFile(filepath.Join(root, ".gitignore"), []byte("*.log\n/bin/\n"), 0o644)
	return root, files
}

// BenchmarkCheckpoint is one checkpoint of a 10,000-file repository in
// which a turn changed 3 files: the cost per turn. It reports the disk
// the checkpoint added (new objects' bytes; trees and the checkpoint
// object included) and how many files it read.
func BenchmarkCheckpoint(b *testing.B) {
	root, files := repo10k(b)
	st, err := Open(filepath.Join(b.TempDir(), "cp"), false)
	if err != nil {
		b.Fatal(err)
	}
	sc := NewScanner(st, Options{Clock: later})
	if _, err := sc.Scan(context.Background(), []string{root}, nil); err != nil {
		b.Fatal(err)
	}
	before := du(b, st.Dir())
	var hashed int
	var used time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		for k := range 3 {
			p := files[(i*3+k*3331)%len(files)]
			os.WriteFile(p, fmt.Appendf(nil, "package x // turn %d change %d\n", i, k), 0o644)
		}
		b.StartTimer()
		c := cpu()
		r, err := sc.Scan(context.Background(), []string{root}, nil)
		used += cpu() - c
		if err != nil {
			b.Fatal(err)
		}
		hashed += r.Stats.Hashed
	}
	b.StopTimer()
	b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(du(b, st.Dir())-before)/float64(b.N), "disk-B/op")
	b.ReportMetric(float64(hashed)/float64(b.N), "read-files/op")
}

// BenchmarkFirstCheckpoint is the first checkpoint of the same repository
// (every file read and stored once).
func BenchmarkFirstCheckpoint(b *testing.B) {
	root, _ := repo10k(b)
	for b.Loop() {
		b.StopTimer()
		st, err := Open(filepath.Join(b.TempDir(), "cp"), false)
		if err != nil {
			b.Fatal(err)
		}
		sc := NewScanner(st, Options{Clock: later})
		b.StartTimer()
		if _, err := sc.Scan(context.Background(), []string{root}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRestore plans and applies the rewind of a turn that changed 3
// files of the 10,000, deleted one and created one: the current state is
// scanned first (as a rewind does), then the plan is applied.
func BenchmarkRestore(b *testing.B) {
	root, files := repo10k(b)
	st, err := Open(filepath.Join(b.TempDir(), "cp"), false)
	if err != nil {
		b.Fatal(err)
	}
	sc := NewScanner(st, Options{Clock: later})
	target, err := sc.Scan(context.Background(), []string{root}, nil)
	if err != nil {
		b.Fatal(err)
	}
	var used time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		for k := range 3 {
			os.WriteFile(files[(i*7+k*1009)%len(files)], []byte("changed\n"), 0o644)
		}
		os.Remove(files[(i*13+5)%len(files)])
		os.WriteFile(filepath.Join(root, "pkg00", "new.go"), []byte("package new\n"), 0o644)
		b.StartTimer()
		c := cpu()
		cur, err := sc.Scan(context.Background(), []string{root}, nil)
		if err != nil {
			b.Fatal(err)
		}
		plan, err := st.Plan(cur.ID, target.ID)
		if err != nil {
			b.Fatal(err)
		}
		if len(plan.Actions) != 5 {
			b.Fatalf("%d actions", len(plan.Actions))
		}
		if _, err := st.Apply(context.Background(), plan, ApplyOptions{}); err != nil {
			b.Fatal(err)
		}
		used += cpu() - c
	}
	b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func du(b *testing.B, dir string) int64 {
	var n int64
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && filepath.Base(filepath.Dir(filepath.Dir(p))) == "objects" {
			n += fi.Size()
		}
		return nil
	})
	return n
}
