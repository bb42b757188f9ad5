package mcpserve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dshq/dsh/internal/dshtest"
	"github.com/dshq/dsh/internal/fakeanthropic"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/tool"
)

func TestMain(m *testing.M) { dshtest.Main(m, "..", raceBuild) }

// reply is the fake model of these tests: "sleep" runs a long command,
// "ask" a command that needs approval, anything else answers with the
// number of messages it was sent (so a continued session shows).
func reply(req fakeanthropic.Request) fakeanthropic.Reply {
	last := req.Messages[len(req.Messages)-1]
	prompt := false
	for _, b := range last.Content {
		prompt = prompt || b.Type == "text"
	}
	if !prompt {
		out := fakeanthropic.Request{Messages: []fakeanthropic.Message{{Role: "user", Content: last.Content[0].Content}}}.Text()
		return fakeanthropic.Reply{Text: "tool said: " + strings.TrimSpace(out)}
	}
	text := req.LastUserText()
	switch {
	case strings.Contains(text, "sleep"):
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: fmt.Sprintf("toolu_sleep%d", len(req.Messages)), Name: "bash", Input: map[string]string{"command": "sleep 30", "description": "wait"}}}}
	case strings.Contains(text, "ask"):
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_ask", Name: "write", Input: map[string]string{"file_path": "asked.txt", "content": "touched"}}}}
	}
	return fakeanthropic.Reply{Text: fmt.Sprintf("hi, %d messages", len(req.Messages))}
}

func TestServeWithTheTypeScriptClient(t *testing.T) {
	e := dshtest.New(t, "..", reply)
	rep := e.Node("testdata/client.mjs", "@modelcontextprotocol/sdk", []string{"stdio"})
	tools := rep["tools"].([]any)
	if len(tools) != 1 || tools[0].(map[string]any)["name"] != "dsh" {
		t.Fatalf("tools %v", tools)
	}
	first, second := rep["first"].(map[string]any), rep["second"].(map[string]any)
	if first["result"] != "hi, 1 messages" || first["is_error"] != false || len(first["session_id"].(string)) != 36 {
		t.Fatalf("first call %v", first)
	}
	// The second call continued the session: the model saw the first turn.
	if second["session_id"] != first["session_id"] || second["result"] != "hi, 3 messages" {
		t.Fatalf("second call %v", second)
	}
	if p := fmt.Sprint(rep["progress"]); !strings.Contains(p, "step 1: asking the model") {
		t.Fatalf("progress notifications %s", p)
	}
	// The approval was asked through elicitation and the answer applied.
	el := rep["elicitations"].([]any)
	if len(el) != 1 || !strings.Contains(el[0].(string), "asked.txt") {
		t.Fatalf("elicitations %v", el)
	}
	if asked := rep["asked"].(map[string]any); !strings.HasPrefix(fmt.Sprint(asked["result"]), "tool said: ") || strings.Contains(fmt.Sprint(asked["result"]), "Error") {
		t.Fatalf("approved call %v", asked)
	}
	if _, err := os.Stat(filepath.Join(e.Dir, "asked.txt")); err != nil {
		t.Fatalf("the approved command did not run: %v", err)
	}
	// Cancellation stopped the agent: the call ended long before the
	// command would have, and the session's turn ended aborted.
	if !strings.Contains(fmt.Sprint(rep["cancel"]), "AbortError") || rep["cancelMs"].(float64) > 20000 {
		t.Fatalf("cancel %v after %v ms", rep["cancel"], rep["cancelMs"])
	}
	after := rep["after"].(map[string]any)
	if after["session_id"] != first["session_id"] || after["is_error"] != false {
		t.Fatalf("call after the cancel %v", after)
	}
	sid := first["session_id"].(string)
	waitAborted(t, e, sid)
}

// waitAborted checks that the session has a turn that ended aborted while
// its sleep ran.
func waitAborted(t *testing.T, e *dshtest.Env, sid string) {
	t.Helper()
	ex := e.Run("", "sessions", "export", sid)
	var sawSleep, aborted bool
	for _, ev := range dshtest.Lines(t, ex.Stdout) {
		data, _ := ev["data"].(map[string]any)
		switch ev["type"] {
		case "tool/call":
			sawSleep = sawSleep || strings.Contains(fmt.Sprint(data["arguments"]), "sleep 30")
		case "turn/end":
			if r, _ := data["reason"].(map[string]any); r["kind"] == "aborted" {
				aborted = true
			}
		}
	}
	if !sawSleep || !aborted {
		t.Fatalf("no aborted turn with the sleep in the log (sleep %v, aborted %v):\n%s", sawSleep, aborted, ex.Stdout)
	}
}

