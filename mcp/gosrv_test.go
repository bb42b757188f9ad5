package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/tool"
)

func startGo(t *testing.T, r *rig, g *goServer, cfg mcp.ServerConfig) {
	t.Helper()
	if err := r.m.Start(context.Background(), []mcp.ServerConfig{cfg}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.m.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if st := state(r.m, cfg.Name); st != mcp.StateConnected {
		s, _ := r.m.Server(cfg.Name)
		t.Fatalf("state %s (%s), want connected", st, s.Error)
	}
}

func TestGoServerToolsAndInstructions(t *testing.T) {
	g := newGoServer(t)
	home := t.TempDir()
	r := newRig(t, mcp.Options{Home: home, Env: env})
	startGo(t, r, g, g.config("go"))

	got := toolNames(r.h.Tools, "mcp__go__")
	for _, want := range []string{"mcp__go__add", "mcp__go__slow", "mcp__go__image", "mcp__go__fail", "mcp__go__resources", "mcp__go__structured"} {
		if !has(got, want) {
			t.Errorf("tool %s not registered; have %v", want, got)
		}
	}
	add, ok := r.h.Tools.Get("mcp__go__add")
	if !ok {
		t.Fatal("no mcp__go__add")
	}
	info := add.Info()
	if info.Kind != tool.KindOther || !info.ReadOnly || !info.Concurrent || info.Description != "Add two integers." {
		t.Errorf("add info = %+v", info)
	}
	validSchema(t, info.Parameters)
	if !strings.Contains(string(info.Parameters), `"a"`) || strings.Contains(string(info.Parameters), "$schema") {
		t.Errorf("add schema = %s", info.Parameters)
	}
	slow, _ := r.h.Tools.Get("mcp__go__slow")
	if slow.Info().ReadOnly {
		t.Error("slow has no readOnlyHint but is ReadOnly")
	}
	// Instructions become a prompt section.
	asm, err := r.h.Prompt.Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sys := asm.Render(context.Background()); !strings.Contains(sys, "## go\nUse add for sums") {
		t.Errorf("system prompt lacks the server's instructions:\n%s", sys)
	}
	// The tool list is cached for lazy starts.
	b, err := os.ReadFile(filepath.Join(home, mcp.CacheDir, "go.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"name": "add"`) || !strings.Contains(string(b), "Use add for sums") {
		t.Errorf("cache = %s", b)
	}
	st, _ := r.m.Server("go")
	if st.Transport != "http" || st.Target != g.http.URL || len(st.Tools) != 6 || st.Source != "" {
		t.Errorf("status = %+v", st)
	}
}

// A scripted model turn calls the server's tools; results map onto dsh
// content.
func TestGoServerScriptedTurn(t *testing.T) {
	g := newGoServer(t)
	r := newRig(t, mcp.Options{Env: env},
		scripted.Calls("", scripted.ToolCall{ID: "c1", Name: "mcp__go__add", Args: map[string]int{"a": 2, "b": 3}}),
		scripted.Calls("", scripted.ToolCall{ID: "c2", Name: "mcp__go__image", Args: map[string]any{}},
			scripted.ToolCall{ID: "c3", Name: "mcp__go__fail", Args: map[string]any{}},
			scripted.ToolCall{ID: "c4", Name: "mcp__go__resources", Args: map[string]any{}},
			scripted.ToolCall{ID: "c5", Name: "mcp__go__structured", Args: map[string]any{}},
			scripted.ToolCall{ID: "c6", Name: "mcp__go__add", Args: map[string]any{"a": "x"}}),
		scripted.Text("done"))
	startGo(t, r, g, g.config("go"))
	a := r.agent(agent.Options{})
	r.run(a, "use the tools")

	res := results(t, a.Session())
	if got := llm.TextOf(res["c1"].Content); got != "5" || res["c1"].IsError {
		t.Errorf("add = %q (error %v)", got, res["c1"].IsError)
	}
	img := res["c2"].Content
	if len(img) != 2 || img[1].Type != llm.BlockImage || img[1].URL != "data:image/png;base64,iVBORw==" || img[1].MimeType != "image/png" {
		t.Errorf("image content = %+v", img)
	}
	if !res["c3"].IsError || llm.TextOf(res["c3"].Content) != "disk on fire" {
		t.Errorf("fail = %+v", res["c3"])
	}
	rt := llm.TextOf(res["c4"].Content)
	if !strings.Contains(rt, "[resource: file:///tmp/a.txt] a.txt (text/plain)") || !strings.Contains(rt, "[resource: memo://1] (text/plain)\nhello memo") {
		t.Errorf("resources = %q", rt)
	}
	if got := llm.TextOf(res["c5"].Content); got != `{"temp":21,"unit":"C"}` {
		t.Errorf("structured = %q", got)
	}
	// Arguments are validated against the server's schema before the call.
	if !res["c6"].IsError || !strings.Contains(llm.TextOf(res["c6"].Content), "invalid arguments for mcp__go__add") {
		t.Errorf("bad args = %+v", res["c6"])
	}
	if n := g.called("add"); n != 1 {
		t.Errorf("server saw %d add calls, want 1", n)
	}
	// The model saw the tool's schema.
	reqs := r.model.Requests()
	found := false
	for _, s := range reqs[0].Tools {
		if s.Name == "mcp__go__add" && strings.Contains(string(s.Parameters), "first addend") {
			found = true
		}
	}
	if !found {
		t.Errorf("first request's tools lack mcp__go__add: %+v", reqs[0].Tools)
	}
	if !strings.Contains(reqs[0].System, "Use add for sums") {
		t.Errorf("system prompt lacks instructions: %q", reqs[0].System)
	}
}

// Cancelling the turn cancels the running MCP call on the server.
func TestGoServerCancelLongCall(t *testing.T) {
	g := newGoServer(t)
	r := newRig(t, mcp.Options{Env: env},
		scripted.Call("c1", "mcp__go__slow", map[string]int{"seconds": 60}, ""),
		scripted.Text("after"))
	startGo(t, r, g, g.config("go"))
	a := r.agent(agent.Options{})
	if err := a.Send(context.Background(), []llm.Block{llm.Text("wait")}, llm.Source{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.slowIn:
	case <-time.After(20 * time.Second):
		t.Fatal("the slow call never reached the server")
	}
	start := time.Now()
	a.Cancel("user pressed esc")
	select {
	case err := <-g.slowOut:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("server handler ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server never saw the cancellation")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.WhenIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancellation took %s", d)
	}
	// The server is still usable.
	out := execute(t, r.h.Tools, "mcp__go__add", map[string]int{"a": 1, "b": 1})
	if textOf(out.Result) != "2" {
		t.Errorf("after cancel: %+v", out.Result)
	}
}

// The per-call timeout ends a call that takes too long and tells the model.
func TestGoServerCallTimeout(t *testing.T) {
	g := newGoServer(t)
	r := newRig(t, mcp.Options{Env: env})
	cfg := g.config("go")
	cfg.TimeoutMs = 300
	startGo(t, r, g, cfg)
	start := time.Now()
	out := execute(t, r.h.Tools, "mcp__go__slow", map[string]int{"seconds": 60})
	if !out.Result.IsError || !strings.Contains(textOf(out.Result), "timed out after 300ms") {
		t.Fatalf("result = %+v", out.Result)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timeout took %s", d)
	}
	select {
	case err := <-g.slowOut:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("server saw %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the server never saw the cancellation")
	}
}

// notifications/tools/list_changed updates the registry.
func TestGoServerToolListChanged(t *testing.T) {
	g := newGoServer(t)
	r := newRig(t, mcp.Options{Env: env})
	startGo(t, r, g, g.config("go"))
	var changes atomic.Int64
	r.h.Tools.Changed.Listen(func(context.Context, struct{}) error { changes.Add(1); return nil })

	g.srv.AddTool(&sdk.Tool{Name: "mul", Description: "Multiply.", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"number"}}}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "42"}}}, nil
		})
	waitFor(t, 10*time.Second, "mcp__go__mul", func() bool { return has(toolNames(r.h.Tools, "mcp__go__"), "mcp__go__mul") })
	if out := execute(t, r.h.Tools, "mcp__go__mul", map[string]int{"x": 6}); textOf(out.Result) != "42" {
		t.Errorf("mul = %+v", out.Result)
	}
	g.srv.RemoveTools("fail")
	waitFor(t, 10*time.Second, "mcp__go__fail to go", func() bool { return !has(toolNames(r.h.Tools, "mcp__go__"), "mcp__go__fail") })
	if changes.Load() < 2 {
		t.Errorf("registry Changed fired %d times", changes.Load())
	}
}

