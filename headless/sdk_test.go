package headless_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshq/dsh/internal/fakeanthropic"
)

// These tests run the official Claude Agent SDK from npm with dsh as its
// Claude Code executable (pathToClaudeCodeExecutable), dsh on a fake
// Anthropic API on loopback. Each checks the messages the SDK yields.

const sdkScript = "testdata/sdk.mjs"

func msgs(rep map[string]any, key string) []map[string]any {
	var out []map[string]any
	list, _ := rep[key].([]any)
	for _, m := range list {
		out = append(out, m.(map[string]any))
	}
	return out
}

func ofType(ms []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, m := range ms {
		if m["type"] == typ {
			out = append(out, m)
		}
	}
	return out
}

func types(ms []map[string]any) string {
	var out []string
	for _, m := range ms {
		t := m["type"].(string)
		if st, ok := m["subtype"].(string); ok {
			t += "/" + st
		}
		out = append(out, t)
	}
	return strings.Join(out, " ")
}

// blocks returns the content blocks of assistant or user messages.
func blocks(ms []map[string]any) []map[string]any {
	var out []map[string]any
	for _, m := range ms {
		msg, _ := m["message"].(map[string]any)
		content, _ := msg["content"].([]any)
		for _, b := range content {
			out = append(out, b.(map[string]any))
		}
	}
	return out
}

func lastResult(t *testing.T, ms []map[string]any) map[string]any {
	t.Helper()
	rs := ofType(ms, "result")
	if len(rs) == 0 {
		t.Fatalf("no result message in %s", types(ms))
	}
	return rs[len(rs)-1]
}

func toolResultsOf(req fakeanthropic.Request) []fakeanthropic.Block { return req.ToolResults() }

func TestSDKQueryStreamsMessages(t *testing.T) {
	e := newEnv(t, func(fakeanthropic.Request) fakeanthropic.Reply {
		return fakeanthropic.Reply{Text: "Hello from the fake model.", Chunks: 3}
	})
	rep := e.node(sdkScript, "query")
	ms := msgs(rep, "messages")
	if ms[0]["type"] != "system" || ms[0]["subtype"] != "init" {
		t.Fatalf("first message is not system/init: %s", types(ms))
	}
	init := ms[0]
	sid, _ := init["session_id"].(string)
	if len(sid) != 36 || init["cwd"] != e.dir || init["permissionMode"] != "default" {
		t.Fatalf("init %v", init)
	}
	tools, _ := init["tools"].([]any)
	if !containsAny(tools, "Bash") || !containsAny(tools, "Read") {
		t.Fatalf("init tools %v", tools)
	}
	// Partial messages were asked for: the text arrived as deltas first.
	var deltas []string
	for _, m := range ofType(ms, "stream_event") {
		ev := m["event"].(map[string]any)
		if ev["type"] == "content_block_delta" {
			deltas = append(deltas, ev["delta"].(map[string]any)["text"].(string))
		}
	}
	if strings.Join(deltas, "") != "Hello from the fake model." || len(deltas) != 3 {
		t.Fatalf("text deltas %q", deltas)
	}
	as := ofType(ms, "assistant")
	if len(as) != 1 || blocks(as)[0]["text"] != "Hello from the fake model." || as[0]["session_id"] != sid {
		t.Fatalf("assistant messages %v", as)
	}
	res := lastResult(t, ms)
	if res["subtype"] != "success" || res["is_error"] != false || res["result"] != "Hello from the fake model." || res["session_id"] != sid || res["num_turns"].(float64) != 1 {
		t.Fatalf("result %v", res)
	}
	if u := res["usage"].(map[string]any); u["input_tokens"].(float64) != 100 || u["output_tokens"].(float64) != 10 {
		t.Fatalf("usage %v", u)
	}
	if cost := res["total_cost_usd"].(float64); cost <= 0 {
		t.Fatalf("total_cost_usd %v", cost)
	}
}

