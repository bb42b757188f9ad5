// Command servebench is the load test of `dsh serve`: one real dsh serve
// process on loopback, -sessions sessions each running one -steps step
// turn against a zero-latency scripted model (DeepSeek's wire format),
// -concurrency of them streaming at once over SSE through the Go client.
// It reports errors, the added latency of each streamed chunk, and the
// server's RSS: at start, at its peak, and once every session was evicted.
//
// Added latency per chunk is measured from the fake model writing the
// chunk to its socket (each text delta carries the wall clock, in
// nanoseconds, at the moment before the write; each write is flushed on its
// own) to the client having read and decoded the assistant/chunk event of
// that delta from the session's SSE stream: the model → dsh → client path,
// with the server's parsing, the session log's append, the stream and the
// SSE framing in it. Both ends are in this process, on one clock.
//
// RSS per idle evicted session is (RSS once all sessions were evicted and
// the Go scavenger settled − RSS after one warm-up session was evicted) ÷
// sessions: what the sessions leave behind in the process, the workspace's
// composed app (built by the warm-up) excluded.
//
//	go build -o /tmp/dsh ./cmd/dsh && go run ./internal/cmd/servebench -dsh /tmp/dsh
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/client"
	"github.com/dshq/dsh/session"
)

func main() {
	if model, ok := isRelay(); ok {
		if err := runRelay(model); err != nil {
			fmt.Fprintln(os.Stderr, "servebench relay:", err)
			os.Exit(1)
		}
		return
	}
	var c Config
	baseline := flag.Bool("baseline", false, "run the sessions' model calls through a relay process that only copies the streams, instead of dsh serve: the floor of the chunk latency at this load")
	flag.StringVar(&c.Bin, "dsh", "dsh", "path to the dsh binary")
	flag.IntVar(&c.Sessions, "sessions", 200, "sessions, each running one turn")
	flag.IntVar(&c.Concurrency, "concurrency", 50, "sessions streaming at once")
	flag.IntVar(&c.Steps, "steps", 5, "model calls per turn (all but the last call a tool)")
	flag.IntVar(&c.Chunks, "chunks", 4, "text deltas per model call")
	flag.DurationVar(&c.Gap, "gap", 0, "how long the model waits before each text delta (0: zero latency, every call's stream written at once)")
	flag.BoolVar(&c.Spread, "spread", false, "draw each pause uniformly from [gap/2, 3·gap/2] (same mean) so the 50 streams' deltas come apart in time, as independent users' do, instead of all 50 at the same instant")
	flag.DurationVar(&c.Settle, "settle", 20*time.Second, "how long to wait for the RSS to settle after the sessions were evicted")
	flag.Parse()
	run := Run
	if *baseline {
		run = runBaseline
	}
	r, err := run(context.Background(), c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "servebench:", err)
		os.Exit(1)
	}
	r.Print(os.Stdout)
	if r.Errors > 0 {
		os.Exit(1)
	}
}

// Config is one load test.
type Config struct {
	Bin                                  string
	Sessions, Concurrency, Steps, Chunks int
	Settle                               time.Duration
	// Gap paces the model: it waits this long before each text delta, as
	// a real model's tokens come apart. The latency is still timed from
	// the write, so the gap is not in it; it only lowers the load.
	Gap time.Duration
	// Spread draws each pause uniformly from [Gap/2, 3·Gap/2]. With one
	// fixed Gap the sessions started together stay in phase, so the model
	// writes 50 deltas at one instant and each chunk's latency includes
	// the wait behind the other 49 of its burst — in the relay's figure as
	// much as in dsh's. Independent users' streams do not arrive so.
	Spread bool
	// Log, when set, hears the server's stderr.
	Log io.Writer
}

// Report is what a run measured.
type Report struct {
	Config
	Errors    int
	FirstErr  string
	Turns     int
	Latencies []time.Duration // one per streamed chunk, sorted
	// Split is each chunk's latency cut at its event's time (the session
	// log's clock at the append, in milliseconds): model write → append
	// (the provider's read and parse, the agent loop) and append → client
	// (the stream), each sorted.
	Ingest, Stream []time.Duration
	Wall           time.Duration
	// RSS in KiB: at start, after the warm-up session was evicted, the
	// peak while the sessions ran, and once all were evicted.
	RSSStart, RSSWarm, RSSPeak, RSSEvicted int64
	Evicted                                int
	// CPU is the server's CPU time (user+system) while the sessions ran.
	CPU time.Duration
}

// Quantile of the chunk latencies.
func (r *Report) Quantile(q float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	return r.Latencies[min(len(r.Latencies)-1, int(q*float64(len(r.Latencies))))]
}

