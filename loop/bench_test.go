package loop_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/tool"
)

// stepChunks is one benchmark step: 20 text deltas and one tool call.
func stepChunks() []llm.Chunk {
	out := []llm.Chunk{llm.StartChunk(0, llm.BlockText)}
	var sb strings.Builder
	for i := range 20 {
		s := fmt.Sprintf("word%02d ", i)
		sb.WriteString(s)
		out = append(out, llm.TextChunk(0, s))
	}
	out = append(out, llm.EndChunk(0, llm.Text(sb.String())))
	return append(out,
		llm.StartChunk(1, llm.BlockToolCall),
		llm.ToolDeltaChunk(1, "call", "noop", "{"),
		llm.ToolDeltaChunk(1, "call", "", "}"),
		llm.EndChunk(1, llm.ToolCall("call", "noop", "{}")),
		llm.UsageChunk(llm.Usage{InputTokens: 100, OutputTokens: 30}),
		llm.FinishChunk(llm.FinishToolCalls))
}

type noop struct{}

func (noop) Info() tool.Info {
	return tool.Info{Name: "noop", Description: "does nothing", Parameters: []byte(`{"type":"object"}`)}
}
func (noop) Run(context.Context, tool.Call) (tool.Result, error) { return tool.TextResult("ok"), nil }

// benchAgent returns an agent whose model streams one benchmark step per
// call, forever, and a function that runs n more steps in one turn.
func benchAgent(b *testing.B) (agent.Agent, func(n int)) {
	h, err := core.New(core.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close(context.Background()) })
	model := scripted.New(scripted.Entry{Chunks: stepChunks()})
	model.Loop, model.NoRecord = true, true
	if _, err := h.LLM.RegisterModels([]string{"mock"}, model); err != nil {
		b.Fatal(err)
	}
	if _, err := h.Tools.Register(noop{}); err != nil {
		b.Fatal(err)
	}
	var left atomic.Int64
	h.Agents.Hub.Continuation.Use(func(ctx context.Context, in agent.ContinuationInput, next func(context.Context, agent.ContinuationInput) (agent.ContinuationDecision, error)) (agent.ContinuationDecision, error) {
		if left.Add(-1) <= 0 {
			return agent.ContinuationDecision{}, nil
		}
		return next(ctx, in)
	})
	hd, err := h.Agents.Create(context.Background(), agent.CreateOptions{AgentID: "bench", Options: agent.Options{Model: "mock"}})
	if err != nil {
		b.Fatal(err)
	}
	a := hd.Agent
	return a, func(n int) {
		left.Store(int64(n))
		if err := a.Send(context.Background(), []llm.Block{llm.Text("go")}, llm.Source{}); err != nil {
			b.Fatal(err)
		}
		if err := a.WhenIdle(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStep measures one loop step: a zero-latency model streaming 20
// text chunks and one tool call, the no-op tool, in-memory session.
func BenchmarkStep(b *testing.B) {
	_, run := benchAgent(b)
	run(5) // warm up
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	run(b.N)
	reportCPU(b, cpu)
}

// cpuTime is the process's user+system CPU time. Reported per op beside
// wall time, it stays meaningful on a machine busy with other work.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkStepAtDepth shows a step costs the same deep into a session.
func BenchmarkStepAtDepth(b *testing.B) {
	for _, depth := range []int{10, 2000} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			a, run := benchAgent(b)
			run(depth)
			_ = a
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			run(b.N)
			reportCPU(b, cpu)
		})
	}
}
