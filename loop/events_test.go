package loop_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// collect ranges over an agent iterator and gathers what an embedder reads.
type collected struct {
	types     []string
	text      strings.Builder
	reasoning strings.Builder
	calls     []session.ToolCall
	results   []session.ToolResult
	ends      []agent.TurnResult
	err       error
}

func collect(seq func(func(agent.Event, error) bool)) *collected {
	c := &collected{}
	for ev, err := range seq {
		if err != nil {
			c.err = err
			break
		}
		c.types = append(c.types, ev.Type)
		if s, ok := ev.TextDelta(); ok {
			c.text.WriteString(s)
		}
		if s, ok := ev.ReasoningDelta(); ok {
			c.reasoning.WriteString(s)
		}
		if tc, ok := ev.ToolCall(); ok {
			c.calls = append(c.calls, tc)
		}
		if r, ok := ev.ToolResult(); ok {
			c.results = append(c.results, r)
		}
		if e, ok := ev.TurnEnd(); ok {
			c.ends = append(c.ends, e)
		}
	}
	return c
}

func withTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Prompt sends text and yields exactly its turn: streamed text and
// reasoning, tool calls with the effective (rewritten) arguments, results,
// and a turn end whose usage adds up every step.
func TestPromptStreamsItsTurn(t *testing.T) {
	reasoning := []llm.Chunk{llm.StartChunk(0, llm.BlockReasoning), llm.ReasoningChunk(0, "think "), llm.ReasoningChunk(0, "hard"),
		llm.EndChunk(0, llm.Reasoning("think hard"))}
	hs := newHarness(t,
		scripted.Entry{Chunks: append(reasoning, llm.StartChunk(1, llm.BlockToolCall), llm.ToolDeltaChunk(1, "c1", "echo", `{"text":"hi"}`),
			llm.EndChunk(1, llm.ToolCall("c1", "echo", `{"text":"hi"}`)), llm.UsageChunk(llm.Usage{InputTokens: 10, OutputTokens: 5}),
			llm.FinishChunk(llm.FinishToolCalls))},
		scripted.Text("All done."))
	register(t, hs, echoTool())
	hs.h.Tools.PreExecute.Use(func(ctx context.Context, c tool.Call, next kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
		return tool.Decision{Kind: tool.Allow, Args: []byte(`{"text":"HI"}`), By: "shout"}, nil
	})
	a := hs.agent(agent.Options{})
	c := collect(a.Prompt(withTimeout(t), "say hi"))
	if c.err != nil {
		t.Fatal(c.err)
	}
	if c.types[0] != session.TypeTurnStart || c.types[len(c.types)-1] != session.TypeTurnEnd {
		t.Fatalf("not one whole turn: %v", c.types)
	}
	if c.text.String() != "All done." || c.reasoning.String() != "think hard" {
		t.Fatalf("text %q reasoning %q: %v %+v", c.text.String(), c.reasoning.String(), types(a.Session().Events()), toolResults(t, a.Session()))
	}
	if len(c.calls) != 1 || c.calls[0].Name != "echo" || c.calls[0].Arguments != `{"text":"HI"}` ||
		c.calls[0].OriginalArguments == nil || *c.calls[0].OriginalArguments != `{"text":"hi"}` || c.calls[0].RewrittenBy != "shout" {
		t.Fatalf("tool calls %+v", c.calls)
	}
	if len(c.results) != 1 || llm.TextOf(c.results[0].Content) != "echo: HI" || c.results[0].CallID != "c1" {
		t.Fatalf("results %+v", c.results)
	}
	want := agent.TurnResult{Turn: 1, Reason: session.EndReason{Kind: session.EndCompleted}, Steps: 2,
		Usage: llm.Usage{InputTokens: 20, OutputTokens: 5 + len("All done.")}, Text: "All done."}
	if len(c.ends) != 1 || c.ends[0] != want {
		t.Fatalf("turn end %+v, want %+v", c.ends, want)
	}
	if got := len(a.Session().Events()); got != len(c.types) {
		t.Fatalf("yielded %d events of a log of %d", len(c.types), got)
	}
}

