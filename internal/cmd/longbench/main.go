// Command longbench measures what a long one-turn `dsh -p` costs: a
// zero-latency loopback model (DeepSeek wire format) asks for N tool steps,
// each running a bash command that prints a fixed-size output, then
// answers. It reports the peak RSS of the dsh process and its own CPU time
// (user+sys, from /proc, children excluded) over the first and the last
// ten steps, so growth per step shows however loaded the machine is.
//
//	go build -o /tmp/dsh ./cmd/dsh && go run ./internal/cmd/longbench -dsh /tmp/dsh -steps 5000 -size 20000
//	go run ./internal/cmd/longbench -dsh /tmp/dsh -steps 5000 -size 20000 -window 32000
//	go run ./internal/cmd/longbench -dsh /tmp/dsh -tui -stream 40 -steps 2000 -size 20000   # the terminal UI
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	bin := flag.String("dsh", "dsh", "path to the dsh binary")
	steps := flag.Int("steps", 5000, "tool steps in the turn")
	size := flag.Int("size", 20000, "bytes each tool call prints")
	window := flag.Int("window", 0, "compaction.contextWindow setting (0: the model's)")
	keep := flag.String("home", "", "use this DSH_HOME and keep it (default: a temporary one)")
	logPath := flag.String("log", "", "write dsh's output (stdout and stderr) to this file")
	tui := flag.Bool("tui", false, "run the terminal UI (in a private tmux server) instead of dsh -p")
	deltas := flag.Int("stream", 0, "text deltas streamed before each tool call")
	unsandboxed := flag.Bool("nosandbox", false, "run the commands without the sandbox (sandbox.mode danger-full-access): dsh's own memory is the same, steps are much cheaper on a loaded machine")
	flag.Parse()

	var (
		served atomic.Int64
		// summaries counts compaction's summarization requests.
		summaries atomic.Int64
		pid       atomic.Int64
		hwm       atomic.Int64 // dsh's own peak RSS (KiB) at the final request
		mu        sync.Mutex
		cpuAt     = map[int64]time.Duration{}
	)
	// The sampler keeps dsh's largest anonymous resident set: VmHWM is the
	// peak of anonymous and file-backed pages together, and the file-backed
	// part is mostly the binary's own code (docs/benchmarks.md).
	go func() {
		for {
			if p := int(pid.Load()); p > 0 {
				s := procStatus(p)
				peaks.Lock()
				if s["RssAnon"] > peaks.anon {
					peaks.anon, peaks.fileAtAnon, peaks.step = s["RssAnon"], s["RssFile"], served.Load()
				}
				peaks.Unlock()
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	marks := map[int64]bool{10: true, 20: true, int64(*steps - 10): true, int64(*steps): true}
	cmdText := fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x", *size)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte("checkpoint that replaces it")) {
			// Compaction's summarization request: answer with a summary,
			// as a model would (a tool call here fails the summary, and
			// the run measures retries instead of work). Not a step.
			var b strings.Builder
			event(&b, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": "## Goal\n- print output repeatedly\n## Next step\n- run the command again"}, "finish_reason": "stop"}}})
			b.WriteString("data: [DONE]\n\n")
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
			io.WriteString(w, b.String())
			summaries.Add(1)
			return
		}
		n := served.Add(1) // the request of step n
		if marks[n] {
			if c, ok := procCPU(int(pid.Load())); ok {
				mu.Lock()
				cpuAt[n] = c
				mu.Unlock()
			}
		}
		if n == int64(*steps)+1 {
			st := procStatus(int(pid.Load()))
			hwm.Store(st["VmHWM"])
			peaks.Lock()
			peaks.final = st
			peaks.Unlock()
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/"+os.Getenv("LONGBENCH_STATUS"), pid.Load())); err == nil && os.Getenv("LONGBENCH_STATUS") != "" {
				os.Stderr.Write(b)
			}
		}
		var b strings.Builder
		for i := range *deltas {
			event(&b, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": fmt.Sprintf("word%d ", i)}}}})
		}
		if n <= int64(*steps) {
			args, _ := json.Marshal(map[string]string{"command": cmdText, "description": "print"})
			event(&b, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{
				"index": 0, "id": "call_" + strconv.FormatInt(n, 10), "type": "function", "function": map[string]any{"name": "bash", "arguments": string(args)}}}}}}})
			event(&b, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "tool_calls"}}})
		} else {
			event(&b, map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": "done"}, "finish_reason": "stop"}}})
		}
		b.WriteString("data: [DONE]\n\n")
		// Headers and body in one write: no Nagle/delayed-ACK stall.
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
		io.WriteString(w, b.String())
	})}
	go srv.Serve(ln)
	defer srv.Close()

	home := *keep
	if home == "" {
		home, _ = os.MkdirTemp("", "longbench-home-")
		defer os.RemoveAll(home)
	}
	work, _ := os.MkdirTemp("", "longbench-work-")
	defer os.RemoveAll(work)
	if *window > 0 || *unsandboxed {
		s := map[string]any{}
		if *window > 0 {
			s["compaction"] = map[string]any{"contextWindow": *window}
		}
		if *unsandboxed {
			s["sandbox"] = map[string]any{"mode": "danger-full-access"}
		}
		settings, _ := json.Marshal(s)
		if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settings), 0o600); err != nil {
			panic(err)
		}
	}
	env := []string{"DSH_HOME=" + home, "DEEPSEEK_API_KEY=bench", "DEEPSEEK_BASE_URL=http://" + ln.Addr().String(), "DSH_MODEL=deepseek/deepseek-chat"}
	if *tui {
		runTUI(*bin, work, env, *steps, &pid, &hwm, &served)
		report(*steps, *window, served.Load(), summaries.Load(), hwm.Load(), &mu, cpuAt)
		reportSplit()
		return
	}
	args := []string{"-p", "print things repeatedly"}
	if *unsandboxed {
		// Outside the sandbox a command is no longer allowed by it.
		args = append(args, "--allowedTools", "Bash")
	}
	cmd := exec.Command(*bin, args...)
	cmd.Dir = work
	cmd.Env = append(append(os.Environ(), env...), "TERM=dumb")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	pid.Store(int64(cmd.Process.Pid))
	err = cmd.Wait()
	wall := time.Since(start)
	if err != nil {
		fmt.Fprintf(os.Stderr, "longbench: %v\n%s", err, tail(out.String()))
		os.Exit(1)
	}
	if *logPath != "" {
		_ = os.WriteFile(*logPath, []byte(out.String()), 0o600)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	self := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	fmt.Printf("dsh -p, %d steps of %d-byte outputs (window %d): wall %v, model requests %d (and %d summarization requests)\n", *steps, *size, *window, wall.Round(time.Millisecond), served.Load(), summaries.Load())
	fmt.Printf("dsh peak RSS (VmHWM at the final request) %.1f MiB; rusage maxrss %.1f MiB (largest of dsh and its children); CPU user+sys %v (with children)\n",
		float64(hwm.Load())/1024, float64(ru.Maxrss)/1024, self.Round(time.Millisecond))
	report(*steps, *window, -1, 0, 0, &mu, cpuAt)
	reportSplit()
}

