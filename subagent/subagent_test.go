package subagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/session/invariants"
	"github.com/dshq/dsh/subagent"
	"github.com/dshq/dsh/tools/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// router answers by session: the parent follows parentScript, every child
// answers childReply (or hangs when hang is set).
type router struct {
	mu       sync.Mutex
	parent   string
	script   []func(*llm.Request) []llm.Chunk
	child    func(*llm.Request) []llm.Chunk
	requests map[string][]*llm.Request
}

func (r *router) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	r.mu.Lock()
	if r.requests == nil {
		r.requests = map[string][]*llm.Request{}
	}
	cp := *req
	cp.Messages = append([]llm.Message(nil), req.Messages...)
	r.requests[req.SessionID] = append(r.requests[req.SessionID], &cp)
	var chunks []llm.Chunk
	hang := false
	if req.SessionID == r.parent {
		n := len(r.requests[req.SessionID]) - 1
		if n < len(r.script) {
			chunks = r.script[n](req)
		}
	} else if r.child != nil {
		chunks = r.child(req)
		hang = chunks == nil
	}
	r.mu.Unlock()
	if chunks == nil && !hang {
		return nil, scripted.ErrExhausted
	}
	return func(yield func(llm.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
		if hang {
			<-ctx.Done()
			yield(llm.Chunk{}, context.Cause(ctx))
		}
	}, nil
}

func calls(cs ...scripted.ToolCall) func(*llm.Request) []llm.Chunk {
	return func(*llm.Request) []llm.Chunk { return scripted.CallChunks("", cs...) }
}

func text(s string) func(*llm.Request) []llm.Chunk {
	return func(*llm.Request) []llm.Chunk { return scripted.TextChunks(s, llm.FinishStop) }
}

type rig struct {
	h   *core.Host
	svc *subagent.Service
	r   *router
	a   agent.Agent
	hd  *agent.Handle
}

func newRig(t *testing.T, r *router, maxDepth int) *rig {
	t.Helper()
	return newRigWith(t, r, subagent.Options{MaxDepth: maxDepth}, nil)
}

