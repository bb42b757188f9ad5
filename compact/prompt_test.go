package compact_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/compact"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
)

// hasBlock reports whether a request carries a text block that is exactly s.
func hasBlock(r *llm.Request, s string) bool {
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.Type == llm.BlockText && b.Text == s {
				return true
			}
		}
	}
	return false
}

// TestCompactionKeepsActivePrompt: a long second turn is compacted several
// times while it runs; every request after a compaction still carries that
// turn's prompt, and the steering the user sent during it, verbatim, so the
// model keeps its current task (only the session's first prompt used to
// stay). The first turn's prompt stays too (head anchoring).
func TestCompactionKeepsActivePrompt(t *testing.T) {
	const (
		first  = "Set up the project: create go.mod for example.com/demo."
		active = "Now rename every Foo to Bar in pkg/ and keep the tests green. Do not touch vendor/."
		steer  = "Also update the README's examples."
		steps  = 150
	)
	h, err := core.New(core.Options{Invariants: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	var (
		mu        sync.Mutex
		work      []*llm.Request // work requests of turn 2
		summaries []int          // len(work) when each summary was asked for
		ag        agent.Agent
	)
	model := scripted.New(scripted.Entry{Fn: func(r *llm.Request) []llm.Chunk {
		mu.Lock()
		defer mu.Unlock()
		usage := llm.Usage{InputTokens: reqTokens(r), OutputTokens: 20}
		if strings.Contains(r.System, "checkpoint that replaces it") {
			summaries = append(summaries, len(work))
			s := "## Goal\n- rename things\n## Decisions\n- (none)\n## Files touched\n- pkg/a.go\n## Errors and fixes\n- (none)\n## Open tasks\n- more renames\n## Next step\n- call big"
			cs := scripted.TextChunks(s, llm.FinishStop)
			return append(cs[:len(cs)-2], llm.UsageChunk(usage), llm.FinishChunk(llm.FinishStop))
		}
		if !hasBlock(r, active) && len(work) == 0 {
			cs := scripted.TextChunks("go.mod created.", llm.FinishStop)
			return append(cs[:len(cs)-2], llm.UsageChunk(usage), llm.FinishChunk(llm.FinishStop))
		}
		work = append(work, r)
		if len(work) == 3 {
			if err := ag.Steer(context.Background(), []llm.Block{llm.Text(steer)}, llm.Source{}); err != nil {
				t.Errorf("steer: %v", err)
			}
		}
		if len(work) > steps {
			cs := scripted.TextChunks("All renamed.", llm.FinishStop)
			return append(cs[:len(cs)-2], llm.UsageChunk(usage), llm.FinishChunk(llm.FinishStop))
		}
		id := llm.CallID(fmt.Sprint("call-", len(work)))
		return []llm.Chunk{llm.StartChunk(0, llm.BlockToolCall), llm.ToolDeltaChunk(0, id, "big", "{}"),
			llm.EndChunk(0, llm.ToolCall(id, "big", "{}")), llm.UsageChunk(usage), llm.FinishChunk(llm.FinishToolCalls)}
	}})
	model.Loop, model.NoRecord = true, true
	if _, err := h.LLM.RegisterModels([]string{"mock"}, model); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Tools.Register(bigTool{}); err != nil {
		t.Fatal(err)
	}
	c := compact.New(compact.Config{ContextWindow: 30000, Threshold: 0.7, RetainTokens: 6000, PruneAbove: 400}, h.LLM, h.Agents.Hub, nil)
	if err := c.Install(h.Scope); err != nil {
		t.Fatal(err)
	}
	hd, err := h.Agents.Create(context.Background(), agent.CreateOptions{AgentID: "a", Options: agent.Options{Model: "mock", MaxSteps: steps + 10}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	ag = hd.Agent
	mu.Unlock()
	runTurn(t, ag, first)
	runTurn(t, ag, active)

	mu.Lock()
	defer mu.Unlock()
	if len(summaries) < 2 {
		t.Fatalf("%d summaries during the turn; the test needs at least two (the second summarizes the first checkpoint)", len(summaries))
	}
	checked := 0
	for i, r := range work {
		if i < summaries[0] {
			continue
		}
		checked++
		if !hasBlock(r, active) {
			t.Fatalf("work request %d (after the summary at request %d) lost the active prompt verbatim", i, summaries[0])
		}
		if i >= 3 && !hasBlock(r, steer) {
			t.Fatalf("work request %d lost the user's steering verbatim", i)
		}
		if !hasBlock(r, first) {
			t.Fatalf("work request %d lost the session's first prompt", i)
		}
	}
	if checked == 0 {
		t.Fatal("no work request after a compaction")
	}
}