// peaks is what the sampler and the final request saw of dsh's memory (KiB).
var peaks struct {
	sync.Mutex
	anon, fileAtAnon int64
	step             int64 // the model request being served at the peak
	final            map[string]int64
}

// reportSplit prints dsh's resident memory split into anonymous (the Go
// heap, stacks and runtime) and file-backed (the binary's mapped pages).
func reportSplit() {
	peaks.Lock()
	defer peaks.Unlock()
	mib := func(k int64) float64 { return float64(k) / 1024 }
	f := peaks.final
	fmt.Printf("dsh RssAnon peak %.1f MiB at request %d (sampled every 100 ms; RssFile then %.1f MiB); at the final request RssAnon %.1f MiB, RssFile %.1f MiB\n",
		mib(peaks.anon), peaks.step, mib(peaks.fileAtAnon), mib(f["RssAnon"]), mib(f["RssFile"]))
}

// procStatus is pid's /proc status memory lines in KiB (VmHWM, RssAnon, ...).
func procStatus(pid int) map[string]int64 {
	out := map[string]int64{}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, rest, ok := strings.Cut(line, ":")
		if f := strings.Fields(rest); ok && len(f) == 2 && f[1] == "kB" {
			out[k], _ = strconv.ParseInt(f[0], 10, 64)
		}
	}
	return out
}

