package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// Every goroutine the manager, its servers' connections and the test
// servers start must be gone when the tests end. No go-sdk goroutine needs
// to be allowed: the manager waits for each connection to close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ---- a host with a scripted model --------------------------------------

type rig struct {
	t     *testing.T
	h     *core.Host
	model *scripted.Adapter
	m     *mcp.Manager
}

// newRig builds the spine with invariants on, a scripted model "mock" and
// an MCP manager over its registry and prompt. The manager closes before
// the host.
func newRig(t *testing.T, o mcp.Options, entries ...scripted.Entry) *rig {
	t.Helper()
	h, err := core.New(core.Options{Invariants: true})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, h: h, model: scripted.New(entries...)}
	if _, err := h.LLM.RegisterModels([]string{"mock"}, r.model); err != nil {
		t.Fatal(err)
	}
	o.Tools, o.Prompt = h.Tools, h.Prompt
	if o.Secrets == nil {
		o.Secrets = h.Secrets.Add // as the plugin wires it
	}
	if o.Home == "" {
		o.Home = t.TempDir()
	}
	if o.RestartBackoff == 0 {
		o.RestartBackoff = 200 * time.Millisecond
	}
	m, err := mcp.New(o)
	if err != nil {
		t.Fatal(err)
	}
	r.m = m
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("closing the manager: %v", err)
		}
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("closing host: %v", err)
		}
	})
	return r
}

func (r *rig) agent(opts agent.Options) agent.Agent {
	r.t.Helper()
	if opts.Model == "" {
		opts.Model = "mock"
	}
	hd, err := r.h.Agents.Create(context.Background(), agent.CreateOptions{AgentID: "a1", SessionID: "a1-session", Options: opts})
	if err != nil {
		r.t.Fatal(err)
	}
	return hd.Agent
}

// run sends a prompt and waits until the agent is idle.
func (r *rig) run(a agent.Agent, prompt string) {
	r.t.Helper()
	if err := a.Send(context.Background(), []llm.Block{llm.Text(prompt)}, llm.Source{}); err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := a.WhenIdle(ctx); err != nil {
		r.t.Fatalf("agent never went idle: %v", err)
	}
}