func newRigWith(t *testing.T, r *router, o subagent.Options, defs []subagent.Definition) *rig {
	t.Helper()
	h, err := core.New(core.Options{Invariants: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	if _, err := h.LLM.RegisterModels([]string{"mock"}, r); err != nil {
		t.Fatal(err)
	}
	svc := subagent.NewService(o)
	for _, p := range []subagent.Provider{subagent.Spawn(svc, h.Agents), subagent.Fork(svc, h.Agents)} {
		if _, err := svc.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Tools.RegisterAll(h.Scope, task.Tool("task", "spawn", svc, h.Agents, defs), task.Tool("fork", "fork", svc, h.Agents, nil)); err != nil {
		t.Fatal(err)
	}
	r.parent = "parent-session"
	hd, err := h.Agents.Create(context.Background(), agent.CreateOptions{AgentID: "p", SessionID: "parent-session",
		Header: session.Header{Cwd: t.TempDir()}, Options: agent.Options{Model: "mock"}})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{h: h, svc: svc, r: r, a: hd.Agent, hd: hd}
}

func (g *rig) send(t *testing.T, s string) {
	t.Helper()
	if err := g.a.Send(context.Background(), []llm.Block{llm.Text(s)}, llm.Source{}); err != nil {
		t.Fatal(err)
	}
}

func (g *rig) idle(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := g.a.WhenIdle(ctx); err != nil {
		t.Fatal(err)
	}
}

func results(s *session.Session) []session.ToolResult {
	var out []session.ToolResult
	for _, e := range s.Events() {
		if e.Type == session.TypeToolResult {
			tr, _ := session.Decode[session.ToolResult](e)
			out = append(out, tr)
		}
	}
	return out
}

func msgsText(ms []llm.Message) string {
	b, _ := json.Marshal(ms)
	return string(b)
}

func TestSpawnAndFork(t *testing.T) {
	r := &router{
		script: []func(*llm.Request) []llm.Chunk{
			text("first answer"),
			calls(scripted.ToolCall{ID: "t1", Name: "task", Args: map[string]string{"description": "look", "prompt": "SPAWN-PROMPT"}},
				scripted.ToolCall{ID: "t2", Name: "fork", Args: map[string]string{"description": "try", "prompt": "FORK-PROMPT"}}),
			text("done"),
		},
		child: func(req *llm.Request) []llm.Chunk {
			if strings.Contains(msgsText(req.Messages), "FORK-PROMPT") {
				return scripted.TextChunks("fork result", llm.FinishStop)
			}
			return scripted.TextChunks("spawn result", llm.FinishStop)
		},
	}
	g := newRig(t, r, 2)
	g.send(t, "SECRET-FIRST-TURN")
	g.idle(t)
	g.send(t, "SECOND-TURN delegate please")
	g.idle(t)
	rs := results(g.a.Session())
	if llm.TextOf(rs[0].Content) != "spawn result" || llm.TextOf(rs[1].Content) != "fork result" {
		t.Fatalf("results %+v", rs)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for sid, reqs := range r.requests {
		if sid == "parent-session" {
			continue
		}
		hist := msgsText(reqs[0].Messages)
		switch {
		case strings.Contains(hist, "FORK-PROMPT"):
			if !strings.Contains(hist, "SECRET-FIRST-TURN") || strings.Contains(hist, "SECOND-TURN") {
				t.Fatalf("fork child must see the completed turns only: %s", hist)
			}
		case strings.Contains(hist, "SPAWN-PROMPT"):
			if strings.Contains(hist, "SECRET-FIRST-TURN") || len(reqs[0].Messages) != 1 {
				t.Fatalf("spawn child must see only its prompt: %s", hist)
			}
		default:
			t.Fatalf("unexpected child history %s", hist)
		}
	}
	// Lineage and lifecycle records.
	var starts, ends int
	for _, e := range g.a.Session().Events() {
		switch e.Type {
		case subagent.TypeStart:
			starts++
			// The child session is named for front-ends; its header's
			// lineage is checked in TestCancelParentEndsChildren.
			if st, _ := session.Decode[subagent.StartEvent](e); st.ChildSession == "" || st.CallID == "" {
				t.Fatalf("subagent/start without child session or call id: %s", e.Data)
			}
		case subagent.TypeEnd:
			ends++
		}
	}
	if starts != 2 || ends != 2 {
		t.Fatalf("starts %d ends %d", starts, ends)
	}
	if err := invariants.CheckLog(g.a.Session().Events()); err != nil {
		t.Fatal(err)
	}
}

func TestChildrenRunConcurrently(t *testing.T) {
	var inflight, peak atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	r := &router{script: []func(*llm.Request) []llm.Chunk{
		calls(scripted.ToolCall{ID: "a", Name: "task", Args: map[string]string{"description": "a", "prompt": "A"}},
			scripted.ToolCall{ID: "b", Name: "task", Args: map[string]string{"description": "b", "prompt": "B"}}),
		text("done"),
	}}
	r.child = func(*llm.Request) []llm.Chunk {
		n := inflight.Add(1)
		if n > peak.Load() {
			peak.Store(n)
		}
		if n == 2 {
			once.Do(func() { close(release) })
		}
		// Unlock the router while waiting so the sibling can arrive.
		r.mu.Unlock()
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
		r.mu.Lock()
		inflight.Add(-1)
		return scripted.TextChunks("ok", llm.FinishStop)
	}
	g := newRig(t, r, 2)
	g.send(t, "go")
	g.idle(t)
	if peak.Load() != 2 {
		t.Fatalf("children did not overlap (peak %d)", peak.Load())
	}
}

func TestDepthCap(t *testing.T) {
	// Every child asks for another child: the chain stops at the cap with a
	// clear error in the deepest child's result.
	r := &router{script: []func(*llm.Request) []llm.Chunk{
		calls(scripted.ToolCall{ID: "d1", Name: "task", Args: map[string]string{"description": "deeper", "prompt": "go deeper"}}),
		text("done"),
	}}
	r.child = func(req *llm.Request) []llm.Chunk {
		if len(req.Messages) == 1 {
			return scripted.CallChunks("", scripted.ToolCall{ID: "d", Name: "task", Args: map[string]string{"description": "deeper", "prompt": "go deeper"}})
		}
		return scripted.TextChunks("child finished: "+llm.TextOf(req.Messages[len(req.Messages)-1].Content[0].Content), llm.FinishStop)
	}
	g := newRig(t, r, 2)
	g.send(t, "recurse")
	g.idle(t)
	out := llm.TextOf(results(g.a.Session())[0].Content)
	if !strings.Contains(out, "depth limit reached") {
		t.Fatalf("want the depth error to surface, got %q", out)
	}
}

func TestCancelParentEndsChildren(t *testing.T) {
	r := &router{script: []func(*llm.Request) []llm.Chunk{
		calls(scripted.ToolCall{ID: "c", Name: "task", Args: map[string]string{"description": "slow", "prompt": "SLOW"}}),
	}}
	r.child = func(*llm.Request) []llm.Chunk { return nil } // hangs
	g := newRig(t, r, 2)
	g.send(t, "go")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := g.a.Session().Last(subagent.TypeStart); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("child never started")
		}
		time.Sleep(time.Millisecond)
	}
	st, _ := g.a.Session().Last(subagent.TypeStart)
	start, _ := session.Decode[subagent.StartEvent](st)
	child, ok := g.h.Sessions.Get(start.ChildSession)
	if !ok {
		t.Fatal("child session not live")
	}
	for {
		if _, ok := child.Last(session.TypeStepStart); ok {
			break
		}
		time.Sleep(time.Millisecond)
	}
	g.a.Cancel("user interrupt")
	g.idle(t)
	end, _ := g.a.Session().Last(subagent.TypeEnd)
	ev, _ := session.Decode[subagent.EndEvent](end)
	if ev.StopReason != subagent.Aborted {
		t.Fatalf("parent log end %+v", ev)
	}
	te, _ := child.Last(session.TypeTurnEnd)
	tr, _ := session.Decode[session.TurnEnd](te)
	if tr.Reason.Kind != session.EndAborted {
		t.Fatalf("child log %+v", tr.Reason)
	}
	if child.Header().ParentSession != "parent-session" {
		t.Fatalf("lineage %+v", child.Header())
	}
}

func TestDefinitions(t *testing.T) {
	user, proj := t.TempDir(), t.TempDir()
	writeFile(t, user+"/reviewer.md", "---\nname: reviewer\ndescription: reviews code\ntools: Read, Grep\nmodel: mock\n---\nYou review code carefully.\n")
	writeFile(t, proj+"/reviewer.md", "---\nname: reviewer\ndescription: project reviewer\ntools: [Read]\n---\nProject rules apply.\n")
	writeFile(t, proj+"/plain.md", "Just a prompt.\n")
	defs, err := subagent.LoadDefinitions(user, proj)
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) != 2 || defs[1].Name != "reviewer" || defs[1].Description != "project reviewer" || defs[1].Prompt != "Project rules apply." || len(defs[1].Tools) != 1 {
		t.Fatalf("%+v", defs)
	}
	if defs[0].Name != "plain" || defs[0].Prompt != "Just a prompt." {
		t.Fatalf("%+v", defs[0])
	}
}

// A block list of tools and a CRLF file must both keep their restriction:
// an agent file whose tools were silently lost would get every tool.
func TestDefinitionToolRestrictions(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/blocklist.md", "---\nname: blocklist\ndescription: read only\ntools:\n  - Read\n  - Grep\n---\nOnly read.\n")
	writeFile(t, dir+"/crlf-file.md", "---\r\nname: crlf\r\ndescription: read only\r\ntools: Read, Grep\r\n---\r\nOnly read.\r\n")
	writeFile(t, dir+"/inline.md", "---\nname: inline\ntools: [\"Read\", 'Grep']\n---\nOnly read.\n")
	defs, err := subagent.LoadDefinitions(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) != 3 {
		t.Fatalf("%+v", defs)
	}
	for _, d := range defs {
		if strings.Join(d.Tools, ",") != "Read,Grep" || d.Prompt != "Only read." {
			t.Errorf("%s: tools %q prompt %q (%+v)", d.Path, d.Tools, d.Prompt, d)
		}
	}
	if defs[0].Name != "blocklist" || defs[1].Name != "crlf" || defs[0].Description != "read only" || defs[1].Description != "read only" {
		t.Fatalf("%+v", defs)
	}
}

// A tools key that names nothing usable refuses the definition instead of
// granting every tool.
func TestDefinitionEmptyToolsRefused(t *testing.T) {
	for name, body := range map[string]string{
		"empty":    "---\nname: empty\ntools:\n---\nPrompt.\n",
		"brackets": "---\nname: brackets\ntools: []\n---\nPrompt.\n",
		"nested":   "---\nname: nested\ntools:\n  read: true\n---\nPrompt.\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir+"/"+name+".md", body)
			writeFile(t, dir+"/ok.md", "---\nname: ok\ntools: Read\n---\nFine.\n")
			defs, err := subagent.LoadDefinitions(dir)
			if err == nil || !strings.Contains(err.Error(), "names no tool") {
				t.Fatalf("want a refusal, got %v", err)
			}
			if len(defs) != 1 || defs[0].Name != "ok" {
				t.Fatalf("the refused definition must be left out: %+v", defs)
			}
		})
	}
}

