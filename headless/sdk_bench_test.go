package headless_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/dshq/dsh/internal/fakeanthropic"
)

// BenchmarkAgentSDKQuery times the Claude Agent SDK's query() end to end
// (spawn, initialize, the turn, exit) for a task of 0 and of 5 tool steps,
// with dsh as the executable and with the Claude Code binary the SDK
// bundles, both on the same fake Anthropic API on loopback. Each b.N is
// one query; ms/query is the median, min-ms the fastest.
func BenchmarkAgentSDKQuery(b *testing.B) {
	bundled := filepath.Join("..", "node_modules", "@anthropic-ai", "claude-agent-sdk-linux-x64", "claude")
	for _, steps := range []int{0, 5} {
		for _, exe := range []string{"dsh", "claude-code"} {
			b.Run(fmt.Sprintf("%s/steps=%d", exe, steps), func(b *testing.B) {
				path := dshBinOrSkip(b)
				if exe == "claude-code" {
					if _, err := os.Stat(bundled); err != nil {
						b.Skip("the SDK's bundled Claude Code binary is not installed")
					}
					path = "bundled"
				}
				e := benchEnv(b, steps)
				b.ResetTimer()
				rep := e.Node("testdata/bench.mjs", "@anthropic-ai/claude-agent-sdk", []string{path, fmt.Sprint(b.N), "read notes.txt and tell me what it says"})
				b.StopTimer()
				// The task really ran: the reads and the answer.
				first, _ := rep["first"].(map[string]any)
				reads := 0
				for _, req := range e.model.Requests() {
					reads = max(reads, len(req.ToolResults()))
				}
				if first["result"] != "It says hello world." || reads != steps {
					b.Fatalf("the query did not do the task: %v, %d reads (want %d)", first, reads, steps)
				}
				var ms []float64
				for _, v := range rep["ms"].([]any) {
					ms = append(ms, v.(float64))
				}
				sort.Float64s(ms)
				b.ReportMetric(ms[len(ms)/2], "ms/query")
				b.ReportMetric(ms[0], "min-ms")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

func dshBinOrSkip(b *testing.B) string {
	if _, err := os.Stat(dshBinPath()); err != nil {
		b.Skip("no dsh binary")
	}
	return dshBinPath()
}

// benchEnv is a dsh environment whose model reads notes.txt steps times,
// then answers; requests without a read tool (helper calls) get a plain
// answer.
func benchEnv(b *testing.B, steps int) *env {
	e := newBenchEnv(b, nil)
	e.model.SetReply(func(req fakeanthropic.Request) fakeanthropic.Reply {
		name, ok := req.HasTool("read", "Read")
		if !ok {
			return fakeanthropic.Reply{Text: "ok"}
		}
		if n := len(req.ToolResults()); n < steps {
			return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: fmt.Sprintf("toolu_%d_%d", time.Now().UnixNano(), n), Name: name,
				Input: map[string]string{"file_path": filepath.Join(e.dir, "notes.txt")}}}}
		}
		return fakeanthropic.Reply{Text: "It says hello world."}
	})
	if err := os.WriteFile(filepath.Join(e.dir, "notes.txt"), []byte("hello world\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	return e
}
