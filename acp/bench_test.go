package acp_test

// Benchmarks recorded in docs/bench/acp.md:
//
//	go test ./acp -run '^$' -bench . -benchtime 30x
import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/acp/acptest"
)

const initFrame = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n"

func percentiles(b *testing.B, unit string, ds []time.Duration, scale float64) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	at := func(p float64) float64 {
		i := int(float64(len(ds)-1) * p)
		return float64(ds[i]) / scale
	}
	b.ReportMetric(at(0.50), "p50-"+unit)
	b.ReportMetric(at(0.99), "p99-"+unit)
	b.ReportMetric(float64(ds[len(ds)-1])/scale, "max-"+unit)
}

// spawnToInit measures spawn → initialize response of an ACP binary.
func spawnToInit(b *testing.B, bin string, args ...string) {
	home, dir := b.TempDir(), b.TempDir()
	env := append(os.Environ(), "DSH_HOME="+home, "HOME="+home, "DEEPSEEK_API_KEY=", "ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "DSH_MODEL=")
	var samples []time.Duration
	for b.Loop() {
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = dir, env
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		_, _ = io.WriteString(in, initFrame)
		line, err := bufio.NewReader(out).ReadBytes('\n')
		d := time.Since(start)
		if err != nil || !bytes.Contains(line, []byte(`"protocolVersion":1`)) {
			b.Fatalf("initialize: %q %v", line, err)
		}
		samples = append(samples, d)
		in.Close()
		_ = cmd.Wait()
	}
	percentiles(b, "ms", samples, float64(time.Millisecond))
}

// BenchmarkSpawnToInitialize is `dsh acp` as an editor starts it.
func BenchmarkSpawnToInitialize(b *testing.B) {
	spawnToInit(b, dshBinary(b), "acp")
}

// BenchmarkSpawnToInitializeServerOnly is the ACP server in a binary that
// links nothing else (testdata/acpmain): the server's own share.
func BenchmarkSpawnToInitializeServerOnly(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "acpmain")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/acpmain").CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	spawnToInit(b, bin)
}

// stampWriter records when each agent_message_chunk frame is written.
type stampWriter struct {
	w     io.Writer
	mu    sync.Mutex
	stamp map[int]time.Time
}

var chunkTag = []byte(`"text":"c`)

func (s *stampWriter) Write(p []byte) (int, error) {
	now := time.Now()
	if i := bytes.Index(p, chunkTag); i >= 0 && bytes.Contains(p, []byte("agent_message_chunk")) {
		rest := p[i+len(chunkTag):]
		if j := bytes.IndexByte(rest, '|'); j > 0 {
			if n, err := strconv.Atoi(string(rest[:j])); err == nil {
				s.mu.Lock()
				s.stamp[n] = now
				s.mu.Unlock()
			}
		}
	}
	return s.w.Write(p)
}

// BenchmarkChunkLatency measures, per streamed text chunk, the time from
// the model server flushing the SSE event to the ACP server writing the
// agent_message_chunk frame: HTTP, SSE parsing, the loop, the session log,
// translation and framing. Chunks are paced 1ms apart, as a model streams.
func BenchmarkChunkLatency(b *testing.B) {
	const n = 200
	var mu sync.Mutex
	sent := map[int]time.Time{}
	reply := func() acptest.Reply {
		r := acptest.Reply{acptest.TextDelta("")}
		for i := range n {
			st := acptest.TextDelta(fmt.Sprintf("c%d| ", i))
			st.Sleep = time.Millisecond
			st.Sent = func(t time.Time) { mu.Lock(); sent[i] = t; mu.Unlock() }
			r = append(r, st)
		}
		return append(r, acptest.Finish("stop"))
	}
	model := acptest.New()
	model.SetDefault(func(map[string]any) acptest.Reply { return reply() })
	defer model.Close()
	sw := &stampWriter{stamp: map[int]time.Time{}}
	h := &harness{t: b, model: model, home: b.TempDir(), dir: b.TempDir(), client: newClient(),
		wrapOut: func(w io.Writer) io.Writer { sw.w = w; return sw }}
	h.start()
	defer h.close()
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	var lat []time.Duration
	for b.Loop() {
		mu.Lock()
		clear(sent)
		mu.Unlock()
		sw.mu.Lock()
		clear(sw.stamp)
		sw.mu.Unlock()
		h.mustPrompt(id, "stream", sdk.StopReasonEndTurn)
		mu.Lock()
		sw.mu.Lock()
		for i := range n {
			if s, ok := sent[i]; ok {
				if w, ok := sw.stamp[i]; ok {
					lat = append(lat, w.Sub(s))
				}
			}
		}
		sw.mu.Unlock()
		mu.Unlock()
		h.client.reset(id)
	}
	percentiles(b, "µs", lat, float64(time.Microsecond))
}

// BenchmarkIdleSessionMemory opens 100 sessions, each after one short
// turn, and reports the live heap they hold, per session.
func BenchmarkIdleSessionMemory(b *testing.B) {
	const sessions = 100
	model := acptest.New()
	model.SetDefault(func(map[string]any) acptest.Reply { return acptest.Text("ok, ", "done") })
	defer model.Close()
	var perSession, fresh []float64
	for b.Loop() {
		h := newHarness(b, model)
		h.initialize(sdk.ClientCapabilities{})
		warm := h.newSession() // builds the workspace's app
		h.mustPrompt(warm, "warm up", sdk.StopReasonEndTurn)
		before := heap()
		var ids []sdk.SessionId
		for range sessions {
			ids = append(ids, h.newSession())
		}
		opened := heap()
		for _, id := range ids {
			h.mustPrompt(id, "hello", sdk.StopReasonEndTurn)
			h.client.reset(id)
		}
		after := heap()
		fresh = append(fresh, float64(opened-before)/sessions)
		perSession = append(perSession, float64(after-before)/sessions)
		h.close()
	}
	b.ReportMetric(slices.Max(fresh)/1024, "KiB/new-session")
	b.ReportMetric(slices.Max(perSession)/1024, "KiB/idle-session")
}

func heap() uint64 {
	var m runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// BenchmarkIdleSessionRSS is the same measure on a real `dsh acp` process:
// its resident set before and after opening 100 sessions (each after one
// short turn), per session.
func BenchmarkIdleSessionRSS(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc")
	}
	const sessions = 100
	model := acptest.New()
	model.SetDefault(func(map[string]any) acptest.Reply { return acptest.Text("ok, ", "done") })
	defer model.Close()
	var per []float64
	for b.Loop() {
		e := newE2E(b, model)
		r := e.raw()
		id := 1
		call := func(method, params string) map[string]any {
			id++
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
			m := r.response(id)
			if m["error"] != nil {
				b.Fatalf("%s: %v", method, m["error"])
			}
			return m
		}
		open := func() {
			m := call("session/new", fmt.Sprintf(`{"cwd":%q,"mcpServers":[]}`, e.dir))
			sid := m["result"].(map[string]any)["sessionId"].(string)
			call("session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"hello"}]}`, sid))
		}
		r.send(initFrame)
		r.response(1)
		open()
		before := rss(b, r.cmd.Process.Pid)
		for range sessions {
			open()
		}
		after := rss(b, r.cmd.Process.Pid)
		per = append(per, float64(after-before)/sessions)
		r.close()
	}
	b.ReportMetric(slices.Max(per)/1024, "KiB/idle-session")
}

func rss(b *testing.B, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