// A pre-execute listener (a permission rule) denies one MCP tool: the
// server never sees the call and the model reads the reason.
func TestGoServerPreExecuteDeny(t *testing.T) {
	g := newGoServer(t)
	r := newRig(t, mcp.Options{Env: env},
		scripted.Calls("", scripted.ToolCall{ID: "c1", Name: "mcp__go__add", Args: map[string]int{"a": 1, "b": 2}},
			scripted.ToolCall{ID: "c2", Name: "mcp__go__image", Args: map[string]any{}}),
		scripted.Text("ok"))
	startGo(t, r, g, g.config("go"))
	r.h.Tools.PreExecute.Use(func(ctx context.Context, c tool.Call, next kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
		if c.Name == "mcp__go__add" {
			return tool.Decision{Kind: tool.Deny, Reason: "permission rule mcp__go__add denies it", By: "test"}, nil
		}
		return next(ctx, c)
	})
	a := r.agent(agent.Options{})
	r.run(a, "go")
	res := results(t, a.Session())
	if !res["c1"].IsError || !strings.Contains(llm.TextOf(res["c1"].Content), "permission rule mcp__go__add denies it") {
		t.Errorf("denied call = %+v", res["c1"])
	}
	if res["c2"].IsError {
		t.Errorf("allowed call failed: %+v", res["c2"])
	}
	if g.called("add") != 0 || g.called("image") != 1 {
		t.Errorf("server saw %v", g.seen)
	}
}

