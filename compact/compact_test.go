package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/compact"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/session/invariants"
	"github.com/dshq/dsh/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeProvider answers like a real model would for the test: it reports
// prompt usage from the request's real size, calls the "big" tool on work
// requests, and summarizes on summarization requests.
type fakeProvider struct {
	mu        sync.Mutex
	sizes     []int // estimated prompt tokens of each work request
	summary   func() []llm.Chunk
	requests  int
	summaries int // summarization requests
}

func reqTokens(r *llm.Request) int {
	b, _ := json.Marshal(r.Messages)
	return len(b)/4 + len(r.System)/4
}

func (f *fakeProvider) entry() scripted.Entry {
	return scripted.Entry{Fn: func(r *llm.Request) []llm.Chunk {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.requests++
		usage := llm.Usage{InputTokens: reqTokens(r), OutputTokens: 20}
		if strings.Contains(r.System, "checkpoint that replaces it") {
			f.summaries++
			if f.summary != nil {
				return f.summary()
			}
			s := "## Goal\n- keep calling big\n## Decisions\n- (none)\n## Files touched\n- (none)\n## Errors and fixes\n- (none)\n## Open tasks\n- more calls\n## Next step\n- call big"
			return append(scripted.TextChunks(s, llm.FinishStop)[:len(scripted.TextChunks(s, llm.FinishStop))-2], llm.UsageChunk(usage), llm.FinishChunk(llm.FinishStop))
		}
		f.sizes = append(f.sizes, reqTokens(r))
		id := llm.CallID("c" + time.Now().Format("150405.000000000"))
		return []llm.Chunk{
			llm.StartChunk(0, llm.BlockToolCall),
			llm.ToolDeltaChunk(0, id, "big", "{}"),
			llm.EndChunk(0, llm.ToolCall(id, "big", "{}")),
			llm.UsageChunk(usage), llm.FinishChunk(llm.FinishToolCalls),
		}
	}}
}

type bigTool struct{}

func (bigTool) Info() tool.Info {
	return tool.Info{Name: "big", Parameters: []byte(`{"type":"object"}`)}
}
func (bigTool) Run(context.Context, tool.Call) (tool.Result, error) {
	return tool.TextResult(strings.Repeat("output line with some words in it\n", 240)), nil // ~8 KB
}

