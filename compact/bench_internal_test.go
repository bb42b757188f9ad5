package compact

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

type bulky struct{ out string }

func (bulky) Info() tool.Info {
	return tool.Info{Name: "bulky", Parameters: []byte(`{"type":"object"}`)}
}
func (b bulky) Run(context.Context, tool.Call) (tool.Result, error) {
	return tool.TextResult(b.out), nil
}

// promptTokens is what a provider would report: about a quarter of the
// request's characters.
func promptTokens(r *llm.Request) int {
	n := len(r.System)
	var count func([]llm.Block)
	count = func(bs []llm.Block) {
		for _, b := range bs {
			n += len(b.Text) + len(b.Arguments)
			count(b.Content)
		}
	}
	for _, m := range r.Messages {
		count(m.Content)
	}
	return n / 4
}

// threadCPU is the calling thread's user+system CPU time.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCompactTurn runs one turn of 2,000 tool steps with 20 KB
// outputs through the real loop, a 128k window and automatic compaction,
// and reports the CPU compaction spends before the steps (the estimate,
// the prune passes and the summaries' bookkeeping, not the model's
// summarizing) per turn and per step, with how often a prune pass ran and
// how many tool/result events the session ended with.
func BenchmarkCompactTurn(b *testing.B) {
	const steps, output = 2000, 20 * 1024
	h, err := core.New(core.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(context.Background())
	summary := "## Goal\n- keep calling bulky\n## Decisions\n- (none)\n## Files touched\n- (none)\n## Errors and fixes\n- (none)\n## Open tasks\n- more calls\n## Next step\n- call bulky"
	var n atomic.Int64
	model := scripted.New(scripted.Entry{Fn: func(r *llm.Request) []llm.Chunk {
		usage := llm.Usage{InputTokens: promptTokens(r), OutputTokens: 20}
		if strings.Contains(r.System, "checkpoint that replaces it") {
			cs := scripted.TextChunks(summary, llm.FinishStop)
			return append(cs[:len(cs)-2], llm.UsageChunk(usage), llm.FinishChunk(llm.FinishStop))
		}
		id := llm.CallID("c" + string(rune('a'+n.Add(1)%26)))
		return []llm.Chunk{llm.StartChunk(0, llm.BlockToolCall), llm.ToolDeltaChunk(0, id, "bulky", "{}"),
			llm.EndChunk(0, llm.ToolCall(id, "bulky", "{}")), llm.UsageChunk(usage), llm.FinishChunk(llm.FinishToolCalls)}
	}})
	model.Loop, model.NoRecord = true, true
	if _, err := h.LLM.RegisterModels([]string{"mock"}, model); err != nil {
		b.Fatal(err)
	}
	if _, err := h.Tools.Register(bulky{out: strings.Repeat("a line of tool output, twenty kilobytes in all\n", output/47+1)[:output]}); err != nil {
		b.Fatal(err)
	}
	c := New(Config{ContextWindow: 128000}, h.LLM, h.Agents.Hub, nil)
	var cpu time.Duration
	passes, stepsSeen := 0, 0
	// c.Install's listener, timed: the thread is locked so its CPU clock
	// measures this call alone.
	if err := h.Scope.Add(h.Agents.Hub.PreStep.Use(func(ctx context.Context, ps agent.PreStep) error {
		stepsSeen++
		before := len(ps.Agent.Session().Events())
		runtime.LockOSThread()
		start := threadCPU()
		_, err := c.run(ctx, ps.Agent, ps.Turn, ps.Step, ps.SystemPrompt, "auto", "", false)
		cpu += threadCPU() - start
		runtime.UnlockOSThread()
		if len(ps.Agent.Session().Events()) > before {
			passes++
		}
		return err
	}, kernel.Named("compact-timed"))); err != nil {
		b.Fatal(err)
	}
	h.Agents.Hub.PreStep.Use(func(context.Context, agent.PreStep) error { return nil }) // keep the order stable
	var left atomic.Int64
	h.Agents.Hub.Continuation.Use(func(ctx context.Context, in agent.ContinuationInput, next func(context.Context, agent.ContinuationInput) (agent.ContinuationDecision, error)) (agent.ContinuationDecision, error) {
		if left.Add(-1) <= 0 {
			return agent.ContinuationDecision{}, nil
		}
		return next(ctx, in)
	})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		hd, err := h.Agents.Create(context.Background(), agent.CreateOptions{Options: agent.Options{Model: "mock", MaxSteps: steps + 10}})
		if err != nil {
			b.Fatal(err)
		}
		left.Store(steps)
		if err := hd.Agent.Send(context.Background(), []llm.Block{llm.Text("call bulky until told to stop")}, llm.Source{}); err != nil {
			b.Fatal(err)
		}
		if err := hd.Agent.WhenIdle(context.Background()); err != nil {
			b.Fatal(err)
		}
		results := 0
		for _, e := range hd.Agent.Session().Events() {
			if e.Type == session.TypeToolResult {
				results++
			}
		}
		b.ReportMetric(float64(results), "tool-results")
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "compact-cpu-ns/turn")
	b.ReportMetric(float64(cpu)/float64(stepsSeen), "compact-cpu-ns/step")
	b.ReportMetric(100*float64(passes)/float64(stepsSeen), "%steps-compacting")
}