// With tool search on, MCP tools leave the schema list; the model finds
// them with mcp_tool_search and runs them with mcp_call, gated like direct
// calls.
func TestGoServerToolSearch(t *testing.T) {
	g := newGoServer(t)
	r := newRig(t, mcp.Options{Env: env, ToolSearch: mcp.ToolSearchOn},
		scripted.Call("c1", mcp.SearchToolName, map[string]any{"query": "add integers"}, ""),
		scripted.Calls("",
			scripted.ToolCall{ID: "c2", Name: mcp.CallToolName, Args: map[string]any{"name": "mcp__go__add", "arguments": map[string]int{"a": 40, "b": 2}}},
			scripted.ToolCall{ID: "c3", Name: mcp.CallToolName, Args: map[string]any{"name": "mcp__go__image"}},
			scripted.ToolCall{ID: "c4", Name: mcp.CallToolName, Args: map[string]any{"name": "mcp__go__add", "arguments": map[string]any{"a": "x"}}},
			scripted.ToolCall{ID: "c5", Name: mcp.CallToolName, Args: map[string]any{"name": "bash", "arguments": map[string]any{}}},
			scripted.ToolCall{ID: "c6", Name: "mcp__go__add", Args: map[string]int{"a": 1, "b": 1}}),
		scripted.Text("ok"))
	startGo(t, r, g, g.config("go"))
	r.h.Tools.PreExecute.Use(func(ctx context.Context, c tool.Call, next kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
		if c.Name == "mcp__go__image" {
			return tool.Decision{Kind: tool.Deny, Reason: "no images", By: "test"}, nil
		}
		return next(ctx, c)
	})
	visible := toolNames(r.h.Tools, "mcp")
	if len(visible) != 2 || !has(visible, mcp.SearchToolName) || !has(visible, mcp.CallToolName) {
		t.Fatalf("visible MCP tools = %v, want only the search tools", visible)
	}
	if _, ok := r.h.Tools.Get("mcp__go__add"); !ok {
		t.Fatal("deferred tools must stay registered (permission rules look them up)")
	}
	st, _ := r.m.Server("go")
	for _, ts := range st.Tools {
		if !ts.Deferred {
			t.Errorf("%s is not deferred", ts.Name)
		}
	}
	a := r.agent(agent.Options{})
	r.run(a, "go")
	res := results(t, a.Session())
	found := llm.TextOf(res["c1"].Content)
	if !strings.Contains(found, `"name": "mcp__go__add"`) || !strings.Contains(found, "first addend") {
		t.Errorf("search result = %s", found)
	}
	if strings.Index(found, "mcp__go__add") > strings.Index(found, "mcp__go__") {
		t.Errorf("add is not the best match: %s", found)
	}
	if got := llm.TextOf(res["c2"].Content); got != "42" || res["c2"].IsError {
		t.Errorf("mcp_call add = %q", got)
	}
	if !res["c3"].IsError || !strings.Contains(llm.TextOf(res["c3"].Content), "no images") {
		t.Errorf("mcp_call of a denied tool = %+v", res["c3"])
	}
	if !res["c4"].IsError || !strings.Contains(llm.TextOf(res["c4"].Content), "invalid arguments for mcp__go__add") {
		t.Errorf("mcp_call with bad args = %+v", res["c4"])
	}
	if !res["c5"].IsError || !strings.Contains(llm.TextOf(res["c5"].Content), `no MCP tool "bash"`) {
		t.Errorf("mcp_call of a non-MCP tool = %+v", res["c5"])
	}
	if !res["c6"].IsError || !strings.Contains(llm.TextOf(res["c6"].Content), "unknown tool") {
		t.Errorf("a deferred tool called directly = %+v", res["c6"])
	}
	if g.called("image") != 0 || g.called("add") != 1 {
		t.Errorf("server saw %v", g.seen)
	}
	for _, s := range r.model.Requests()[0].Tools {
		if strings.HasPrefix(s.Name, "mcp__") {
			t.Errorf("deferred tool %s sent to the model", s.Name)
		}
	}
}

