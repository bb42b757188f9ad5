//go:build unix

package search

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// genBenchTree writes 100,000 small files (about 300 bytes, 8 lines)
// under root: 100 directories of 10 subdirectories of 100 files. About 1%
// of the files contain "needle_xyz"; "func \w+\(" lines are common.
func genBenchTree(b *testing.B, root string) {
	b.Helper()
	words := strings.Fields("alpha beta gamma delta epsilon zeta theta lambda sigma omega value error nil return")
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for d := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(d), 7))
			var sb strings.Builder
			for s := range 10 {
				dir := filepath.Join(root, fmt.Sprintf("d%02d", d), fmt.Sprintf("s%d", s))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					errs <- err
					return
				}
				for f := range 100 {
					sb.Reset()
					for l := range 8 {
						if l == 0 && r.IntN(4) == 0 {
							fmt.Fprintf(&sb, "func %s%d(x int) error {\n", words[r.IntN(len(words))], f)
							continue
						}
						for w := range 6 {
							if w > 0 {
								sb.WriteByte(' ')
							}
							sb.WriteString(words[r.IntN(len(words))])
						}
						if l == 3 && r.IntN(100) == 0 {
							sb.WriteString(" needle_xyz")
						}
						sb.WriteByte('\n')
					}
					if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", f)), []byte(sb.String()), 0o644); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// BenchmarkGrep compares, over a 100,000-file tree, rg run directly, Grep
// delegating to rg, and Grep's Go walker. Run with
//
//	go test -bench Grep -run '^$' -benchtime 3x ./search/
func BenchmarkGrep(b *testing.B) {
	root := b.TempDir()
	genBenchTree(b, root)
	cases := []struct {
		name    string
		pattern string
		mode    OutputMode
		rgFlag  string
	}{
		{"files/literal", "needle_xyz", FilesWithMatches, "--files-with-matches"},
		{"content/regex", `func \w+\(`, Content, "--line-number"},
	}
	for _, c := range cases {
		b.Run(c.name+"/rg-direct", func(b *testing.B) {
			rg := rgPath(b)
			defer reportCPU(b)()
			for b.Loop() {
				cmd := exec.Command(rg, "--no-config", c.rgFlag, "--regexp="+c.pattern, "--", root)
				// A pipe, not /dev/null: rg stops at the first match when
				// it sees its output is discarded.
				cmd.Stdout = io.Discard
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, backend := range []Backend{Ripgrep, Native} {
			b.Run(c.name+"/"+string(backend), func(b *testing.B) {
				if backend == Ripgrep {
					rgPath(b)
				}
				s := &Searcher{Backend: backend}
				var res *GrepResult
				defer reportCPU(b)()
				for b.Loop() {
					var err error
					res, err = s.Grep(context.Background(), root, GrepOptions{Pattern: c.pattern, Mode: c.mode})
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(res.TotalFiles), "files-matched")
			})
		}
	}
}

// reportCPU reports the CPU time (user + system, this process and the
// children it waited for) per operation. On a shared machine wall time
// swings with other load; CPU time is the steadier measure of work done.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64((cpuTime()-start).Milliseconds())/float64(b.N), "cpu-ms/op")
	}
}

func cpuTime() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}
