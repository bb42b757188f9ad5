package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/tool"
)

// executeAs runs one registry call for a caller with the given filter, as
// an agent of an ACP session does (ExecOptions.Visible).
func executeAs(t *testing.T, reg *tool.Registry, visible func(tool.Info) bool, name string, args any) tool.Outcome {
	t.Helper()
	b, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return reg.Execute(ctx, tool.NewCall("c1", name, string(b), nil), tool.ExecOptions{Visible: visible})
}

// With tool search on, a session cannot find or run through
// mcp_tool_search / mcp_call the tools of a server another session added,
// and the search tool's description names no session's server.
func TestToolSearchHonoursSessionVisibility(t *testing.T) {
	g := newGoServer(t)
	r := newRig(t, mcp.Options{Env: env, ToolSearch: mcp.ToolSearchOn})
	scopeA, scopeB, scopeC := kernel.NewScope("session-a"), kernel.NewScope("session-b"), kernel.NewScope("session-c")
	defer scopeA.Close()
	defer scopeB.Close()
	defer scopeC.Close()
	if err := r.m.AddSessionServers(context.Background(), scopeA, []mcp.ServerConfig{g.config("asrv")}); err != nil {
		t.Fatal(err)
	}
	if err := r.m.AddSessionServers(context.Background(), scopeB, []mcp.ServerConfig{g.config("bsrv")}); err != nil {
		t.Fatal(err)
	}
	visA, visB, visC := r.m.Visible(scopeA), r.m.Visible(scopeB), r.m.Visible(scopeC)

	// The gate runs the inner call's pre-execute chain; record which inner
	// calls it saw and whether they carried the caller's filter.
	var mu sync.Mutex
	inner := map[string]bool{}
	r.h.Tools.PreExecute.Use(func(ctx context.Context, c tool.Call, next kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
		if strings.HasPrefix(c.Name, "mcp__") {
			mu.Lock()
			inner[c.Name] = tool.VisibleFrom(ctx) != nil
			mu.Unlock()
		}
		return next(ctx, c)
	})

	search, ok := r.h.Tools.Get(mcp.SearchToolName)
	if !ok {
		t.Fatal("no search tool")
	}
	if d := search.Info().Description; strings.Contains(d, "asrv") || strings.Contains(d, "bsrv") {
		t.Errorf("the search tool's description names session servers: %s", d)
	}

	// Session A finds its own server's tools, not B's.
	out := executeAs(t, r.h.Tools, visA, mcp.SearchToolName, map[string]any{"query": "add", "limit": 20})
	found := textOf(out.Result)
	if out.Result.IsError || !strings.Contains(found, "mcp__asrv__add") || strings.Contains(found, "bsrv") {
		t.Errorf("session A's search = %s", found)
	}
	out = executeAs(t, r.h.Tools, visA, mcp.SearchToolName, map[string]any{"query": "nothing-matches-this"})
	if strings.Contains(textOf(out.Result), "bsrv") {
		t.Errorf("session A's failed search lists B's tools: %s", textOf(out.Result))
	}

	// Session A cannot run B's tool through mcp_call; the gate does not
	// even prepare it.
	out = executeAs(t, r.h.Tools, visA, mcp.CallToolName, map[string]any{"name": "mcp__bsrv__add", "arguments": map[string]int{"a": 1, "b": 2}})
	if !out.Result.IsError || !strings.Contains(textOf(out.Result), `no MCP tool "mcp__bsrv__add"`) {
		t.Errorf("session A calling B's tool = %+v", out.Result)
	}
	if g.called("add") != 0 {
		t.Fatalf("B's tool ran for session A: %v", g.seen)
	}
	mu.Lock()
	_, sawB := inner["mcp__bsrv__add"]
	mu.Unlock()
	if sawB {
		t.Error("the gate prepared B's tool for session A")
	}

	// Each session runs its own server's tools, gated with its filter.
	for _, c := range []struct {
		vis  func(tool.Info) bool
		name string
	}{{visA, "mcp__asrv__add"}, {visB, "mcp__bsrv__add"}} {
		out = executeAs(t, r.h.Tools, c.vis, mcp.CallToolName, map[string]any{"name": c.name, "arguments": map[string]int{"a": 1, "b": 2}})
		if out.Result.IsError || textOf(out.Result) != "3" {
			t.Errorf("%s through mcp_call = %+v", c.name, out.Result)
		}
		mu.Lock()
		filtered, saw := inner[c.name]
		mu.Unlock()
		if !saw || !filtered {
			t.Errorf("the gate prepared %s without the caller's filter (seen %v)", c.name, saw)
		}
	}

	// A session with nothing deferred to search does not see the search
	// tools at all.
	if !visA(search.Info()) || !visB(search.Info()) {
		t.Error("sessions with deferred tools must see the search tool")
	}
	call, _ := r.h.Tools.Get(mcp.CallToolName)
	if visC(search.Info()) || visC(call.Info()) {
		t.Error("a session with nothing to search sees the search tools")
	}
	out = executeAs(t, r.h.Tools, visC, mcp.CallToolName, map[string]any{"name": "mcp__bsrv__add"})
	if !out.Result.IsError || g.called("add") != 2 {
		t.Errorf("session C calling B's tool = %+v", out.Result)
	}
}