// A Prompt sent while another turn runs yields only its own turn, and
// Events started while idle follows the next turn whoever started it.
func TestPromptAndEventsFollowTheirTurn(t *testing.T) {
	release := make(chan struct{})
	hs := newHarness(t, scripted.Call("c1", "wait", map[string]any{}, ""), scripted.Text("first"), scripted.Text("second"))
	started := make(chan struct{})
	register(t, hs, funcTool{info: tool.Info{Name: "wait"}, fn: func(ctx context.Context, _ tool.Call) (tool.Result, error) {
		close(started)
		<-release
		return tool.TextResult("waited"), nil
	}})
	a := hs.agent(agent.Options{})
	ctx := withTimeout(t)
	watched := make(chan *collected)
	go func() { watched <- collect(a.Events(ctx)) }()
	send(t, a, "first")
	<-started
	mid := make(chan *collected)
	midSeq := a.Session().Len()
	go func() { mid <- collect(a.Events(ctx)) }()
	second := make(chan *collected)
	go func() { second <- collect(a.Prompt(ctx, "second")) }()
	waitFor(t, func() bool { return hs.queuedCount() == 2 })
	close(release)
	c2 := <-second
	if c2.err != nil || c2.text.String() != "second" || len(c2.ends) != 1 || c2.ends[0].Turn != 2 {
		t.Fatalf("second prompt: err %v text %q ends %+v", c2.err, c2.text.String(), c2.ends)
	}
	if c2.types[0] != session.TypeTurnStart {
		t.Fatalf("second prompt began mid-log: %v", c2.types)
	}
	if c := <-mid; c.err != nil || len(c.ends) != 1 || c.ends[0].Turn != 1 || c.ends[0].Steps != 2 || slices.Contains(c.types, session.TypeTurnStart) {
		t.Fatalf("watcher started mid-turn (at seq %d): err %v ends %+v types %v", midSeq, c.err, c.ends, c.types)
	}
	c1 := <-watched
	if c1.err != nil || c1.text.String() != "first" || len(c1.ends) != 1 || c1.ends[0].Turn != 1 || len(c1.results) != 1 {
		t.Fatalf("watcher: err %v text %q ends %+v", c1.err, c1.text.String(), c1.ends)
	}
}

// queuedCount is how many prompts agent/queued announced.
func (hs *harness) queuedCount() int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.queuedN
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(time.Millisecond)
	}
}

// A Prompt whose context ends while it is queued is withdrawn (the other
// queued prompt still runs); one whose context ends while its turn runs
// cancels that turn. Both iterations end with the context's error.
func TestPromptContextEnds(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	hs := newHarness(t, scripted.Call("c1", "wait", map[string]any{}, ""), scripted.Text("one"), scripted.Text("three"))
	register(t, hs, funcTool{info: tool.Info{Name: "wait"}, fn: func(ctx context.Context, _ tool.Call) (tool.Result, error) {
		started <- struct{}{}
		<-release
		return tool.TextResult("waited"), nil
	}}, funcTool{info: tool.Info{Name: "hold"}, fn: func(ctx context.Context, _ tool.Call) (tool.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		return tool.TextResult("stopped"), nil
	}})
	a := hs.agent(agent.Options{})
	send(t, a, "one")
	<-started
	ctx2, cancel2 := context.WithCancel(context.Background())
	got2 := make(chan *collected)
	go func() { got2 <- collect(a.Prompt(ctx2, "two")) }()
	waitFor(t, func() bool { return hs.queuedCount() == 2 })
	cancel2()
	if c := <-got2; !errors.Is(c.err, context.Canceled) || len(c.types) != 0 {
		t.Fatalf("withdrawn prompt: %v after %v", c.err, c.types)
	}
	send(t, a, "three")
	close(release)
	idle(t, a)
	var prompts []string
	for _, e := range ofType(a.Session(), session.TypeUserMessage) {
		prompts = append(prompts, llm.TextOf(mustDecode[session.Prompt](t, e).Content))
	}
	if strings.Join(prompts, ",") != "one,three" {
		t.Fatalf("prompts that ran: %v", prompts)
	}

	hs.model.Push(scripted.Call("c2", "hold", map[string]any{}, ""))
	ctx4, cancel4 := context.WithCancel(context.Background())
	got4 := make(chan *collected)
	go func() { got4 <- collect(a.Prompt(ctx4, "four")) }()
	<-started
	cancel4()
	if c := <-got4; !errors.Is(c.err, context.Canceled) || c.types[0] != session.TypeTurnStart {
		t.Fatalf("running prompt: %v after %v", c.err, c.types)
	}
	idle(t, a)
	if r := lastEnd(t, a.Session()); r.Kind != session.EndAborted {
		t.Fatalf("the abandoned prompt's turn ended %+v", r)
	}
}