func TestSDKMultiTurnStreamingInput(t *testing.T) {
	e := newEnv(t, func(req fakeanthropic.Request) fakeanthropic.Reply {
		last := strings.TrimSpace(req.LastUserText())
		if strings.HasPrefix(last, "second") {
			if strings.Contains(req.Text(), "remember the number 7") {
				return fakeanthropic.Reply{Text: "The number was 7."}
			}
			return fakeanthropic.Reply{Text: "I have no earlier message."}
		}
		return fakeanthropic.Reply{Text: "Noted."}
	})
	rep := e.node(sdkScript, "multiturn")
	ms := msgs(rep, "messages")
	rs := ofType(ms, "result")
	if len(rs) != 2 {
		t.Fatalf("want 2 results, got %s", types(ms))
	}
	if rs[0]["result"] != "Noted." || rs[1]["result"] != "The number was 7." || rs[0]["session_id"] != rs[1]["session_id"] {
		t.Fatalf("results %v / %v", rs[0], rs[1])
	}
	reqs := e.model.Requests()
	if len(reqs) != 2 || len(reqs[1].Messages) != 3 {
		t.Fatalf("requests %d, second has %d messages", len(reqs), len(reqs[len(reqs)-1].Messages))
	}
}

func TestSDKCanUseToolDeniesAndRewrites(t *testing.T) {
	e := newEnv(t, nil)
	e.model.SetReply(func(req fakeanthropic.Request) fakeanthropic.Reply {
		switch len(toolResultsOf(req)) {
		case 0:
			return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_deny", Name: "write", Input: map[string]string{"file_path": filepath.Join(e.dir, "denied.txt"), "content": "no"}}}}
		case 1:
			return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_allow", Name: "write", Input: map[string]string{"file_path": filepath.Join(e.dir, "allowed.txt"), "content": "original"}}}}
		}
		return fakeanthropic.Reply{Text: "Both calls are done."}
	})
	rep := e.node(sdkScript, "canusetool")
	seen := rep["seen"].(map[string]any)["canUseTool"].([]any)
	if len(seen) != 2 {
		t.Fatalf("canUseTool was called %d times: %v", len(seen), seen)
	}
	first := seen[0].(map[string]any)
	if first["name"] != "Write" || first["toolUseID"] != "toolu_deny" || first["input"].(map[string]any)["content"] != "no" {
		t.Fatalf("first canUseTool call %v", first)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "denied.txt")); err == nil {
		t.Fatal("the denied command ran")
	}
	// The rewrite is what ran.
	if b, err := os.ReadFile(filepath.Join(e.dir, "allowed.txt")); err != nil || string(b) != "rewritten" {
		t.Fatalf("allowed.txt = %q, %v (want the rewritten command's output)", b, err)
	}
	ms := msgs(rep, "messages")
	var results []map[string]any
	for _, b := range blocks(ofType(ms, "user")) {
		if b["type"] == "tool_result" {
			results = append(results, b)
		}
	}
	if len(results) != 2 || results[0]["is_error"] != true || !strings.Contains(fmt.Sprint(results[0]["content"]), "no denied.txt, please") || results[1]["is_error"] != false {
		t.Fatalf("tool results %v", results)
	}
	res := lastResult(t, ms)
	den, _ := res["permission_denials"].([]any)
	if res["result"] != "Both calls are done." || len(den) != 1 || den[0].(map[string]any)["tool_use_id"] != "toolu_deny" {
		t.Fatalf("result %v", res)
	}
	// The log records the rewrite: effective and original arguments.
	export := e.dsh("", "sessions", "export", res["session_id"].(string))
	var call map[string]any
	for _, ev := range lines(t, export.stdout) {
		if ev["type"] == "tool/call" && ev["data"].(map[string]any)["callId"] == "toolu_allow" {
			call = ev["data"].(map[string]any)
		}
	}
	if call == nil || !strings.Contains(call["arguments"].(string), `"content":"rewritten"`) ||
		!strings.Contains(fmt.Sprint(call["originalArguments"]), `"content":"original"`) || call["rewrittenBy"] != "sdk:canUseTool" {
		t.Fatalf("logged tool/call %v", call)
	}
	// And the model saw the rewritten call's result for it.
	reqs := e.model.Requests()
	if last := reqs[len(reqs)-1].ToolResults(); len(last) != 2 || last[1].IsError {
		t.Fatalf("final request's tool results %+v", last)
	}
}