// compactHost is a host whose model "mock" is m, with a compactor of cfg
// installed; it closes when the test ends.
func compactHost(t *testing.T, m *scripted.Adapter, cfg compact.Config) (*core.Host, *compact.Compactor) {
	t.Helper()
	h, err := core.New(core.Options{Invariants: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	if _, err := h.LLM.RegisterModels([]string{"mock"}, m); err != nil {
		t.Fatal(err)
	}
	c := compact.New(cfg, h.LLM, h.Agents.Hub, nil)
	if err := c.Install(h.Scope); err != nil {
		t.Fatal(err)
	}
	return h, c
}

func setup(t *testing.T, cfg compact.Config, f *fakeProvider) (*core.Host, *compact.Compactor, agent.Agent) {
	t.Helper()
	m := scripted.New(f.entry())
	m.Loop, m.NoRecord = true, true
	h, c := compactHost(t, m, cfg)
	if _, err := h.Tools.Register(bigTool{}); err != nil {
		t.Fatal(err)
	}
	hd, err := h.Agents.Create(context.Background(), agent.CreateOptions{AgentID: "a", Options: agent.Options{Model: "mock", MaxSteps: 200}})
	if err != nil {
		t.Fatal(err)
	}
	return h, c, hd.Agent
}

func runTurn(t *testing.T, a agent.Agent, prompt string) {
	t.Helper()
	if err := a.Send(context.Background(), []llm.Block{llm.Text(prompt)}, llm.Source{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer cancel()
	if err := a.WhenIdle(ctx); err != nil {
		t.Fatal(err)
	}
}

// A 200-step session with large tool outputs stays under the window on
// every request, stays balanced, and replays to the same surface.
func TestLongSessionStaysUnderWindow(t *testing.T) {
	f := &fakeProvider{}
	const window = 30000
	_, _, a := setup(t, compact.Config{ContextWindow: window, Threshold: 0.7, RetainTokens: 6000, PruneAbove: 400}, f)
	runTurn(t, a, "call big 200 times")
	if len(f.sizes) != 200 {
		t.Fatalf("%d work requests", len(f.sizes))
	}
	for i, n := range f.sizes {
		if n >= window {
			t.Fatalf("request %d is %d tokens, over the %d window", i, n, window)
		}
	}
	events := a.Session().Events()
	if err := invariants.CheckLog(events); err != nil {
		t.Fatal(err)
	}
	var summaries, prunes int
	for _, e := range events {
		switch e.Type {
		case compact.TypeSummary:
			summaries++
		case compact.TypePrune:
			prunes++
		}
	}
	if summaries == 0 || prunes == 0 {
		t.Fatalf("summaries %d prunes %d", summaries, prunes)
	}
	msgs, _ := a.Session().Messages()
	if ok, err := balanced(a.Session()); !ok || err != nil {
		t.Fatalf("surface unbalanced: %v", err)
	}
	// The first user prompt stays verbatim at the head.
	if llm.TextOf(msgs[0].Content) != "call big 200 times" {
		t.Fatalf("head %q", llm.TextOf(msgs[0].Content))
	}
	re, err := session.New("replay", session.Options{Seed: events})
	if err != nil {
		t.Fatal(err)
	}
	again, err := re.Messages()
	if err != nil || !reflect.DeepEqual(norm(again), norm(msgs)) {
		t.Fatalf("replayed surface differs: %v", err)
	}
}

func balanced(s *session.Session) (bool, error) {
	surf, err := s.Surface()
	if err != nil {
		return false, err
	}
	return session.Balanced(s.Events(), surf, -1)
}

func norm(ms []llm.Message) string {
	b, _ := json.Marshal(ms)
	return string(b)
}

// A failing or oversize summary leaves the history untouched.
func TestFailedSummaryLeavesHistory(t *testing.T) {
	cases := map[string]func() []llm.Chunk{
		"truncated": func() []llm.Chunk { return scripted.TextChunks("## Goal\n- partial", llm.FinishMaxTokens) },
		"oversize": func() []llm.Chunk {
			return scripted.TextChunks(strings.Repeat("very long summary ", 4000), llm.FinishStop)
		},
		"error": func() []llm.Chunk { return []llm.Chunk{llm.ErrorFinish("overloaded", "SERVER")} },
	}
	for name, sum := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeProvider{summary: sum}
			_, c, a := setup(t, compact.Config{ContextWindow: 1_000_000, Manual: true, RetainTokens: 100, PruneAbove: 1 << 30}, f)
			// A few steps of history, then stop.
			a2 := a
			runTurnSteps(t, a2, 4)
			before, _ := a.Session().Messages()
			_, err := c.Compact(context.Background(), a, "")
			if err == nil {
				t.Fatal("want an error")
			}
			after, _ := a.Session().Messages()
			if norm(before) != norm(after) {
				t.Fatal("history changed after a failed compaction")
			}
			end, _ := a.Session().Last(compact.TypeEnd)
			if !strings.Contains(string(end.Data), `"error"`) {
				t.Fatalf("compact/end %s", end.Data)
			}
			if err := invariants.CheckLog(a.Session().Events()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A model that cannot summarize is not asked again before every step: after
// each failure in a row the automatic summary waits twice as many steps,
// and a summary that works ends the wait.
func TestFailedSummaryBacksOff(t *testing.T) {
	var works atomic.Bool
	f := &fakeProvider{summary: func() []llm.Chunk {
		if works.Load() {
			return scripted.TextChunks("## Goal\n- keep calling big\n## Next step\n- call big", llm.FinishStop)
		}
		return scripted.TextChunks("", llm.FinishStop) // no text: the summary fails
	}}
	// Each step adds ~2,000 tokens: over the threshold from about step 4,
	// under the window (which would force a summary) for the whole run.
	_, _, a := setup(t, compact.Config{ContextWindow: 1_000_000, Threshold: 0.008, RetainTokens: 1000, PruneAbove: 1 << 30}, f)
	runTurnSteps(t, a, 40)
	f.mu.Lock()
	failed := f.summaries
	f.mu.Unlock()
	var attempts, errs int
	for _, e := range a.Session().Events() {
		if e.Type == compact.TypeEnd {
			attempts++
			if strings.Contains(string(e.Data), "produced no text") {
				errs++
			}
		}
	}
	// 40 steps with ~36 over the threshold: retries after 1, 3, 7, 15 and
	// 31 skipped steps make at most 6 requests; one per step would be ~36.
	if failed < 2 || failed > 6 || errs != failed {
		t.Fatalf("%d summarization requests (%d failed compactions, %d compaction runs) in 40 steps; want 2-6", failed, errs, attempts)
	}
	// Once the model summarizes again, the wait ends after the next try.
	works.Store(true)
	runTurnSteps(t, a, 80)
	if s, ok := a.Session().Last(compact.TypeSummary); !ok || s.Seq == 0 {
		t.Fatal("no summary after the model recovered")
	}
}

func runTurnSteps(t *testing.T, a agent.Agent, steps int) {
	t.Helper()
	// MaxSteps is 200; a turn of "steps" steps is forced through a hub
	// continuation listener in the caller's host; simpler: send a prompt and
	// cancel after enough tool results.
	if err := a.Send(context.Background(), []llm.Block{llm.Text("work")}, llm.Source{}); err != nil {
		t.Fatal(err)
	}
	// A guard, not a timing: a loaded machine takes longer, and stopping
	// short would quietly test fewer steps than the caller asked for.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		n := 0
		for _, e := range a.Session().Events() {
			if e.Type == session.TypeToolResult {
				n++
			}
		}
		if n >= steps {
			break
		}
		if time.Now().After(deadline) {
			a.Cancel("too slow")
			t.Fatalf("only %d of %d tool results after 3 minutes", n, steps)
		}
		time.Sleep(time.Millisecond)
	}
	a.Cancel("enough")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.WhenIdle(ctx); err != nil {
		t.Fatal(err)
	}
}

// An on-demand compaction of an idle agent runs in its own turn and shrinks
// the history; replay reproduces the surface.
func TestManualCompact(t *testing.T) {
	f := &fakeProvider{}
	_, c, a := setup(t, compact.Config{ContextWindow: 1_000_000, Manual: true, RetainTokens: 100, PruneAbove: 1 << 30}, f)
	runTurnSteps(t, a, 5)
	before, _ := compact.Estimate(a.Session(), "")
	out, err := c.Compact(context.Background(), a, "the big tool")
	if err != nil {
		t.Fatal(err)
	}
	if out.After >= before {
		t.Fatalf("before %d after %d", before, out.After)
	}
	// The outcome names the span the summary replaced.
	sum, ok := a.Session().Last(compact.TypeSummary)
	if !ok {
		t.Fatal("no summary event")
	}
	rec, _ := session.Decode[compact.Summary](sum)
	if !out.Summarized || out.Shadowed != rec.ShadowedRange || out.Shadowed.End <= out.Shadowed.Start {
		t.Fatalf("outcome %+v, summary replaced %+v", out, rec.ShadowedRange)
	}
	msgs, _ := a.Session().Messages()
	if !strings.Contains(llm.TextOf(msgs[1].Content), "<compacted-summary>") {
		t.Fatalf("checkpoint missing: %s", norm(msgs[:2]))
	}
	if err := invariants.CheckLog(a.Session().Events()); err != nil {
		t.Fatal(err)
	}
	ts, _ := a.Session().Last(session.TypeTurnStart)
	if !strings.Contains(string(ts.Data), `"compact"`) {
		t.Fatalf("compaction turn %s", ts.Data)
	}
}

// /compact works on a short session: ten turns of about 18k tokens in all,
// far under the default retained quarter of a 128k window, are summarized
// down to the latest part (it used to refuse with "nothing old enough to
// summarize"); the newest prompt stays verbatim. A session of one turn
// still has nothing to summarize.
func TestManualCompactShortSession(t *testing.T) {
	answer := strings.Repeat("a paragraph of the answer with several words in it. ", 140) // ~1,800 tokens
	var summaries atomic.Int32
	m := scripted.New(scripted.Entry{Fn: func(r *llm.Request) []llm.Chunk {
		if strings.Contains(r.System, "checkpoint that replaces it") {
			summaries.Add(1)
			return scripted.TextChunks("## Goal\n- answer the questions\n## Next step\n- wait for the user", llm.FinishStop)
		}
		// Usage as a provider reports it: the prompt's size, the answer's.
		return []llm.Chunk{llm.StartChunk(0, llm.BlockText), llm.TextChunk(0, answer), llm.EndChunk(0, llm.Text(answer)),
			llm.UsageChunk(llm.Usage{InputTokens: reqTokens(r), OutputTokens: len(answer) / 4}), llm.FinishChunk(llm.FinishStop)}
	}})
	m.Loop, m.NoRecord = true, true
	h, c := compactHost(t, m, compact.Config{ContextWindow: 128_000, Manual: true})
	create := func(id agent.ID) agent.Agent {
		hd, err := h.Agents.Create(context.Background(), agent.CreateOptions{AgentID: id, Options: agent.Options{Model: "mock"}})
		if err != nil {
			t.Fatal(err)
		}
		return hd.Agent
	}

	one := create("one")
	runTurn(t, one, "the only question")
	if _, err := c.Compact(context.Background(), one, ""); err == nil || !strings.Contains(err.Error(), "nothing old enough") {
		t.Fatalf("a one-turn session compacted: %v", err)
	}

	a := create("ten")
	for i := range 10 {
		runTurn(t, a, fmt.Sprintf("question %d", i))
	}
	before, _ := compact.Estimate(a.Session(), "")
	if before < 15_000 || before > 22_000 {
		t.Fatalf("the session is %d tokens; the test wants about 18k", before)
	}
	out, err := c.Compact(context.Background(), a, "")
	if err != nil {
		t.Fatal(err)
	}
	if !out.Summarized || out.After > before/2 || summaries.Load() != 1 {
		t.Fatalf("outcome %+v from %d tokens, %d summaries", out, before, summaries.Load())
	}
	msgs, _ := a.Session().Messages()
	// The retained tail starts with a prompt: no answer without its question.
	if len(msgs) < 4 || msgs[2].Role != llm.RoleUser {
		t.Fatalf("history after compaction: %.600s", norm(msgs))
	}
	all := norm(msgs)
	if !strings.Contains(all, "compacted-summary") || !strings.Contains(all, "question 9") || strings.Contains(all, "question 3") {
		t.Fatalf("history after compaction:\n%s", all)
	}
	if err := invariants.CheckLog(a.Session().Events()); err != nil {
		t.Fatal(err)
	}
}

// A provider that refuses a step's request as too long for the context
// window (whatever the estimate said) gets one compaction and the same
// step asked again: the turn completes with the answer to the retry. A
// provider that refuses again ends the turn with its refusal after that
// one compaction, and manual compaction leaves the refusal to the user.
func TestOverflowCompactsOnceAndRetries(t *testing.T) {
	answer := strings.Repeat("a paragraph of the answer with several words in it. ", 140)
	text := func(s string) scripted.Entry {
		return scripted.Entry{Chunks: []llm.Chunk{llm.StartChunk(0, llm.BlockText), llm.TextChunk(0, s), llm.EndChunk(0, llm.Text(s)),
			llm.UsageChunk(llm.Usage{InputTokens: 100, OutputTokens: len(s) / 4}), llm.FinishChunk(llm.FinishStop)}}
	}
	refuse := scripted.Entry{Err: &llm.Error{Name: "LlmError", Code: llm.CodeContextTooLong, Message: "prompt is too long: 140000 tokens > 128000 maximum"}}
	summary := text("## Goal\n- answer the questions\n## Next step\n- answer the last one")
	cases := map[string]struct {
		manual      bool
		after       []scripted.Entry // the script after three answered turns
		compactions int
		end         string // the last turn's end reason
	}{
		"retried":        {after: []scripted.Entry{refuse, summary, text("the answer after compaction")}, compactions: 1, end: session.EndCompleted},
		"refused again":  {after: []scripted.Entry{refuse, summary, refuse}, compactions: 1, end: session.EndError},
		"manual refused": {manual: true, after: []scripted.Entry{refuse}, compactions: 0, end: session.EndError},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			script := []scripted.Entry{text(answer), text(answer), text(answer)}
			m := scripted.New(append(script, tc.after...)...)
			m.NoRecord = true
			h, _ := compactHost(t, m, compact.Config{ContextWindow: 128_000, Manual: tc.manual})
			hd, err := h.Agents.Create(context.Background(), agent.CreateOptions{AgentID: "a", Options: agent.Options{Model: "mock"}})
			if err != nil {
				t.Fatal(err)
			}
			a := hd.Agent
			for i := range 4 {
				runTurn(t, a, fmt.Sprintf("question %d", i))
			}
			s := a.Session()
			end, _ := s.Last(session.TypeTurnEnd)
			te, _ := session.Decode[session.TurnEnd](end)
			starts := 0
			for _, e := range s.Events() {
				if e.Type == compact.TypeStart {
					starts++
				}
			}
			if te.Reason.Kind != tc.end || starts != tc.compactions {
				t.Fatalf("turn ended %+v after %d compactions; want %s after %d", te.Reason, starts, tc.end, tc.compactions)
			}
			if tc.end == session.EndError && te.Reason.Code != llm.CodeContextTooLong {
				t.Fatalf("the refusal is not the turn's error: %+v", te.Reason)
			}
			msgs, _ := s.Messages()
			last := llm.TextOf(msgs[len(msgs)-1].Content)
			if tc.end == session.EndCompleted && (last != "the answer after compaction" || !strings.Contains(norm(msgs), "compacted-summary")) {
				t.Fatalf("history after the retry: %.400s … %q", norm(msgs), last)
			}
			if err := invariants.CheckLog(s.Events()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