// A Prompt dropped by Cancel ends with ErrWithdrawn; one still queued when
// the agent is disposed ends with ErrDisposed, and one whose turn runs
// during disposal ends with that turn's turn/end (disposed).
func TestPromptWithdrawnAndDisposed(t *testing.T) {
	started := make(chan struct{}, 1)
	hs := newHarness(t, scripted.Call("c1", "wait", map[string]any{}, ""), scripted.Call("c2", "wait", map[string]any{}, ""))
	register(t, hs, funcTool{info: tool.Info{Name: "wait"}, fn: func(ctx context.Context, _ tool.Call) (tool.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		return tool.TextResult("stopped"), nil
	}})
	hd, err := hs.h.Agents.Create(context.Background(), agent.CreateOptions{AgentID: "a1", Options: agent.Options{Model: "mock"}})
	if err != nil {
		t.Fatal(err)
	}
	a := hd.Agent
	ctx := withTimeout(t)
	running := make(chan *collected)
	go func() { running <- collect(a.Prompt(ctx, "one")) }()
	<-started
	queued := make(chan *collected)
	go func() { queued <- collect(a.Prompt(ctx, "two")) }()
	waitFor(t, func() bool { return hs.queuedCount() == 2 })
	a.Cancel("stop")
	if c := <-queued; !errors.Is(c.err, agent.ErrWithdrawn) {
		t.Fatalf("cancelled prompt: %v", c.err)
	}
	if c := <-running; c.err != nil || len(c.ends) != 1 || c.ends[0].Reason.Kind != session.EndAborted {
		t.Fatalf("cancelled turn: %v %+v", c.err, c.ends)
	}

	go func() { running <- collect(a.Prompt(ctx, "three")) }()
	<-started
	go func() { queued <- collect(a.Prompt(ctx, "four")) }()
	waitFor(t, func() bool { return hs.queuedCount() == 4 })
	if err := hd.Dispose(ctx); err != nil {
		t.Fatal(err)
	}
	if c := <-running; c.err != nil || len(c.ends) != 1 || c.ends[0].Reason.Kind != session.EndDisposed {
		t.Fatalf("turn during disposal: %v %+v", c.err, c.ends)
	}
	if c := <-queued; !errors.Is(c.err, agent.ErrDisposed) {
		t.Fatalf("prompt queued at disposal: %v", c.err)
	}
	if c := collect(a.Prompt(ctx, "five")); !errors.Is(c.err, agent.ErrDisposed) {
		t.Fatalf("prompt to a disposed agent: %v", c.err)
	}
	if c := collect(a.Events(ctx)); !errors.Is(c.err, agent.ErrDisposed) {
		t.Fatalf("events of a disposed agent: %v", c.err)
	}
}