// idleWithin is a hang detector, not a timing assertion.
func (g *rig) idleWithin(t *testing.T, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := g.a.WhenIdle(ctx); err != nil {
		t.Fatalf("the parent never went idle (nested delegation deadlocked on the pool?): %v", err)
	}
}

// nested answers children: an OUTER child delegates once (after the
// barrier, if any), an INNER child answers "ok", and an OUTER child that
// got its answer finishes with it.
func nested(r *router, barrier func()) func(*llm.Request) []llm.Chunk {
	return func(req *llm.Request) []llm.Chunk {
		hist := msgsText(req.Messages)
		switch {
		case strings.Contains(hist, "INNER") && len(req.Messages) == 1:
			return scripted.TextChunks("ok", llm.FinishStop)
		case strings.Contains(hist, "OUTER") && len(req.Messages) == 1:
			if barrier != nil {
				r.mu.Unlock()
				barrier()
				r.mu.Lock()
			}
			return scripted.CallChunks("", scripted.ToolCall{ID: "inner", Name: "task", Args: map[string]string{"description": "inner", "prompt": "INNER"}})
		default:
			return scripted.TextChunks("outer got "+llm.TextOf(req.Messages[len(req.Messages)-1].Content[0].Content), llm.FinishStop)
		}
	}
}

