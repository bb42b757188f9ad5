package openai

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/dshq/dsh/internal/wiretest"
	"github.com/dshq/dsh/llm"
)

// BenchmarkRequestBody builds the request of the next step of a session
// whose history holds depth tool steps of 1 KB outputs: "whole" marshals
// the whole request (the encoder before the wire cache), "cached" is
// RequestBody. Each op adds one step to the history first, as an agent does.
func BenchmarkRequestBody(b *testing.B) {
	for _, depth := range []int{10, 200, 2000} {
		for _, mode := range []string{"whole", "cached"} {
			b.Run(fmt.Sprintf("depth=%d/%s", depth, mode), func(b *testing.B) {
				a, err := New(DeepSeek().Config)
				if err != nil {
					b.Fatal(err)
				}
				base := wiretest.Steps(depth, 1024)
				build := a.RequestBody
				if mode == "whole" {
					build = a.wholeBody
				}
				req := &llm.Request{Model: "deepseek/deepseek-chat", System: "You are a coding agent.", SessionID: "s",
					Tools: []llm.ToolSchema{{Name: "read", Description: "Read a file", Parameters: []byte(`{"type":"object"}`)}}}
				req.Messages = base
				if _, err := build(req); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu := cpuTime()
				for i := 0; b.Loop(); i++ {
					b.StopTimer()
					// Keep the depth constant: drop the oldest step, add one.
					msgs := append(append([]llm.Message{base[0]}, base[3:]...), wiretest.Step(depth+i, 1024)...)
					base = msgs
					req.Messages = msgs
					b.StartTimer()
					if _, err := build(req); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// cpuTime is the process's user+system CPU time: per op beside wall time,
// it stays meaningful on a machine busy with other work.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