// Breaking out of a Prompt loop only stops watching: the turn completes.
func TestPromptBreakKeepsTheTurn(t *testing.T) {
	hs := newHarness(t, scripted.Call("c1", "echo", map[string]string{"text": "x"}, ""), scripted.Text("done"))
	register(t, hs, echoTool())
	a := hs.agent(agent.Options{})
	for ev, err := range a.Prompt(withTimeout(t), "go") {
		if err != nil || ev.Type == session.TypeAssistantChunk {
			break
		}
	}
	idle(t, a)
	if r := lastEnd(t, a.Session()); r.Kind != session.EndCompleted || len(toolResults(t, a.Session())) != 1 {
		t.Fatalf("turn after the consumer left: %+v", r)
	}
}

// The approver is consulted for every ask, parallel calls included, with
// the effective arguments and the reason; its denial is what the model reads.
func TestApproverConsultedForEveryAsk(t *testing.T) {
	hs := newHarness(t, scripted.Calls("", scripted.ToolCall{ID: "c1", Name: "look", Args: map[string]string{"path": "a"}},
		scripted.ToolCall{ID: "c2", Name: "look", Args: map[string]string{"path": "b"}}), scripted.Text("ok"))
	register(t, hs, funcTool{info: tool.Info{Name: "look", Concurrent: true}, fn: func(context.Context, tool.Call) (tool.Result, error) {
		return tool.TextResult("looked"), nil
	}})
	hs.h.Tools.PreExecute.Use(func(ctx context.Context, c tool.Call, next kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
		return tool.Decision{Kind: tool.Ask, Reason: "looking needs approval", By: "policy"}, nil
	})
	var mu sync.Mutex
	var asked []string
	a := hs.agent(agent.Options{Approver: tool.ApproverFunc(func(_ context.Context, r tool.ApprovalRequest) (tool.Approval, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, r.Reason+" "+string(r.Call.Args))
		return tool.Approval{Allow: strings.Contains(string(r.Call.Args), `"a"`), By: "embedder", Reason: "not b"}, nil
	})})
	c := collect(a.Prompt(withTimeout(t), "look"))
	if c.err != nil || len(asked) != 2 {
		t.Fatalf("err %v, asked %v", c.err, asked)
	}
	if len(c.results) != 2 || c.results[0].IsError || !c.results[1].IsError || !strings.Contains(llm.TextOf(c.results[1].Content), "not b") {
		t.Fatalf("results %+v", c.results)
	}
}

// A prompt whose turn started before its caller's context ended gets that
// turn's events, then the context's error, never the error alone: the turn
// is the caller's whatever the order in which Run's wait saw the two. The
// Queued listener below holds the caller until the turn has started and
// its context has ended, so Run's wait finds both ready; select picks
// between ready cases at random, hence the rounds.
func TestPromptCancelledAfterItsTurnStartedYieldsTheTurn(t *testing.T) {
	started := make(chan struct{}, 1)
	hs := newHarness(t)
	register(t, hs, funcTool{info: tool.Info{Name: "hold"}, fn: func(ctx context.Context, _ tool.Call) (tool.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		return tool.TextResult("stopped"), nil
	}})
	var mu sync.Mutex
	var onQueued func()
	hs.h.Agents.Hub.Queued.Listen(func(context.Context, agent.Queued) error {
		mu.Lock()
		f := onQueued
		mu.Unlock()
		if f != nil {
			f()
		}
		return nil
	})
	a := hs.agent(agent.Options{})
	for round := range 20 {
		hs.model.Push(scripted.Call(fmt.Sprintf("c%d", round), "hold", map[string]any{}, ""))
		ctx, cancel := context.WithCancel(context.Background())
		mu.Lock()
		onQueued = func() {
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Error("the tool did not start")
			}
			cancel()
		}
		mu.Unlock()
		c := collect(a.Prompt(ctx, "hold on"))
		if !errors.Is(c.err, context.Canceled) || len(c.types) == 0 || c.types[0] != session.TypeTurnStart {
			t.Fatalf("round %d: a prompt cancelled after its turn started: %v after %v", round, c.err, c.types)
		}
		idle(t, a)
		if r := lastEnd(t, a.Session()); r.Kind != session.EndAborted {
			t.Fatalf("round %d: the turn ended %+v", round, r)
		}
	}
}