// With one slot, a child that delegates once must not wait forever for a
// slot it holds itself.
func TestNestedDelegationSingleSlot(t *testing.T) {
	r := &router{script: []func(*llm.Request) []llm.Chunk{
		calls(scripted.ToolCall{ID: "outer", Name: "task", Args: map[string]string{"description": "outer", "prompt": "OUTER"}}),
		text("done"),
	}}
	r.child = nested(r, nil)
	g := newRigWith(t, r, subagent.Options{MaxConcurrent: 1, MaxDepth: 2}, nil)
	g.send(t, "go")
	g.idleWithin(t, 10*time.Second)
	rs := results(g.a.Session())
	if len(rs) != 1 || llm.TextOf(rs[0].Content) != "outer got ok" {
		t.Fatalf("results %+v", rs)
	}
}

// With the defaults (8 slots, depth 2), 8 parallel children that all hold
// a slot and then delegate once must all finish.
func TestNestedDelegationFullPool(t *testing.T) {
	const n = 8
	var arrived atomic.Int32
	all := make(chan struct{})
	barrier := func() {
		if arrived.Add(1) == n {
			close(all)
		}
		select {
		case <-all:
		case <-time.After(15 * time.Second):
		}
	}
	var cs []scripted.ToolCall
	for i := range n {
		cs = append(cs, scripted.ToolCall{ID: fmt.Sprintf("outer%d", i), Name: "task", Args: map[string]string{"description": "outer", "prompt": fmt.Sprintf("OUTER %d", i)}})
	}
	r := &router{script: []func(*llm.Request) []llm.Chunk{calls(cs...), text("done")}}
	r.child = nested(r, barrier)
	g := newRigWith(t, r, subagent.Options{}, nil)
	g.send(t, "go")
	g.idleWithin(t, 10*time.Second)
	if arrived.Load() != n {
		t.Fatalf("only %d children held a slot at once", arrived.Load())
	}
	rs := results(g.a.Session())
	if len(rs) != n {
		t.Fatalf("results %+v", rs)
	}
	for _, tr := range rs {
		if llm.TextOf(tr.Content) != "outer got ok" {
			t.Fatalf("results %+v", rs)
		}
	}
}

