package fstool

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshq/dsh/fs/local"
	"github.com/dshq/dsh/fs/policy"
)

// benchLineLen is the length of every line of the benchmark file,
// "line 0000000001\n": 2000 of them (31,999 bytes of output) stay under the
// read tool's 50 KiB cap, so the benchmark measures a full 2,000-line
// window.
const benchLineLen = 16

var bench struct {
	once  sync.Once
	dir   string
	name  string
	lines int
	err   error
}

// benchFile writes the benchmark file once per test binary: DSH_FS_BENCH_SIZE
// bytes (default 1 GiB) of numbered lines. It is removed by TestMain.
func benchFile(b *testing.B) (string, int) {
	b.Helper()
	bench.once.Do(func() {
		size := int64(1 << 30)
		if s := os.Getenv("DSH_FS_BENCH_SIZE"); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				bench.err = fmt.Errorf("DSH_FS_BENCH_SIZE: %w", err)
				return
			}
			size = n
		}
		bench.dir, bench.err = os.MkdirTemp("", "dsh-fs-bench-")
		if bench.err != nil {
			return
		}
		bench.name = filepath.Join(bench.dir, "big.log")
		start := time.Now()
		bench.lines, bench.err = writeNumberedLines(bench.name, int(size/benchLineLen))
		b.Logf("generated %s (%d lines, %d bytes) in %v", bench.name, bench.lines, int64(bench.lines)*benchLineLen, time.Since(start))
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return bench.name, bench.lines
}

func writeNumberedLines(name string, n int) (int, error) {
	f, err := os.Create(name)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 4<<20)
	line := []byte("line 0000000000\n")
	for i := 1; i <= n; i++ {
		for j, v := 14, i; j >= 5 && v > 0; j, v = j-1, v/10 {
			line[j] = byte('0' + v%10)
		}
		if _, err := w.Write(line); err != nil {
			f.Close()
			return 0, err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	return n, f.Close()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bench.dir != "" {
		os.RemoveAll(bench.dir)
	}
	os.Exit(code)
}

// BenchmarkReadWindow measures the read tool returning a 2,000-line window
// of a large file: at its start (what a model does first), in the middle and
// at the end (which must scan the file for line breaks; there is no index).
//
//	go test -bench ReadWindow -run '^$' -benchtime 20x ./tools/fstool/
//	DSH_FS_BENCH_SIZE=268435456 go test -bench ReadWindow -run '^$' ./tools/fstool/
func BenchmarkReadWindow(b *testing.B) {
	name, total := benchFile(b)
	p, err := local.New(local.Options{Cwd: filepath.Dir(name)})
	if err != nil {
		b.Fatal(err)
	}
	read := Tools(p, policy.New(), Options{})[0]
	host := newHost("bench", filepath.Dir(name))
	for _, c := range []struct {
		name   string
		offset int
	}{
		{"start", 1},
		{"middle", total / 2},
		{"end", total - 1999},
	} {
		b.Run(c.name, func(b *testing.B) {
			args := map[string]any{"file_path": "big.log", "offset": c.offset, "limit": 2000}
			first := fmt.Sprintf("%6d\tline %010d\n", c.offset, c.offset)
			last := fmt.Sprintf("%6d\tline %010d\n", c.offset+1999, c.offset+1999)
			for b.Loop() {
				res, err := call(b, context.Background(), read, host, args)
				if err != nil {
					b.Fatal(err)
				}
				if text := res.Content[0].Text; !strings.Contains(text, first) || !strings.Contains(text, last) {
					b.Fatalf("window %d-%d not returned:\n%.300s", c.offset, c.offset+1999, text)
				}
			}
		})
	}
}