// PerEvicted is the RSS each evicted session leaves behind, in KiB.
func (r *Report) PerEvicted() float64 {
	return float64(r.RSSEvicted-r.RSSWarm) / float64(r.Sessions)
}

// Print writes the report.
func (r *Report) Print(w io.Writer) {
	gap := ""
	switch {
	case r.Gap > 0 && r.Spread:
		gap = fmt.Sprintf(" (%v–%v before each, uniform)", r.Gap/2, r.Gap*3/2)
	case r.Gap > 0:
		gap = fmt.Sprintf(" (%v before each)", r.Gap)
	}
	fmt.Fprintf(w, "sessions %d (%d streaming at once), %d-step turns, %d chunks per step%s: %d turns completed, %d errors in %v\n",
		r.Sessions, r.Concurrency, r.Steps, r.Chunks, gap, r.Turns, r.Errors, r.Wall.Round(time.Millisecond))
	if r.FirstErr != "" {
		fmt.Fprintf(w, "first error: %s\n", r.FirstErr)
	}
	fmt.Fprintf(w, "added latency per streamed chunk (model write → client decoded the SSE event), %d chunks: p50 %v, p90 %v, p99 %v, max %v\n",
		len(r.Latencies), r.Quantile(0.5).Round(time.Microsecond), r.Quantile(0.9).Round(time.Microsecond),
		r.Quantile(0.99).Round(time.Microsecond), r.Quantile(1).Round(time.Microsecond))
	if r.RSSStart == 0 { // a baseline
		fmt.Fprintf(w, "relay CPU while the sessions ran: %v (%v per step)\n", r.CPU.Round(time.Millisecond),
			(r.CPU / time.Duration(max(r.Turns*r.Steps, 1))).Round(time.Microsecond))
		return
	}
	if len(r.Ingest) > 0 {
		q := func(d []time.Duration, f float64) time.Duration {
			return d[min(len(d)-1, int(f*float64(len(d))))].Round(time.Millisecond)
		}
		fmt.Fprintf(w, "  split at the event's append time (ms clock): model write → append p50 %v p99 %v; append → client p50 %v p99 %v\n",
			q(r.Ingest, 0.5), q(r.Ingest, 0.99), q(r.Stream, 0.5), q(r.Stream, 0.99))
	}
	fmt.Fprintf(w, "dsh serve CPU while the sessions ran: %v (%v per turn, %v per step)\n", r.CPU.Round(time.Millisecond),
		(r.CPU / time.Duration(max(r.Turns, 1))).Round(time.Microsecond), (r.CPU / time.Duration(max(r.Turns*r.Steps, 1))).Round(time.Microsecond))
	fmt.Fprintf(w, "dsh serve RSS: start %.1f MiB, after warm-up %.1f MiB, peak %.1f MiB, all %d evicted %.1f MiB\n",
		mib(r.RSSStart), mib(r.RSSWarm), mib(r.RSSPeak), r.Evicted, mib(r.RSSEvicted))
	fmt.Fprintf(w, "RSS per idle evicted session: %.1f KiB\n", r.PerEvicted())
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// Run runs one load test.
func Run(ctx context.Context, c Config) (*Report, error) {
	if c.Sessions <= 0 || c.Concurrency <= 0 || c.Steps <= 0 || c.Chunks <= 0 {
		return nil, errors.New("sessions, concurrency, steps and chunks must be positive")
	}
	model, err := startModel(c)
	if err != nil {
		return nil, err
	}
	defer model.Close()
	tmp, err := os.MkdirTemp("", "servebench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	home, work := filepath.Join(tmp, "home"), filepath.Join(tmp, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(work, "notes.txt"), []byte("what the tool reads\n"), 0o644); err != nil {
		return nil, err
	}
	env := append(os.Environ(), "DSH_HOME="+home, "DEEPSEEK_API_KEY=bench", "DEEPSEEK_BASE_URL="+model.URL,
		"DSH_MODEL=deepseek/deepseek-chat", "TERM=dumb")
	tok := exec.Command(c.Bin, "serve", "token", "create", "bench")
	tok.Env, tok.Dir = env, work
	out, err := tok.Output()
	if err != nil {
		return nil, fmt.Errorf("dsh serve token create: %v", err)
	}
	srv, err := startServe(c, env, work)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	cl := client.New(srv.url, strings.TrimSpace(string(out)))
	cl.HTTP = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.Concurrency * 2}}
	r := &Report{Config: c}
	r.RSSStart = rss(srv.pid())

	// One warm-up session builds the workspace's app; its eviction is the
	// baseline.
	if _, _, err := turn(ctx, cl, work, nil); err != nil {
		return nil, fmt.Errorf("warm-up: %v", err)
	}
	if _, err := waitEvicted(ctx, cl, 1, time.Minute); err != nil {
		return nil, err
	}
	r.RSSWarm = settle(srv.pid(), c.Settle)

	var peak atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if v := rss(srv.pid()); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
		}
	}()
	start, cpu0 := time.Now(), cpuTime(srv.pid())
	r.runSessions(func() ([]time.Duration, [][2]time.Duration, error) {
		return turn(ctx, cl, work, func() int { return c.Steps * c.Chunks })
	})
	r.Wall, r.CPU = time.Since(start), cpuTime(srv.pid())-cpu0
	close(stopSampling)
	<-sampled
	r.RSSPeak = peak.Load()
	n, err := waitEvicted(ctx, cl, c.Sessions+1, 2*time.Minute)
	r.Evicted = n - 1
	if err != nil {
		r.Errors++
		r.FirstErr = cmpOr(r.FirstErr, err.Error())
	}
	r.RSSEvicted = settle(srv.pid(), c.Settle)
	if msg := srv.failure(); msg != "" {
		r.Errors++
		r.FirstErr = cmpOr(r.FirstErr, msg)
	}
	return r, nil
}