// The tool-search threshold counts what one caller sees: a session adding
// many tools defers its own, not those every session sees.
func TestToolSearchThresholdPerVisibleSet(t *testing.T) {
	g := newGoServer(t) // 6 tools
	r := newRig(t, mcp.Options{Env: env, ToolSearchThreshold: 8})
	startGo(t, r, g, g.config("go"))
	scopeA, scopeB := kernel.NewScope("session-a"), kernel.NewScope("session-b")
	defer scopeA.Close()
	defer scopeB.Close()
	if err := r.m.AddSessionServers(context.Background(), scopeB, []mcp.ServerConfig{g.config("bsrv")}); err != nil {
		t.Fatal(err)
	}
	visA, visB := r.m.Visible(scopeA), r.m.Visible(scopeB)
	names := func(vis func(tool.Info) bool) []string {
		var out []string
		for _, i := range r.h.Tools.Visible(vis) {
			out = append(out, i.Name)
		}
		return out
	}
	a, b := names(visA), names(visB)
	if !has(a, "mcp__go__add") || has(a, mcp.SearchToolName) || has(a, mcp.CallToolName) {
		t.Errorf("session A (6 tools in view) sees %v; want the settings server's tools listed and no search tools", a)
	}
	if !has(b, "mcp__go__add") || has(b, "mcp__bsrv__add") || !has(b, mcp.SearchToolName) {
		t.Errorf("session B (12 tools in view) sees %v; want its own server's tools behind the search tool", b)
	}
	out := executeAs(t, r.h.Tools, visB, mcp.SearchToolName, map[string]any{"query": "add"})
	if !strings.Contains(textOf(out.Result), "mcp__bsrv__add") {
		t.Errorf("session B's search = %s", textOf(out.Result))
	}
	// When B's session ends, nothing is deferred any more.
	if err := scopeB.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.h.Tools.Get(mcp.SearchToolName); ok {
		t.Error("the search tool outlived the last deferred tool")
	}
}

// Server names whose tool part holds "__" (or ends in "_") would name
// tools like another server's and fall under its permission rules: the
// manager refuses them, from settings and from sessions.
func TestManagerRefusesAmbiguousServerNames(t *testing.T) {
	if mcp.ToolName("github", "evil__delete_repo") != mcp.ToolName("github__evil", "delete_repo") {
		t.Fatal("the collision this guards against is gone; revisit the test")
	}
	r := newRig(t, mcp.Options{})
	bad := []mcp.ServerConfig{
		{Name: "github__evil", Command: "true"},
		{Name: "github_", Command: "true"},
		{Name: "git..hub", Command: "true"},
	}
	err := r.m.Start(context.Background(), bad)
	for _, c := range bad {
		if err == nil || !strings.Contains(err.Error(), `server name "`+c.Name+`" is not allowed`) {
			t.Errorf("Start error lacks %q: %v", c.Name, err)
		}
		if _, ok := r.m.Server(c.Name); ok {
			t.Errorf("server %q was added", c.Name)
		}
	}
	if err == nil || !strings.Contains(err.Error(), "mcp__github") || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("the error does not say why: %v", err)
	}
	scope := kernel.NewScope("session")
	defer scope.Close()
	err = r.m.AddSessionServers(context.Background(), scope, []mcp.ServerConfig{{Name: "github__evil", Command: "true"}})
	if err == nil || !strings.Contains(err.Error(), `"github__evil" is not allowed`) {
		t.Errorf("AddSessionServers error = %v", err)
	}
	if len(r.m.Servers()) != 0 {
		t.Errorf("servers = %+v", r.m.Servers())
	}
}