// The gate also applies an ask verdict: the agent's approver decides.
func TestToolSearchAskGoesToApprover(t *testing.T) {
	g := newGoServer(t)
	r := newRig(t, mcp.Options{Env: env, ToolSearch: mcp.ToolSearchOn},
		scripted.Call("c1", mcp.CallToolName, map[string]any{"name": "mcp__go__add", "arguments": map[string]int{"a": 1, "b": 2}}, ""),
		scripted.Call("c2", mcp.CallToolName, map[string]any{"name": "mcp__go__add", "arguments": map[string]int{"a": 1, "b": 2}}, ""),
		scripted.Text("ok"))
	startGo(t, r, g, g.config("go"))
	r.h.Tools.PreExecute.Use(func(ctx context.Context, c tool.Call, next kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
		if c.Name == "mcp__go__add" {
			return tool.Decision{Kind: tool.Ask, Reason: "add needs approval"}, nil
		}
		return next(ctx, c)
	})
	var asked []string
	n := 0
	a := r.agent(agent.Options{Approver: tool.ApproverFunc(func(_ context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
		asked = append(asked, req.Reason)
		n++
		return tool.Approval{Allow: n == 1, Reason: "no"}, nil
	})})
	r.run(a, "go")
	res := results(t, a.Session())
	if len(asked) != 2 || !strings.Contains(asked[0], "mcp__go__add: add needs approval") {
		t.Errorf("asked %q", asked)
	}
	if llm.TextOf(res["c1"].Content) != "3" || !res["c2"].IsError {
		t.Errorf("results %+v", res)
	}
	if g.called("add") != 1 {
		t.Errorf("server saw %v", g.seen)
	}
}