// report prints dsh's CPU per step early and late (and, for the terminal
// UI, what the -p run prints from its exit status).
func report(steps, window int, served, summaries, hwm int64, mu *sync.Mutex, cpuAt map[int64]time.Duration) {
	if served >= 0 {
		fmt.Printf("dsh (terminal UI in tmux), %d steps (window %d): model requests %d (and %d summarization requests)\n", steps, window, served, summaries)
		fmt.Printf("dsh peak RSS (VmHWM at the final request) %.1f MiB\n", float64(hwm)/1024)
	}
	mu.Lock()
	defer mu.Unlock()
	first, okA := cpuAt[20]-cpuAt[10], cpuAt[10] > 0 && cpuAt[20] > 0
	last, okB := cpuAt[int64(steps)]-cpuAt[int64(steps-10)], cpuAt[int64(steps-10)] > 0 && cpuAt[int64(steps)] > 0
	if okA && okB {
		fmt.Printf("dsh CPU per step (own, user+sys): steps 10-20 %v, steps %d-%d %v (ratio %.2f)\n",
			first/10, steps-10, steps, last/10, float64(last)/float64(max(first, 1)))
	}
}

// runTUI runs the interactive dsh in a private tmux server (120×40), the
// prompt given on its command line and bash allowed, until the model has
// served the final answer's request; then it stops the server.
func runTUI(bin, work string, env []string, steps int, pid, hwm, served *atomic.Int64) {
	sock := fmt.Sprintf("longbench-%d", os.Getpid())
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "longbench: tmux %v: %v\n%s", args, err, out)
			os.Exit(1)
		}
		return strings.TrimSpace(string(out))
	}
	line := "cd " + strconv.Quote(work) + " && exec env TERM=xterm-256color"
	// The tmux server's shell does not inherit this process's environment:
	// pass on the Go runtime's knobs (GOGC=50 longbench -tui ...) as well.
	for _, k := range []string{"GOGC", "GOMEMLIMIT", "GODEBUG", "DSH_BENCH_HEAP_PROFILE"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for _, e := range env {
		line += " " + strconv.Quote(e)
	}
	line += " " + strconv.Quote(bin) + ` --allowedTools Bash "print things repeatedly"`
	tmux("new-session", "-d", "-s", "bench", "-x", "120", "-y", "40", line)
	defer exec.Command("tmux", "-L", sock, "kill-server").Run()
	p, err := strconv.Atoi(tmux("display-message", "-p", "-t", "bench", "#{pane_pid}"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "longbench: no pane pid:", err)
		os.Exit(1)
	}
	pid.Store(int64(p))
	start := time.Now()
	for hwm.Load() == 0 {
		if syscall.Kill(p, 0) != nil {
			fmt.Fprintf(os.Stderr, "longbench: dsh exited after %d requests\n", served.Load())
			os.Exit(1)
		}
		time.Sleep(200 * time.Millisecond)
	}
	fmt.Printf("wall %v\n", time.Since(start).Round(time.Millisecond))
}

// procCPU is the user+sys CPU time of pid itself (not its children).
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * (time.Second / 100), true // USER_HZ is 100 on Linux
}

func event(b *strings.Builder, m map[string]any) {
	m["id"], m["object"], m["model"] = "chatcmpl", "chat.completion.chunk", "deepseek-chat"
	j, _ := json.Marshal(m)
	fmt.Fprintf(b, "data: %s\n\n", j)
}

func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}
