// Command procbench measures whole-process figures of the dsh binary: the
// time of `dsh -p` against a zero-latency loopback model (DeepSeek wire
// format) for a 0-step and an N-step task where every step runs `echo`
// through the bash tool, the per-step overhead derived from the two, the
// peak RSS, and the cold start of the binary. With -flat N it instead runs one
// task of N steps printing -output bytes each and compares dsh's CPU per step
// early and late in it.
//
//	go build -o /tmp/dsh ./cmd/dsh && go run ./internal/cmd/procbench -dsh /tmp/dsh
package main

import (
	"bytes"
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
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	bin := flag.String("dsh", "dsh", "path to the dsh binary")
	steps := flag.Int("steps", 20, "tool steps in the long task")
	runs := flag.Int("runs", 10, "runs per measurement (median reported)")
	bigChunk := flag.Int("chunk", 0, "also measure an answer streamed as one text chunk of this many bytes")
	flat := flag.Int("flat", 0, "instead, run one task of this many tool steps and compare dsh's CPU per step early and late in it")
	output := flag.Int("output", 20*1024, "with -flat, bytes each step's command prints")
	start := flag.Bool("start", false, "instead, measure only the start to a ready prompt of each binary in the comma-separated -dsh list, alternating them run by run (an entry NAME=VALUE@PATH runs PATH with NAME=VALUE in its environment)")
	flag.Parse()
	if *start {
		startRun(strings.Split(*bin, ","), *runs)
		return
	}
	if *flat > 0 {
		flatRun(*bin, *flat, *output)
		return
	}

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

// flatRun measures whether a step costs the same late in a long task as
// early on: one `dsh -p` of n tool steps, each printing output bytes, against
// a loopback model that reports the prompt's real size as usage (so
// compaction runs as it would). At each request the server samples the dsh
// process's own CPU time (utime+stime from /proc, children excluded), and
// the per-step CPU of the 200 steps after step 10 is compared with that of
// the last 200.
func flatRun(bin string, n, output int) {
	var (
		left atomic.Int64
		pid  atomic.Int64
		cpu  []time.Duration // dsh's CPU when each request arrived
		mu   sync.Mutex
	)
	left.Store(int64(n))
	cmdline := fmt.Sprintf("yes 'a line of tool output, printed until the step has its bytes' | head -c %d", output)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		cpu = append(cpu, procCPU(int(pid.Load())))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		usage := map[string]any{"prompt_tokens": len(body) / 4, "completion_tokens": 5}
		if bytes.Contains(body, []byte("checkpoint that replaces it")) {
			s := "## Goal\n- run the command\n## Decisions\n- (none)\n## Files touched\n- (none)\n## Errors and fixes\n- (none)\n## Open tasks\n- more runs\n## Next step\n- run it"
			chunk(w, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": s}, "finish_reason": "stop"}}, "usage": usage})
		} else if k := left.Add(-1); k >= 0 {
			args, _ := json.Marshal(map[string]string{"command": cmdline, "description": "print"})
			chunk(w, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{
				"index": 0, "id": fmt.Sprintf("call_%d", k), "type": "function", "function": map[string]any{"name": "bash", "arguments": string(args)}}}}}}})
			chunk(w, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "tool_calls"}}, "usage": usage})
		} else {
			chunk(w, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": "done"}, "finish_reason": "stop"}}, "usage": usage})
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	home, _ := os.MkdirTemp("", "procbench-home-")
	work, _ := os.MkdirTemp("", "procbench-work-")
	defer os.RemoveAll(home)
	defer os.RemoveAll(work)
	cmd := exec.Command(bin, "-p", "run the command until told to stop")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "DSH_HOME="+home, "DEEPSEEK_API_KEY=bench", "DEEPSEEK_BASE_URL="+srv.URL, "DSH_MODEL=deepseek/deepseek-chat", "TERM=dumb")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "procbench: %v\n", err)
		os.Exit(1)
	}
	pid.Store(int64(cmd.Process.Pid))
	if err := cmd.Wait(); err != nil {
		fmt.Fprintf(os.Stderr, "procbench: %v\n%s", err, out.Bytes())
		os.Exit(1)
	}
	wall := time.Since(start)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	mu.Lock()
	defer mu.Unlock()
	per := func(from, to int) time.Duration { return (cpu[to] - cpu[from]) / time.Duration(to-from) }
	const window = 200
	if len(cpu) < 2*window+20 {
		fmt.Fprintf(os.Stderr, "procbench: only %d requests\n", len(cpu))
		os.Exit(1)
	}
	early, late := per(10, 10+window), per(len(cpu)-1-window, len(cpu)-1)
	fmt.Printf("dsh -p, %d steps of %d-byte outputs: %d requests in %v, dsh CPU %v (user %v, sys %v), peak RSS %.1f MiB\n",
		n, output, len(cpu), wall.Round(time.Millisecond), (time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())).Round(time.Millisecond),
		time.Duration(ru.Utime.Nano()).Round(time.Millisecond), time.Duration(ru.Stime.Nano()).Round(time.Millisecond), float64(ru.Maxrss)/1024)
	fmt.Printf("dsh CPU per step: requests 10-%d %v, requests %d-%d %v (late/early %.2f)\n",
		10+window, early.Round(10*time.Microsecond), len(cpu)-1-window, len(cpu)-1, late.Round(10*time.Microsecond), float64(late)/float64(early))
}