func TestSDKHookCallbackBlocksTool(t *testing.T) {
	e := newEnv(t, func(req fakeanthropic.Request) fakeanthropic.Reply {
		if trs := toolResultsOf(req); len(trs) > 0 {
			return fakeanthropic.Reply{Text: "The hook answered: " + fakeanthropic.Request{Messages: []fakeanthropic.Message{{Role: "user", Content: trs[0].Content}}}.Text()}
		}
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_hook", Name: "bash", Input: map[string]string{"command": "touch hooked.txt", "description": "touch"}}}}
	})
	rep := e.node(sdkScript, "hook")
	hooks := rep["seen"].(map[string]any)["hooks"].([]any)
	if len(hooks) != 1 {
		t.Fatalf("hook callbacks %v (dsh stderr %v)", hooks, rep["stderr"])
	}
	h := hooks[0].(map[string]any)
	if h["event"] != "PreToolUse" || h["tool"] != "Bash" || h["command"] != "touch hooked.txt" || h["toolUseID"] != "toolu_hook" {
		t.Fatalf("hook input %v", h)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "hooked.txt")); err == nil {
		t.Fatal("the blocked command ran")
	}
	res := lastResult(t, msgs(rep, "messages"))
	if !strings.Contains(fmt.Sprint(res["result"]), "blocked by the SDK hook") {
		t.Fatalf("result %v", res)
	}
}

func TestSDKInProcessMCPTool(t *testing.T) {
	e := newEnv(t, func(req fakeanthropic.Request) fakeanthropic.Reply {
		if trs := toolResultsOf(req); len(trs) > 0 {
			return fakeanthropic.Reply{Text: "The sum is " + strings.TrimSpace(fakeanthropic.Request{Messages: []fakeanthropic.Message{{Role: "user", Content: trs[0].Content}}}.Text()) + "."}
		}
		if _, ok := req.HasTool("mcp__calc__add"); !ok {
			return fakeanthropic.Reply{Text: "no calc tool was offered"}
		}
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_add", Name: "mcp__calc__add", Input: map[string]int{"a": 2, "b": 3}}}}
	})
	rep := e.node(sdkScript, "mcp")
	calls := rep["seen"].(map[string]any)["mcpCalls"].([]any)
	if len(calls) != 1 || calls[0].(map[string]any)["a"].(float64) != 2 {
		t.Fatalf("the SDK tool was called %v (dsh stderr %v)", calls, rep["stderr"])
	}
	ms := msgs(rep, "messages")
	init := ms[0]
	servers, _ := init["mcp_servers"].([]any)
	if len(servers) != 1 || servers[0].(map[string]any)["name"] != "calc" || servers[0].(map[string]any)["status"] != "connected" {
		t.Fatalf("init mcp_servers %v", servers)
	}
	if res := lastResult(t, ms); res["result"] != "The sum is 5." {
		t.Fatalf("result %v", res)
	}
	var uses []string
	for _, b := range blocks(ofType(ms, "assistant")) {
		if b["type"] == "tool_use" {
			uses = append(uses, b["name"].(string))
		}
	}
	if strings.Join(uses, ",") != "mcp__calc__add" {
		t.Fatalf("tool uses %v", uses)
	}
}