func TestServeHTTP(t *testing.T) {
	e := dshtest.New(t, "..", reply)
	cmd := exec.Command(dshtest.Bin, "mcp", "serve", "--http", "127.0.0.1:0")
	cmd.Dir = e.Dir
	cmd.Env = e.Environ("DSH_MCP_TOKEN=secret-token")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`listening on (http://\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	var url string
	select {
	case url = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatal("dsh mcp serve --http did not say where it listens")
	}
	// Every request needs the token.
	for _, auth := range []string{"", "Bearer wrong"} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("auth %q: status %d", auth, resp.StatusCode)
		}
	}
	rep := e.Node("testdata/client.mjs", "@modelcontextprotocol/sdk", []string{"http"}, "DSH_MCP_URL="+url, "DSH_MCP_TOKEN=secret-token")
	first, second := rep["first"].(map[string]any), rep["second"].(map[string]any)
	if first["result"] != "hi, 1 messages" || second["result"] != "hi, 3 messages" || second["session_id"] != first["session_id"] {
		t.Fatalf("calls over HTTP: %v / %v", first, second)
	}
}

// dsh's own MCP client (package mcp, as dsh uses any configured server)
// drives dsh mcp serve: a call, a continued call, a cancelled one.
func TestServeWithDshsClient(t *testing.T) {
	e := dshtest.New(t, "..", reply)
	reg := tool.NewRegistry()
	m, err := mcp.New(mcp.Options{Tools: reg, Cwd: e.Dir, Environ: e.Environ(), CallTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	if err := m.Start(ctx, []mcp.ServerConfig{{Name: "dsh", Command: dshtest.Bin, Args: []string{"mcp", "serve", "--allowedTools", "Bash(sleep:*)"}, Startup: mcp.StartupEager}}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := m.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	call := func(ctx context.Context, args map[string]string) tool.Outcome {
		b, _ := json.Marshal(args)
		return reg.Execute(ctx, tool.Call{ID: llm.CallID(fmt.Sprint(time.Now().UnixNano())), Name: "mcp__dsh__dsh", Args: b, Raw: string(b)}, tool.ExecOptions{})
	}
	first := call(ctx, map[string]string{"prompt": "hello", "cwd": e.Dir})
	text := llm.TextOf(first.Result.Content)
	if first.Result.IsError || !strings.HasPrefix(text, "hi, 1 messages") {
		t.Fatalf("first call: %q", text)
	}
	sid := regexp.MustCompile(`session_id: ([0-9a-f-]{36})`).FindStringSubmatch(text)
	if sid == nil {
		t.Fatalf("no session id in %q", text)
	}
	second := call(ctx, map[string]string{"prompt": "again", "session_id": sid[1][:8]})
	if got := llm.TextOf(second.Result.Content); !strings.HasPrefix(got, "hi, 3 messages") {
		t.Fatalf("second call (session id prefix): %q", got)
	}
	// Cancel a call while its command runs.
	cctx, stop := context.WithCancel(ctx)
	done := make(chan tool.Outcome, 1)
	start := time.Now()
	go func() { done <- call(cctx, map[string]string{"prompt": "sleep now", "session_id": sid[1]}) }()
	// The model asked for the sleep (the log is written at step ends, so
	// it cannot tell yet): give the command a moment to start.
	deadline := time.Now().Add(30 * time.Second)
	for {
		reqs := e.Model.Requests()
		if len(reqs) > 0 && strings.Contains(reqs[len(reqs)-1].LastUserText(), "sleep now") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the model was never asked to sleep")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	stop()
	out := <-done
	if !out.Result.IsError || time.Since(start) > 20*time.Second {
		t.Fatalf("cancelled call: error %v after %v: %q", out.Result.IsError, time.Since(start), llm.TextOf(out.Result.Content))
	}
	// The server stopped the agent: its turn ended aborted, and the
	// session answers the next call.
	deadline = time.Now().Add(20 * time.Second)
	for {
		ex := e.Run("", "sessions", "export", sid[1]).Stdout
		if strings.Contains(ex, `"kind":"aborted"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled turn did not end aborted:\n%s", ex)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := llm.TextOf(call(ctx, map[string]string{"prompt": "hello after", "session_id": sid[1]}).Result.Content); !strings.HasPrefix(got, "hi, ") {
		t.Fatalf("call after the cancel: %q", got)
	}
}