// Servers an ACP client passes for one session live as long as its scope.
func TestAddSessionServers(t *testing.T) {
	g := newGoServer(t)
	r := newRig(t, mcp.Options{Env: env})
	scope := kernel.NewScope("session-1")
	other := kernel.NewScope("session-2")
	defer other.Close()
	if err := r.m.AddSessionServers(context.Background(), scope, []mcp.ServerConfig{g.config("acp")}); err != nil {
		t.Fatal(err)
	}
	// Connected before it returned (no cache).
	st, _ := r.m.Server("acp")
	if st.State != mcp.StateConnected || !st.Session || st.Source != mcp.SourceSession {
		t.Fatalf("status %+v", st)
	}
	add, ok := r.h.Tools.Get("mcp__acp__add")
	if !ok {
		t.Fatal("session server's tools not registered")
	}
	if !r.m.Visible(scope)(add.Info()) || r.m.Visible(other)(add.Info()) {
		t.Error("Visible must show a session's servers to that session only")
	}
	if !r.m.Visible(other)(tool.Info{Name: "read"}) {
		t.Error("Visible must keep non-MCP tools")
	}
	// Another session sharing the same config shares the server; a
	// different config under the same name is refused.
	if err := r.m.AddSessionServers(context.Background(), other, []mcp.ServerConfig{g.config("acp")}); err != nil {
		t.Fatal(err)
	}
	bad := g.config("acp")
	bad.URL += "/other"
	if err := r.m.AddSessionServers(context.Background(), other, []mcp.ServerConfig{bad}); err == nil || !strings.Contains(err.Error(), "already configured") {
		t.Errorf("conflicting session server: %v", err)
	}
	if err := scope.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.h.Tools.Get("mcp__acp__add"); !ok {
		t.Fatal("a shared server stopped when one of its sessions ended")
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.h.Tools.Get("mcp__acp__add"); ok {
		t.Error("tools stay registered after the last session ended")
	}
	if _, ok := r.m.Server("acp"); ok {
		t.Error("server still listed after its sessions ended")
	}
}

// A lazy server with a cached tool list registers its tools without
// starting; the first call starts it.
func TestGoServerLazyFromCache(t *testing.T) {
	g := newGoServer(t)
	home := t.TempDir()
	requests := &g.requests
	{ // First run: no cache, so it connects in the background and caches.
		r := newRig(t, mcp.Options{Home: home, Env: env})
		startGo(t, r, g, g.config("go"))
		if err := r.m.Close(); err != nil {
			t.Fatal(err)
		}
	}
	requests.Store(0)
	r := newRig(t, mcp.Options{Home: home, Env: env})
	if err := r.m.Start(context.Background(), []mcp.ServerConfig{g.config("go")}); err != nil {
		t.Fatal(err)
	}
	st, _ := r.m.Server("go")
	if st.State != mcp.StateIdle || !st.FromCache || len(st.Tools) != 6 {
		t.Fatalf("status %+v", st)
	}
	if !has(toolNames(r.h.Tools, "mcp__go__"), "mcp__go__add") {
		t.Fatal("cached tools not registered")
	}
	time.Sleep(100 * time.Millisecond)
	if n := requests.Load(); n != 0 {
		t.Fatalf("a lazy server with a cache made %d requests before its first call", n)
	}
	out := execute(t, r.h.Tools, "mcp__go__add", map[string]int{"a": 20, "b": 22})
	if textOf(out.Result) != "42" {
		t.Fatalf("first call = %+v", out.Result)
	}
	if state(r.m, "go") != mcp.StateConnected || requests.Load() == 0 {
		t.Errorf("state %s after the first call", state(r.m, "go"))
	}
}

// Project servers need trust.
func TestProjectServersNeedTrust(t *testing.T) {
	g := newGoServer(t)
	dir := t.TempDir()
	var asked []string
	for _, trusted := range []bool{false, true} {
		t.Run(fmt.Sprint("trusted=", trusted), func(t *testing.T) {
			r := newRig(t, mcp.Options{Env: env, Trusted: func(d string) bool { asked = append(asked, d); return trusted }})
			cfg := g.config("proj")
			cfg.Dir, cfg.Source = dir, mcp.SourceMCPJSON
			if err := r.m.Start(context.Background(), []mcp.ServerConfig{cfg}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_ = r.m.WaitReady(ctx)
			st, _ := r.m.Server("proj")
			if !trusted {
				if st.State != mcp.StateUntrusted || len(toolNames(r.h.Tools, "mcp__proj__")) != 0 || !strings.Contains(st.Error, "not trusted") {
					t.Errorf("untrusted project server: %+v", st)
				}
				out := execute(t, r.h.Tools, "mcp__proj__add", map[string]int{})
				if !out.Result.IsError {
					t.Error("an untrusted server's tool ran")
				}
				return
			}
			if st.State != mcp.StateConnected || len(toolNames(r.h.Tools, "mcp__proj__")) == 0 {
				t.Errorf("trusted project server: %+v", st)
			}
		})
	}
	if len(asked) != 2 || asked[0] != dir {
		t.Errorf("Trusted asked about %v", asked)
	}
}

// A server that cannot start is retried with backoff, then given up.
func TestGiveUpAfterBoundedAttempts(t *testing.T) {
	g := newGoServer(t)
	r := newRig(t, mcp.Options{MaxRestarts: 2, RestartBackoff: 50 * time.Millisecond})
	cfg := g.config("noauth")
	cfg.Headers = nil // the server answers 401
	if err := r.m.Start(context.Background(), []mcp.ServerConfig{cfg}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "failed", func() bool { return state(r.m, "noauth") == mcp.StateFailed })
	st, _ := r.m.Server("noauth")
	if !strings.Contains(st.Error, "gave up after 3 failed attempts") || !strings.Contains(st.Error, "Unauthorized") || st.Restarts != 2 {
		t.Errorf("status %+v", st)
	}
	if err := r.m.Connect(context.Background(), "noauth"); err == nil {
		t.Error("Connect succeeded without the header")
	}
}

func TestConfigErrorsAtStart(t *testing.T) {
	r := newRig(t, mcp.Options{})
	err := r.m.Start(context.Background(), []mcp.ServerConfig{{Name: "x"}, {Name: "y", Type: "http", URL: "http://127.0.0.1:1"}, {Name: "y", Command: "true"}})
	if err == nil || !strings.Contains(err.Error(), `"x"`) || !strings.Contains(err.Error(), `"y" is already configured`) {
		t.Errorf("err = %v", err)
	}
}

// An HTTP server that goes away mid-session: the failed call says the
// server is being restarted, and the manager reconnects once it is back.
func TestGoServerHTTPServerGoesAway(t *testing.T) {
	g := newGoServer(t)
	r := newRig(t, mcp.Options{Env: env, RestartBackoff: 300 * time.Millisecond, MaxRestarts: 10})
	startGo(t, r, g, g.config("go"))
	g.down.Store(true)
	g.http.CloseClientConnections()
	out := execute(t, r.h.Tools, "mcp__go__add", map[string]int{"a": 1, "b": 2})
	if !out.Result.IsError || !strings.Contains(textOf(out.Result), `MCP server "go"`) {
		t.Fatalf("call while down = %+v", out.Result)
	}
	waitFor(t, 10*time.Second, "restarting", func() bool { return state(r.m, "go") == mcp.StateRestarting })
	if !has(toolNames(r.h.Tools, "mcp__go__"), "mcp__go__add") {
		t.Error("tools were removed while restarting")
	}
	g.down.Store(false)
	waitFor(t, 20*time.Second, "connected again", func() bool { return state(r.m, "go") == mcp.StateConnected })
	if out := execute(t, r.h.Tools, "mcp__go__add", map[string]int{"a": 1, "b": 2}); textOf(out.Result) != "3" {
		t.Errorf("after the server came back: %+v", out.Result)
	}
	if st, _ := r.m.Server("go"); st.Restarts == 0 {
		t.Errorf("status %+v", st)
	}
}

// Start never waits for a server: one that hangs in initialize connects
// in the background.
func TestStartDoesNotWait(t *testing.T) {
	g := newGoServer(t)
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		g.http.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(hang.Close)
	r := newRig(t, mcp.Options{Env: env})
	cfg := g.config("go")
	cfg.URL = hang.URL
	if err := r.m.Start(context.Background(), []mcp.ServerConfig{cfg}); err != nil {
		t.Fatal(err)
	}
	if st := state(r.m, "go"); st != mcp.StateConnecting {
		t.Fatalf("state %s right after Start, want connecting", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := r.m.WaitReady(ctx); err == nil {
		t.Fatal("WaitReady returned while the server hangs")
	}
	close(release)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	if err := r.m.WaitReady(ctx2); err != nil {
		t.Fatal(err)
	}
	if st := state(r.m, "go"); st != mcp.StateConnected {
		t.Fatalf("state %s, want connected", st)
	}
}
