package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dshq/dsh/acp/acptest"
)

// toolNames lists the tools a recorded model request offered.
func toolNames(req map[string]any) []string {
	var out []string
	ts, _ := req["tools"].([]any)
	for _, t := range ts {
		m, _ := t.(map[string]any)
		f, _ := m["function"].(map[string]any)
		if n, ok := f["name"].(string); ok {
			out = append(out, n)
		}
	}
	return out
}

func hasName(names []string, want string) bool {
	for _, n := range names {
		if n == want {
			return true
		}
	}
	return false
}

// calcServer is an MCP server (the Go SDK's) over streamable HTTP with one
// tool, add; it refuses requests without the session's header.
func calcServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "calc", Version: "1"}, nil)
	var calls atomic.Int32
	type addArgs struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	mcpsdk.AddTool(srv, &mcpsdk.Tool{Name: "add", Description: "Add two integers.", Annotations: &mcpsdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcpsdk.CallToolRequest, a addArgs) (*mcpsdk.CallToolResult, any, error) {
			calls.Add(1)
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: fmt.Sprint(a.A + a.B)}}}, nil, nil
		})
	h := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Calc-Token") != "s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		hs.Close()
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	return hs, &calls
}

// A client's MCP server passed in session/new serves that session only: its
// tool is offered to the model and runs; another session never sees it.
func TestSessionMCPServers(t *testing.T) {
	mcpSrv, calls := calcServer(t)
	model := acptest.New(
		acptest.Tool("m1", "mcp__calc__add", map[string]any{"a": 2, "b": 3}),
		acptest.Text("it is 5"),
		acptest.Text("no calculator here"),
	)
	defer model.Close()
	h := newHarness(t, model)
	init := h.initialize(sdk.ClientCapabilities{})
	if mc := init.AgentCapabilities.McpCapabilities; !mc.Http || !mc.Sse {
		t.Fatalf("mcpCapabilities %+v", mc)
	}
	r, err := h.conn.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: h.dir, McpServers: []sdk.McpServer{{Http: &sdk.McpServerHttpInline{
		Name: "calc", Type: "http", Url: mcpSrv.URL, Headers: []sdk.HttpHeader{{Name: "X-Calc-Token", Value: "s3cret"}},
	}}}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	a := r.SessionId
	h.mustPrompt(a, "add 2 and 3", sdk.StopReasonEndTurn)
	if n := calls.Load(); n != 1 {
		t.Fatalf("add ran %d times; updates %s", n, describe(h.client.updatesOf(a)))
	}
	if st := toolStatuses(h.client.updatesOf(a), "m1"); len(st) == 0 || st[len(st)-1] != string(sdk.ToolCallStatusCompleted) {
		t.Fatalf("m1 statuses %v", st)
	}
	reqs := model.Requests()
	if len(reqs) != 2 || !hasName(toolNames(reqs[0]), "mcp__calc__add") {
		t.Fatalf("the session's MCP tool was not offered: %v", toolNames(reqs[0]))
	}
	if msgs, _ := json.Marshal(reqs[1]["messages"]); !strings.Contains(string(msgs), `"5"`) && !strings.Contains(string(msgs), `5`) {
		t.Fatalf("the tool result did not reach the model: %s", msgs)
	}

	b := h.newSession()
	h.mustPrompt(b, "add again", sdk.StopReasonEndTurn)
	reqs = model.Requests()
	if got := toolNames(reqs[2]); hasName(got, "mcp__calc__add") || !hasName(got, "bash") {
		t.Fatalf("another session sees the first session's MCP tool (or no tools): %v", got)
	}
	h.close()
}

// A task call's child shows its activity under the parent's call, on the
// parent's session; the child's approval is asked on the parent's call.
func TestSubagentActivityNestsUnderTaskCall(t *testing.T) {
	model := acptest.New(
		acptest.Tool("t1", "task", map[string]any{"description": "make a file", "prompt": "create child.txt"}),
		acptest.Tool("b1", "bash", map[string]any{"command": "touch child.txt", "description": "create the file"}),
		acptest.Text("child ", "finished the file"),
		acptest.Text("all done"),
	)
	defer model.Close()
	h := newHarness(t, model)
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	h.mustPrompt(id, "delegate please", sdk.StopReasonEndTurn)
	h.close()

	if _, err := os.Stat(filepath.Join(h.dir, "child.txt")); err != nil {
		t.Fatalf("the child's command did not run: %v", err)
	}
	us := h.client.updatesOf(id)
	var summaries []string
	for _, u := range us {
		if tu := u.ToolCallUpdate; tu != nil && tu.ToolCallId == "t1" && tu.Status == nil {
			for _, c := range tu.Content {
				if c.Content != nil && c.Content.Content.Text != nil {
					summaries = append(summaries, c.Content.Content.Text.Text)
				}
			}
		}
		if u.ToolCall != nil && u.ToolCall.ToolCallId == "b1" || u.ToolCallUpdate != nil && u.ToolCallUpdate.ToolCallId == "b1" {
			t.Errorf("the child's own call leaked onto the parent's session as a card: %s", describe([]sdk.SessionUpdate{u}))
		}
	}
	sawBash, sawText := false, false
	for _, s := range summaries {
		if strings.Contains(s, "↳ bash") {
			sawBash = true
		}
		if strings.Contains(s, "↳ bash") && strings.Contains(s, "child finished the file") {
			sawText = true
		}
	}
	if !sawBash || !sawText {
		t.Fatalf("task call summaries lack the child's activity: %q", summaries)
	}
	if st := toolStatuses(us, "t1"); len(st) == 0 || st[len(st)-1] != string(sdk.ToolCallStatusCompleted) {
		t.Fatalf("t1 statuses %v", st)
	}
	// The child's bash call needed approval: asked on the parent's call,
	// which the editor knows.
	h.client.mu.Lock()
	reqs := append([]sdk.RequestPermissionRequest(nil), h.client.permReqs...)
	h.client.mu.Unlock()
	if len(reqs) == 0 {
		t.Fatal("the child's bash call asked for no approval")
	}
	for _, r := range reqs {
		if r.SessionId != id || r.ToolCall.ToolCallId != "t1" {
			t.Fatalf("permission asked on session %s call %s; want %s t1", r.SessionId, r.ToolCall.ToolCallId, id)
		}
	}
	child := false
	if testing.Verbose() {
		j, _ := json.Marshal(reqs)
		t.Logf("permission requests: %s", j)
		t.Logf("summaries: %q", summaries)
	}
	for _, r := range reqs {
		if c := r.ToolCall.Content; len(c) > 0 && c[0].Content != nil && c[0].Content.Content.Text != nil &&
			strings.Contains(c[0].Content.Content.Text.Text, "bash") {
			child = true
		}
	}
	if !child {
		j, _ := json.Marshal(reqs)
		t.Fatalf("no permission request names the child's bash call: %s", j)
	}
}