// runSessions runs r.Sessions turns, r.Concurrency at a time, and records
// their outcomes and chunk latencies (sorted).
func (r *Report) runSessions(turn func() ([]time.Duration, [][2]time.Duration, error)) {
	var (
		mu   sync.Mutex
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range r.Concurrency {
		wg.Go(func() {
			for next.Add(1) <= int64(r.Sessions) {
				lat, split, err := turn()
				mu.Lock()
				if err != nil {
					r.Errors++
					r.FirstErr = cmpOr(r.FirstErr, err.Error())
				} else {
					r.Turns++
				}
				r.Latencies = append(r.Latencies, lat...)
				for _, sp := range split {
					r.Ingest = append(r.Ingest, sp[0])
					r.Stream = append(r.Stream, sp[1])
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(r.Latencies)
	slices.Sort(r.Ingest)
	slices.Sort(r.Stream)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// turn creates a session, opens its SSE stream, sends one prompt once the
// server has answered the stream (so every chunk is read live, none
// replayed), and reads the stream to the turn's end; it returns each
// chunk's added latency. want, when set, is the number of timed chunks the
// turn must carry.
func turn(ctx context.Context, c *client.Client, work string, want func() int) (lat []time.Duration, split [][2]time.Duration, err error) {
	s, err := c.CreateSession(ctx, api.CreateSession{Workspace: work})
	if err != nil {
		return nil, nil, fmt.Errorf("create: %v", err)
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, "GET", c.Base+"/v1/sessions/"+string(s.ID)+"/stream", nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("stream of %s: %v", s.ID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("stream of %s: %s", s.ID, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	sent := false
	for sc.Scan() {
		line := sc.Bytes()
		if !sent && len(line) == 0 {
			// The server's opening comment: the stream follows the log.
			if _, err := c.Send(ctx, s.ID, "go"); err != nil {
				return nil, nil, fmt.Errorf("send: %v", err)
			}
			sent = true
			continue
		}
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		now := time.Now().UnixNano()
		var ev session.Event
		if err := json.Unmarshal(data, &ev); err != nil {
			return lat, split, fmt.Errorf("session %s: a stream event is not JSON: %v", s.ID, err)
		}
		switch ev.Type {
		case session.TypeAssistantChunk:
			ch, err := session.Decode[session.AssistantChunk](ev)
			if err != nil {
				return lat, split, err
			}
			for _, m := range stamp.FindAllStringSubmatch(ch.Chunk.Text, -1) {
				at, _ := strconv.ParseInt(m[1], 10, 64)
				lat = append(lat, time.Duration(now-at))
				appended := ev.Time * int64(time.Millisecond)
				split = append(split, [2]time.Duration{time.Duration(appended - at), time.Duration(now - appended)})
			}
		case session.TypeTurnEnd:
			te, err := session.Decode[session.TurnEnd](ev)
			if err != nil {
				return lat, split, err
			}
			if te.Reason.Kind != session.EndCompleted {
				return lat, split, fmt.Errorf("session %s: the turn ended %s: %s", s.ID, te.Reason.Kind, te.Reason.Message)
			}
			if want != nil && len(lat) != want() {
				return lat, split, fmt.Errorf("session %s: %d timed chunks, want %d", s.ID, len(lat), want())
			}
			return lat, split, nil
		}
	}
	return lat, split, fmt.Errorf("session %s: the stream ended before the turn: %v", s.ID, sc.Err())
}

var stamp = regexp.MustCompile(`ts:(\d+);`)

// waitEvicted waits until n sessions are stored (evicted) and returns how
// many are.
func waitEvicted(ctx context.Context, c *client.Client, n int, limit time.Duration) (int, error) {
	deadline := time.Now().Add(limit)
	for {
		list, err := c.ListSessions(ctx, url.Values{"status": {api.StatusStored}, "limit": {strconv.Itoa(n + 10)}})
		if err != nil {
			return 0, err
		}
		if len(list) >= n {
			return len(list), nil
		}
		if time.Now().After(deadline) {
			return len(list), fmt.Errorf("%d of %d sessions evicted after %v", len(list), n, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// settle waits up to limit for the RSS to stop falling (the Go runtime
// returns freed memory in the background) and returns it.
func settle(pid int, limit time.Duration) int64 {
	last := rss(pid)
	deadline := time.Now().Add(limit)
	for stable := 0; stable < 4 && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		v := rss(pid)
		if v >= last-16 {
			stable++
		} else {
			stable = 0
		}
		last = min(last, v)
	}
	return last
}

// rss reads a process's resident set in KiB.
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// cpuTime reads a process's user+system CPU time (clock ticks of 10 ms).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may hold spaces: fields start after its ")".
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// server is the dsh serve process.
type server struct {
	cmd  *exec.Cmd
	url  string
	mu   sync.Mutex
	errs []string
	done chan struct{}
}

var listening = regexp.MustCompile(`listening on (https?://[^ ]+)`)

func startServe(c Config, env []string, work string) (*server, error) {
	cmd := exec.Command(c.Bin, "serve", "--listen", "127.0.0.1:0", "--root", work, "--idle-evict", "1s",
		"--rate", "100000", "--burst", "100000")
	cmd.Env, cmd.Dir = env, work
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			if c.Log != nil {
				fmt.Fprintln(c.Log, line)
			}
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			} else if strings.Contains(line, "level=ERROR") || strings.Contains(line, "panic") {
				s.mu.Lock()
				s.errs = append(s.errs, line)
				s.mu.Unlock()
			}
		}
	}()
	go func() {
		_ = cmd.Wait()
		pw.Close()
		close(s.done)
	}()
	select {
	case s.url = <-addr:
		return s, nil
	case <-s.done:
		return nil, errors.New("dsh serve exited before it listened")
	case <-time.After(60 * time.Second):
		s.stop()
		return nil, errors.New("dsh serve did not listen within 60 s")
	}
}

func (s *server) pid() int { return s.cmd.Process.Pid }

func (s *server) failure() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) > 0 {
		return "dsh serve logged: " + s.errs[0]
	}
	select {
	case <-s.done:
		return "dsh serve exited"
	default:
	}
	return ""
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
}

// pause is how long the model waits before a delta.
func (c Config) pause() time.Duration {
	if !c.Spread || c.Gap <= 0 {
		return c.Gap
	}
	return c.Gap/2 + rand.N(c.Gap)
}

// model is the zero-latency scripted model: a turn is steps-1 calls of
// the read tool, then an answer; every call first streams chunks text
// deltas, each stamped with the wall clock just before its write.
type model struct {
	*http.Server
	URL string
}

func startModel(c Config) (*model, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m := &model{URL: "http://" + ln.Addr().String()}
	m.Server = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		tools := 0
		for _, msg := range req.Messages {
			if msg.Role == "tool" {
				tools++
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl, _ := w.(http.Flusher)
		send := func(v map[string]any) {
			v["id"], v["object"], v["model"] = "chatcmpl-bench", "chat.completion.chunk", "deepseek-chat"
			b, _ := json.Marshal(v)
			_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
			fl.Flush()
		}
		delta := func(d map[string]any, finish any, usage any) map[string]any {
			v := map[string]any{"choices": []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}}
			if usage != nil {
				v["usage"] = usage
			}
			return v
		}
		for i := range c.Chunks {
			if c.Gap > 0 {
				time.Sleep(c.pause())
			}
			d := map[string]any{"content": fmt.Sprintf("step %d part %d ts:%d; ", tools+1, i, time.Now().UnixNano())}
			if i == 0 {
				d["role"] = "assistant"
			}
			send(delta(d, nil, nil))
		}
		usage := map[string]any{"prompt_tokens": 100, "completion_tokens": 10}
		if tools < c.Steps-1 {
			args, _ := json.Marshal(map[string]string{"file_path": "notes.txt"})
			send(delta(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_%d", tools),
				"type": "function", "function": map[string]any{"name": "read", "arguments": string(args)}}}}, nil, nil))
			send(delta(map[string]any{}, "tool_calls", usage))
		} else {
			send(delta(map[string]any{}, "stop", usage))
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	})}
	go func() { _ = m.Serve(ln) }()
	return m, nil
}