// results returns the tool/result payloads of a session, by call id.
func results(t *testing.T, s *session.Session) map[llm.CallID]session.ToolResult {
	t.Helper()
	out := map[llm.CallID]session.ToolResult{}
	for _, e := range s.Events() {
		if e.Type != session.TypeToolResult {
			continue
		}
		tr, err := session.Decode[session.ToolResult](e)
		if err != nil {
			t.Fatal(err)
		}
		out[tr.CallID] = tr
	}
	return out
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func state(m *mcp.Manager, name string) mcp.State {
	st, _ := m.Server(name)
	return st.State
}

func toolNames(reg *tool.Registry, prefix string) []string {
	var out []string
	for _, i := range reg.Visible(nil) {
		if strings.HasPrefix(i.Name, prefix) {
			out = append(out, i.Name)
		}
	}
	return out
}

func has(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func textOf(r tool.Result) string { return llm.TextOf(r.Content) }

// exec runs one registry call outside an agent.
func execute(t *testing.T, reg *tool.Registry, name string, args any) tool.Outcome {
	t.Helper()
	b, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return reg.Execute(ctx, tool.NewCall("c1", name, string(b), nil), tool.ExecOptions{})
}

// ---- the in-repo Go server over streamable HTTP ------------------------

// goServer is an MCP server built with the go-sdk's server side, served by
// an httptest server that requires a bearer token.
type goServer struct {
	srv      *sdk.Server
	http     *httptest.Server
	calls    atomic.Int64 // tool calls received
	requests atomic.Int64 // HTTP requests received
	down     atomic.Bool  // answer every request with 503
	slowIn   chan struct{}
	slowOut  chan error // the slow handler's context error
	mu       sync.Mutex
	seen     []string
}

const token = "Bearer s3cret"

func newGoServer(t *testing.T) *goServer {
	t.Helper()
	g := &goServer{slowIn: make(chan struct{}, 4), slowOut: make(chan error, 4)}
	g.srv = sdk.NewServer(&sdk.Implementation{Name: "gotest", Version: "1"}, &sdk.ServerOptions{
		Instructions: "Use add for sums; slow waits until cancelled.",
	})
	type addArgs struct {
		A int `json:"a" jsonschema:"first addend"`
		B int `json:"b" jsonschema:"second addend"`
	}
	sdk.AddTool(g.srv, &sdk.Tool{Name: "add", Description: "Add two integers.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, a addArgs) (*sdk.CallToolResult, any, error) {
			g.record("add")
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(a.A + a.B)}}}, nil, nil
		})
	type slowArgs struct {
		Seconds int `json:"seconds"`
	}
	sdk.AddTool(g.srv, &sdk.Tool{Name: "slow", Description: "Wait, then answer."},
		func(ctx context.Context, req *sdk.CallToolRequest, a slowArgs) (*sdk.CallToolResult, any, error) {
			g.record("slow")
			g.slowIn <- struct{}{}
			select {
			case <-ctx.Done():
				g.slowOut <- ctx.Err()
				return nil, nil, ctx.Err()
			case <-time.After(time.Duration(a.Seconds) * time.Second):
				g.slowOut <- nil
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil, nil
			}
		})
	raw := func(name, desc string, res func() *sdk.CallToolResult) {
		g.srv.AddTool(&sdk.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				g.record(name)
				return res(), nil
			})
	}
	raw("image", "Return a tiny image.", func() *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "an image:"}, &sdk.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}}}
	})
	raw("fail", "Always fails.", func() *sdk.CallToolResult {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "disk on fire"}}}
	})
	raw("resources", "Return a link and an embedded resource.", func() *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.ResourceLink{URI: "file:///tmp/a.txt", Name: "a.txt", MIMEType: "text/plain"},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "memo://1", MIMEType: "text/plain", Text: "hello memo"}},
		}}
	})
	raw("structured", "Return structured content only.", func() *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{}, StructuredContent: map[string]any{"temp": 21, "unit": "C"}}
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return g.srv }, nil)
	g.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.requests.Add(1)
		if g.down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		if r.Header.Get("Authorization") != token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	// Registered before the rig's cleanup, so it runs after the manager
	// closed its connections (cleanups run last-in first-out).
	t.Cleanup(func() {
		g.http.Close()
		// Sessions whose client vanished while the server was down would
		// wait for their idle timeout; end them with the test.
		for ss := range g.srv.Sessions() {
			_ = ss.Close()
		}
	})
	return g
}

func (g *goServer) record(name string) {
	g.calls.Add(1)
	g.mu.Lock()
	g.seen = append(g.seen, name)
	g.mu.Unlock()
}

func (g *goServer) called(name string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, s := range g.seen {
		if s == name {
			n++
		}
	}
	return n
}

func (g *goServer) config(name string) mcp.ServerConfig {
	return mcp.ServerConfig{Name: name, Type: "http", URL: g.http.URL, Headers: map[string]string{"Authorization": "${GO_TOKEN}"}}
}

// env resolves GO_TOKEN for the go server's header.
func env(k string) (string, bool) {
	if k == "GO_TOKEN" {
		return token, true
	}
	return os.LookupEnv(k)
}

// ---- npm servers --------------------------------------------------------

// nodeServer returns the path of an npm MCP server's entry point, or skips
// when node or node_modules are missing.
func nodeServer(t testing.TB, pkg string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	p, err := filepath.Abs(filepath.Join("..", "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is not installed (run npm ci at the repository root)", pkg)
	}
	return p
}

func everything(t testing.TB, name string) mcp.ServerConfig {
	return mcp.ServerConfig{Name: name, Command: "node", Args: []string{nodeServer(t, "server-everything"), "stdio"}}
}

func validSchema(t *testing.T, raw json.RawMessage) {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("schema %s: %v", raw, err)
	}
	if _, err := s.Resolve(nil); err != nil {
		t.Fatalf("schema %s does not resolve: %v", raw, err)
	}
}