func TestSDKInterrupt(t *testing.T) {
	e := newEnv(t, func(req fakeanthropic.Request) fakeanthropic.Reply {
		if len(toolResultsOf(req)) > 0 {
			return fakeanthropic.Reply{Text: "the sleep finished"}
		}
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_sleep", Name: "bash", Input: map[string]string{"command": "sleep 30", "description": "wait"}}}}
	})
	rep := e.node(sdkScript, "interrupt")
	ms := msgs(rep, "messages")
	res := lastResult(t, ms)
	if res["subtype"] != "error_during_execution" || res["is_error"] != true || !strings.Contains(fmt.Sprint(res["errors"]), "interrupted") {
		t.Fatalf("result after interrupt %v\nmessages %v", res, ms)
	}
	if el := rep["elapsedMs"].(float64); el > 20000 {
		t.Fatalf("the interrupted turn took %v ms (the command should have been stopped)", el)
	}
	if n := len(e.model.Requests()); n != 1 {
		t.Fatalf("%d model requests after the interrupt (want 1)", n)
	}
}

func TestSDKResume(t *testing.T) {
	e := newEnv(t, func(req fakeanthropic.Request) fakeanthropic.Reply {
		if strings.Contains(req.LastUserText(), "which word") {
			if strings.Contains(req.Text(), "zebra") {
				return fakeanthropic.Reply{Text: "The word was zebra."}
			}
			return fakeanthropic.Reply{Text: "I do not know."}
		}
		return fakeanthropic.Reply{Text: "Remembered."}
	})
	rep := e.node(sdkScript, "resume")
	resumed := msgs(rep, "resumed")
	res := lastResult(t, resumed)
	if res["result"] != "The word was zebra." || res["session_id"] != rep["id"] || resumed[0]["session_id"] != rep["id"] {
		t.Fatalf("resumed result %v (first session %v)", res, rep["id"])
	}
}

func containsAny(xs []any, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

var _ = json.Marshal

// subagentModel answers as the reviewer inside a child whose system
// prompt is the agent's, and as a main agent that delegates to it.
func subagentModel(req fakeanthropic.Request) fakeanthropic.Reply {
	if strings.Contains(req.SystemText(), "You are the reviewer agent.") {
		return fakeanthropic.Reply{Text: "review: looks fine"}
	}
	if trs := req.ToolResults(); len(trs) > 0 {
		return fakeanthropic.Reply{Text: "The reviewer said: " + strings.TrimSpace(fakeanthropic.Request{Messages: []fakeanthropic.Message{{Role: "user", Content: trs[0].Content}}}.Text())}
	}
	return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_task", Name: "task",
		Input: map[string]string{"description": "review", "prompt": "review the change", "subagent_type": "reviewer"}}}}
}

// Agents the SDK defines in initialize are subagents the model can use.
func TestSDKAgents(t *testing.T) {
	e := newEnv(t, subagentModel)
	rep := e.node(sdkScript, "agents")
	if a := fmt.Sprint(rep["agents"]); !strings.Contains(a, "reviewer") || !strings.Contains(a, "Reviews changes") {
		t.Fatalf("initialize agents %v", a)
	}
	ms := msgs(rep, "messages")
	if a := fmt.Sprint(ms[0]["agents"]); !strings.Contains(a, "reviewer") {
		t.Fatalf("init agents %v", a)
	}
	if res := lastResult(t, ms); res["result"] != "The reviewer said: review: looks fine" {
		t.Fatalf("result %v (dsh stderr %v)", res, rep["stderr"])
	}
}

// --agents defines subagents on the command line.
func TestAgentsFlag(t *testing.T) {
	e := newEnv(t, subagentModel)
	r := e.dsh("", "-p", "--allowedTools", "Agent", "--agents", `{"reviewer": {"description": "Reviews changes", "prompt": "You are the reviewer agent.", "tools": ["Read", "Grep"]}}`, "ask the reviewer")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "The reviewer said: review: looks fine" {
		t.Fatalf("exit %d: %q %s", r.code, r.stdout, r.stderr)
	}
	// The child saw only the tools the definition names.
	for _, req := range e.model.Requests() {
		if strings.Contains(req.SystemText(), "You are the reviewer agent.") {
			var names []string
			for _, tl := range req.Tools {
				names = append(names, tl.Name)
			}
			if strings.Join(names, ",") != "read,grep" && strings.Join(names, ",") != "grep,read" {
				t.Fatalf("the reviewer's tools: %v", names)
			}
		}
	}
	if bad := e.dsh("", "-p", "--agents", `{"x": 1}`, "hi"); bad.code != 2 || !strings.Contains(bad.stderr, "--agents") {
		t.Fatalf("malformed --agents: %+v", bad)
	}
}

