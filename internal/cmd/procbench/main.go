// Command procbench measures whole-process figures of the dsh binary: the
// time of `dsh -p` against a zero-latency loopback model (DeepSeek wire
// format) for a 0-step and an N-step task where every step runs `echo`
// through the bash tool, the per-step overhead derived from the two, the
// peak RSS, and the cold start of the binary.
//
//	go build -o /tmp/dsh ./cmd/dsh && go run ./internal/cmd/procbench -dsh /tmp/dsh
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	bin := flag.String("dsh", "dsh", "path to the dsh binary")
	steps := flag.Int("steps", 20, "tool steps in the long task")
	runs := flag.Int("runs", 10, "runs per measurement (median reported)")
	bigChunk := flag.Int("chunk", 0, "also measure an answer streamed as one text chunk of this many bytes")
	flag.Parse()

	var left, big atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if n := big.Load(); n > 0 {
			chunk(w, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": strings.Repeat("x", int(n))}}}})
			chunk(w, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}, "usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 1}})
		} else if left.Add(-1) >= 0 {
			args, _ := json.Marshal(map[string]string{"command": "echo step", "description": "echo"})
			chunk(w, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{
				"index": 0, "id": fmt.Sprintf("call_%d", left.Load()), "type": "function", "function": map[string]any{"name": "bash", "arguments": string(args)}}}}}}})
			chunk(w, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "tool_calls"}}, "usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5}})
		} else {
			chunk(w, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": "done"}, "finish_reason": "stop"}}, "usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 1}})
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()

	home, _ := os.MkdirTemp("", "procbench-home-")
	work, _ := os.MkdirTemp("", "procbench-work-")
	defer os.RemoveAll(home)
	defer os.RemoveAll(work)
	run := func(n int, args ...string) (time.Duration, int64) {
		left.Store(int64(n))
		cmd := exec.Command(*bin, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "DSH_HOME="+home, "DEEPSEEK_API_KEY=bench", "DEEPSEEK_BASE_URL="+srv.URL, "DSH_MODEL=deepseek/deepseek-chat", "TERM=dumb")
		if readyEnv {
			cmd.Env = append(cmd.Env, "DSH_BENCH_EXIT_READY=1")
		}
		start := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(start)
		if err != nil {
			fmt.Fprintf(os.Stderr, "procbench: %v\n%s", err, out)
			os.Exit(1)
		}
		rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB on Linux
		return d, rss
	}
	median := func(n int, args ...string) (time.Duration, int64) {
		var ds []time.Duration
		var peak int64
		for range *runs {
			d, rss := run(n, args...)
			ds = append(ds, d)
			peak = max(peak, rss)
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2], peak
	}
	run(0, "version") // warm the page cache
	cold, coldRSS := median(0, "version")
	readyEnv = true
	ready, readyRSS := median(0)
	readyEnv = false
	zero, zeroRSS := median(0, "-p", "answer directly")
	long, longRSS := median(*steps, "-p", "run echo repeatedly")
	per := (long - zero) / time.Duration(*steps)
	fmt.Printf("dsh version (process start + exit): median %v, peak RSS %d KiB\n", cold.Round(10*time.Microsecond), coldRSS)
	fmt.Printf("interactive dsh, start to a ready prompt (then exit): median %v, peak RSS %.1f MiB\n", ready.Round(10*time.Microsecond), float64(readyRSS)/1024)
	fmt.Printf("dsh -p, 0 steps:  median %v, peak RSS %.1f MiB\n", zero.Round(10*time.Microsecond), float64(zeroRSS)/1024)
	fmt.Printf("dsh -p, %d steps: median %v, peak RSS %.1f MiB\n", *steps, long.Round(10*time.Microsecond), float64(longRSS)/1024)
	fmt.Printf("per-step overhead (incl. the echo subprocess): %v\n", per.Round(10*time.Microsecond))
	if *bigChunk > 0 {
		big.Store(int64(*bigChunk))
		var peaks []int64
		for range *runs {
			_, rss := run(0, "-p", "one big answer")
			peaks = append(peaks, rss)
		}
		sort.Slice(peaks, func(i, j int) bool { return peaks[i] < peaks[j] })
		fmt.Printf("dsh -p, one %d-byte text chunk: peak RSS min %.1f MiB, median %.1f MiB\n", *bigChunk,
			float64(peaks[0])/1024, float64(peaks[len(peaks)/2])/1024)
	}
}

var readyEnv bool

func chunk(w io.Writer, m map[string]any) {
	m["id"], m["object"], m["model"] = "chatcmpl", "chat.completion.chunk", "deepseek-chat"
	b, _ := json.Marshal(m)
	fmt.Fprintf(w, "data: %s\n\n", b)
}