// The breadth cap still bounds children that are working: a child waiting
// for its own child does not count, every other one does.
func TestBreadthCapWithNesting(t *testing.T) {
	const n, limit = 5, 2
	var inflight, peak atomic.Int32
	var cs []scripted.ToolCall
	for i := range n {
		cs = append(cs, scripted.ToolCall{ID: fmt.Sprintf("outer%d", i), Name: "task", Args: map[string]string{"description": "outer", "prompt": fmt.Sprintf("OUTER %d", i)}})
	}
	r := &router{script: []func(*llm.Request) []llm.Chunk{calls(cs...), text("done")}}
	answer := nested(r, nil)
	r.child = func(req *llm.Request) []llm.Chunk {
		v := inflight.Add(1)
		for p := peak.Load(); v > p && !peak.CompareAndSwap(p, v); p = peak.Load() {
		}
		r.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		r.mu.Lock()
		inflight.Add(-1)
		return answer(req)
	}
	g := newRigWith(t, r, subagent.Options{MaxConcurrent: limit}, nil)
	g.send(t, "go")
	g.idleWithin(t, 10*time.Second)
	if p := peak.Load(); p > limit || p < 2 {
		t.Fatalf("peak of working children %d, cap %d", p, limit)
	}
	rs := results(g.a.Session())
	if len(rs) != n {
		t.Fatalf("results %+v", rs)
	}
	for _, tr := range rs {
		if llm.TextOf(tr.Content) != "outer got ok" {
			t.Fatalf("results %+v", rs)
		}
	}
}

// End to end: a block-list agent's child does not see tools outside its
// list (here the rig's task and fork, which it would get unrestricted).
func TestDefinitionRestrictsChildTools(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/blocklist.md", "---\nname: blocklist\ndescription: read only\ntools:\n  - Read\n  - Grep\n---\nOnly read.\n")
	defs, err := subagent.LoadDefinitions(dir)
	if err != nil {
		t.Fatal(err)
	}
	var childTools []string
	r := &router{script: []func(*llm.Request) []llm.Chunk{
		calls(scripted.ToolCall{ID: "b", Name: "task", Args: map[string]string{"description": "read", "prompt": "P", "subagent_type": "blocklist"}}),
		text("done"),
	}}
	r.child = func(req *llm.Request) []llm.Chunk {
		for _, ts := range req.Tools {
			childTools = append(childTools, ts.Name)
		}
		if req.System == "" || !strings.Contains(req.System, "Only read.") {
			childTools = append(childTools, "(system prompt missing)")
		}
		return scripted.TextChunks("read", llm.FinishStop)
	}
	g := newRigWith(t, r, subagent.Options{}, defs)
	g.send(t, "go")
	g.idle(t)
	if rs := results(g.a.Session()); len(rs) != 1 || llm.TextOf(rs[0].Content) != "read" {
		t.Fatalf("results %+v", rs)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(childTools) != 0 {
		t.Fatalf("the read-only child saw %v", childTools)
	}
}