// procCPU is a process's own user+system CPU time (not its children's),
// from /proc/<pid>/stat, in clock ticks of 10 ms.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil || pid == 0 {
		return 0
	}
	// Fields after the command name, which is in parentheses and may
	// contain spaces: utime and stime are the 14th and 15th fields.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	var ut, st int64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// startRun measures the start of interactive dsh to a ready prompt (then
// exit) for each binary, one run of each in turn so that a change in the
// machine's load falls on all of them alike. Besides the wall time it
// reports the CPU the process used (user+system), its page faults and peak
// RSS, and how many garbage collections the runtime ran before the prompt
// (GODEBUG=gctrace=1 lines on stderr): on a loaded machine the wall time
// mostly measures the queue for a core, and the CPU time is the steadier
// figure.
func startRun(bins []string, runs int) {
	home, _ := os.MkdirTemp("", "procbench-home-")
	work, _ := os.MkdirTemp("", "procbench-work-")
	defer os.RemoveAll(home)
	defer os.RemoveAll(work)
	type sample struct {
		wall, cpu   time.Duration
		faults, rss int64
		gcs         int
	}
	one := func(bin string) sample {
		var extra []string
		if kv, path, ok := strings.Cut(bin, "@"); ok && strings.Contains(kv, "=") {
			extra, bin = []string{kv}, path
		}
		cmd := exec.Command(bin)
		cmd.Dir = work
		cmd.Env = append(append(os.Environ(), extra...), "DSH_HOME="+home, "DEEPSEEK_API_KEY=bench", "DEEPSEEK_BASE_URL=http://127.0.0.1:9",
			"DSH_MODEL=deepseek/deepseek-chat", "TERM=dumb", "DSH_BENCH_EXIT_READY=1", "GODEBUG=gctrace=1")
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		t := time.Now()
		err := cmd.Run()
		wall := time.Since(t)
		if err != nil {
			fmt.Fprintf(os.Stderr, "procbench: %s: %v\n%s", bin, err, stderr.Bytes())
			os.Exit(1)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		gcs := 0
		for _, line := range strings.Split(stderr.String(), "\n") {
			if f := strings.Fields(line); len(f) > 2 && f[0] == "gc" && strings.HasPrefix(f[2], "@") {
				gcs++
			}
		}
		return sample{wall, time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Minflt + ru.Majflt, ru.Maxrss, gcs}
	}
	for _, b := range bins {
		one(b) // warm the page cache
	}
	all := make([][]sample, len(bins))
	for range runs {
		for i, b := range bins {
			all[i] = append(all[i], one(b))
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("%d runs each, alternating; load average after: %s", runs, load)
	for i, b := range bins {
		s := all[i]
		med := func(get func(sample) int64) int64 {
			v := make([]int64, len(s))
			for j := range s {
				v[j] = get(s[j])
			}
			sort.Slice(v, func(a, b int) bool { return v[a] < v[b] })
			return v[len(v)/2]
		}
		withGC := 0
		for _, x := range s {
			if x.gcs > 0 {
				withGC++
			}
		}
		fmt.Printf("%s: start to a ready prompt median %v, CPU median %v, page faults %d, peak RSS %.1f MiB, runs with a GC before the prompt %d/%d\n",
			b, time.Duration(med(func(x sample) int64 { return int64(x.wall) })).Round(10*time.Microsecond),
			time.Duration(med(func(x sample) int64 { return int64(x.cpu) })).Round(10*time.Microsecond),
			med(func(x sample) int64 { return x.faults }), float64(med(func(x sample) int64 { return x.rss }))/1024, withGC, len(s))
	}
}