// --permission-prompt-tool routes approvals to an MCP tool (here the SDK's
// in-process one); its allow with updatedInput is the consistent rewrite.
func TestSDKPermissionPromptTool(t *testing.T) {
	e := newEnv(t, nil)
	e.model.SetReply(func(req fakeanthropic.Request) fakeanthropic.Reply {
		if len(req.ToolResults()) > 0 {
			return fakeanthropic.Reply{Text: "written"}
		}
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_w", Name: "write", Input: map[string]string{"file_path": filepath.Join(e.dir, "p.txt"), "content": "from the model"}}}}
	})
	rep := e.node(sdkScript, "prompttool")
	asked := rep["seen"].(map[string]any)["canUseTool"].([]any)
	if len(asked) != 1 || asked[0].(map[string]any)["tool_name"] != "Write" {
		t.Fatalf("the prompt tool was asked %v (dsh stderr %v)", asked, rep["stderr"])
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, "p.txt")); err != nil || string(b) != "from the prompt tool" {
		t.Fatalf("p.txt = %q, %v", b, err)
	}
	if res := lastResult(t, msgs(rep, "messages")); res["result"] != "written" {
		t.Fatalf("result %v", res)
	}
}

// set_permission_mode and set_model act on the running session.
func TestSDKSetPermissionModeAndModel(t *testing.T) {
	e := newEnv(t, nil)
	e.model.SetReply(func(req fakeanthropic.Request) fakeanthropic.Reply {
		last := req.Messages[len(req.Messages)-1]
		if len(last.Content) > 0 && last.Content[0].Type == "tool_result" {
			return fakeanthropic.Reply{Text: "tool said: " + strings.TrimSpace(fakeanthropic.Request{Messages: []fakeanthropic.Message{{Role: "user", Content: last.Content[0].Content}}}.Text())}
		}
		name := "first.txt"
		if strings.Contains(req.LastUserText(), "second") {
			name = "second.txt"
		}
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_" + name, Name: "write", Input: map[string]string{"file_path": filepath.Join(e.dir, name), "content": "x"}}}}
	})
	rep := e.node(sdkScript, "controls")
	rs := ofType(msgs(rep, "messages"), "result")
	if len(rs) != 2 {
		t.Fatalf("results: %v", rs)
	}
	// In default mode the write asked and, with nobody to answer, was
	// refused; after set_permission_mode acceptEdits it ran.
	if _, err := os.Stat(filepath.Join(e.dir, "first.txt")); err == nil {
		t.Fatal("first.txt was written in default mode")
	}
	if _, err := os.Stat(filepath.Join(e.dir, "second.txt")); err != nil {
		t.Fatalf("second.txt was not written after set_permission_mode: %v (results %v)", err, rs)
	}
	reqs := e.model.Requests()
	if first, last := reqs[0].Model, reqs[len(reqs)-1].Model; first != "claude-sonnet-4-5" || last != "claude-haiku-4-5" {
		t.Fatalf("models requested: first %q, last %q (want the set_model choice last)", first, last)
	}
	var inits []map[string]any
	for _, m := range ofType(msgs(rep, "messages"), "system") {
		if m["subtype"] == "init" {
			inits = append(inits, m)
		}
	}
	if len(inits) != 2 || inits[0]["permissionMode"] != "default" || inits[1]["permissionMode"] != "acceptEdits" || inits[1]["model"] != "anthropic/claude-haiku-4-5" {
		t.Fatalf("init lines %v", inits)
	}
}
