package hooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/bash/local"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/hooks"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
	"github.com/dshq/dsh/tools/bashtool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type rig struct {
	h      *core.Host
	model  *scripted.Adapter
	agent  agent.Agent
	bridge *hooks.Bridge
	dir    string
}

func testdata(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rigMode, when set, is the permission mode source of the rigs built;
// rigEnv their settings env.
var (
	rigMode func(session.ID) string
	rigEnv  map[string]string
	// rigTweak, when set, adjusts the bridge options of the rigs built.
	rigTweak func(*hooks.Options)
)

// newRig builds a host with the real bash tool, a scripted model and a
// Claude (or Codex) bridge reading a project settings file with cfg.
func newRig(t *testing.T, dialect, cfg string, approver tool.Approver, entries ...scripted.Entry) *rig {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, ".claude", "settings.json")
	if dialect == hooks.Codex {
		file = filepath.Join(dir, ".codex", "hooks.json")
		if strings.Contains(cfg, "[[hooks.") {
			file = filepath.Join(dir, ".codex", "config.toml")
		}
	}
	os.MkdirAll(filepath.Dir(file), 0o755)
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := core.New(core.Options{Invariants: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	exec, err := local.New(local.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h.Scope.Defer(exec.Close)
	if err := h.Tools.RegisterAll(h.Scope, bashtool.Tools(exec, bashtool.Options{})...); err != nil {
		t.Fatal(err)
	}
	m := scripted.New(entries...)
	if _, err := h.LLM.RegisterModels([]string{"mock"}, m); err != nil {
		t.Fatal(err)
	}
	_, proj := hooks.Files(dialect, "", dir)
	conf := hooks.Load(dialect, nil, proj)
	o := hooks.Options{Dialect: dialect, Config: func(string) *hooks.Config { return &conf },
		Runner: hooks.Runner{Exec: exec, Prompt: hooks.ModelPrompter(h.LLM)}, Trusted: func(string) bool { return true }, Mode: rigMode, Env: rigEnv}
	if rigTweak != nil {
		rigTweak(&o)
	}
	b := hooks.New(o, h.Agents)
	if err := b.Install(h.Scope, h.Tools, h.Sessions, nil); err != nil {
		t.Fatal(err)
	}
	hd, err := h.Agents.Create(context.Background(), agent.CreateOptions{AgentID: "a", Header: session.Header{Cwd: dir},
		Options: agent.Options{Model: "mock", Approver: approver}})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{h: h, model: m, agent: hd.Agent, bridge: b, dir: dir}
}

func (r *rig) run(t *testing.T, prompt string) {
	t.Helper()
	if err := r.agent.Send(context.Background(), []llm.Block{llm.Text(prompt)}, llm.Source{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.agent.WhenIdle(ctx); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) results(t *testing.T) []session.ToolResult {
	var out []session.ToolResult
	for _, e := range r.agent.Session().Events() {
		if e.Type == session.TypeToolResult {
			tr, _ := session.Decode[session.ToolResult](e)
			out = append(out, tr)
		}
	}
	return out
}

func (r *rig) last(t *testing.T, typ string) session.Event {
	e, ok := r.agent.Session().Last(typ)
	if !ok {
		t.Fatalf("no %s event", typ)
	}
	return e
}

func hookCfg(event, matcher, command string, timeout int) string {
	h := map[string]any{"type": "command", "command": command}
	if timeout > 0 {
		h["timeout"] = timeout
	}
	g := map[string]any{"hooks": []any{h}}
	if matcher != "" {
		g["matcher"] = matcher
	}
	b, _ := json.Marshal(map[string]any{"hooks": map[string]any{event: []any{g}}})
	return string(b)
}

func bashCall(id, cmd string) scripted.Entry {
	return scripted.Call(id, "bash", map[string]string{"command": cmd, "description": "run"}, "")
}

func TestPreToolUseGuardBlocks(t *testing.T) {
	r := newRig(t, hooks.Claude, hookCfg("PreToolUse", "Bash", testdata(t, "guard.sh"), 0), nil,
		bashCall("c1", "rm -rf build"), bashCall("c2", "echo safe"), scripted.Text("ok"))
	r.run(t, "clean up")
	rs := r.results(t)
	if !rs[0].IsError || !strings.Contains(llm.TextOf(rs[0].Content), "rm -rf is not allowed") {
		t.Fatalf("guard did not block: %+v", rs[0])
	}
	if rs[1].IsError || !strings.Contains(llm.TextOf(rs[1].Content), "safe") {
		t.Fatalf("safe command: %+v", rs[1])
	}
	res, _ := session.Decode[hooks.Result](r.last(t, hooks.TypeResult))
	if res.Point != "PreToolUse" || res.Decision == "" {
		t.Fatalf("hook/result %+v", res)
	}
	for _, e := range r.agent.Session().Events() {
		if e.Type == hooks.TypeResult && strings.Contains(string(e.Data), "uration") {
			t.Fatal("durable hook events must carry no durations")
		}
	}
}

func TestPreToolUseRewrite(t *testing.T) {
	r := newRig(t, hooks.Claude, hookCfg("PreToolUse", "Bash", testdata(t, "dryrun.py"), 0), nil,
		bashCall("c1", "echo deploy"), scripted.Text("ok"))
	r.run(t, "deploy")
	rs := r.results(t)
	if !strings.Contains(llm.TextOf(rs[0].Content), "deploy --dry-run") {
		t.Fatalf("the rewritten command did not run: %q", llm.TextOf(rs[0].Content))
	}
	tc, _ := session.Decode[session.ToolCall](r.last(t, session.TypeToolCall))
	if !strings.Contains(tc.Arguments, "--dry-run") || tc.OriginalArguments == nil || strings.Contains(*tc.OriginalArguments, "--dry-run") {
		t.Fatalf("tool/call %+v", tc)
	}
	req := r.model.Requests()[1]
	b, _ := json.Marshal(req.Messages)
	if !strings.Contains(string(b), "deploy --dry-run") {
		t.Fatalf("next request does not show the rewritten call: %s", b)
	}
}

func TestUserPromptContext(t *testing.T) {
	r := newRig(t, hooks.Claude, hookCfg("UserPromptSubmit", "", testdata(t, "context.sh"), 0), nil, scripted.Text("ok"))
	r.run(t, "hello")
	b, _ := json.Marshal(r.model.Requests()[0].Messages)
	if !strings.Contains(string(b), "uses Go 1.26 and tabs") {
		t.Fatalf("context missing: %s", b)
	}
}

func TestStopHookLoopGuard(t *testing.T) {
	r := newRig(t, hooks.Claude, hookCfg("Stop", "", testdata(t, "stop.py"), 0), nil,
		scripted.Text("first"), scripted.Text("second"), scripted.Text("never"))
	r.run(t, "work")
	if r.model.Calls() != 2 {
		t.Fatalf("want exactly one forced continuation, got %d model calls", r.model.Calls())
	}
	b, _ := json.Marshal(r.model.Requests()[1].Messages)
	if !strings.Contains(string(b), "run the tests before stopping") {
		t.Fatalf("reason not steered: %s", b)
	}
}

func TestHangingAndGarbageHooks(t *testing.T) {
	cfg := `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[
		{"type":"command","command":"` + testdata(t, "hang.sh") + `","timeout":1},
		{"type":"command","command":"` + testdata(t, "garbage.sh") + `"}]}]}}`
	r := newRig(t, hooks.Claude, cfg, nil, bashCall("c1", "echo still-runs"), scripted.Text("ok"))
	start := time.Now()
	r.run(t, "go")
	if time.Since(start) > 20*time.Second {
		t.Fatal("the hanging hook was not killed at its timeout")
	}
	rs := r.results(t)
	if rs[0].IsError || !strings.Contains(llm.TextOf(rs[0].Content), "still-runs") {
		t.Fatalf("turn must continue: %+v", rs[0])
	}
	var problems int
	for _, e := range r.agent.Session().Events() {
		if e.Type == hooks.TypeResult && strings.Contains(string(e.Data), "invalid JSON") {
			problems++
		}
	}
	if problems != 1 {
		t.Fatalf("invalid JSON should be recorded once, got %d", problems)
	}
}

func TestAskAndPermissionDecisions(t *testing.T) {
	var asked atomic.Int32
	approver := tool.ApproverFunc(func(_ context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
		asked.Add(1)
		return tool.Approval{Allow: false, Reason: "no thanks"}, nil
	})
	r := newRig(t, hooks.Claude, hookCfg("PreToolUse", "Bash|Edit", testdata(t, "askjson.sh"), 0), approver, bashCall("c1", "echo hi"), scripted.Text("ok"))
	r.run(t, "go")
	if asked.Load() != 1 || !strings.Contains(llm.TextOf(r.results(t)[0].Content), "no thanks") {
		t.Fatalf("ask must go to the approver: asked %d", asked.Load())
	}
	// allow skips a downstream ask (a permission-like listener registered first).
	r2 := newRig(t, hooks.Claude, hookCfg("PreToolUse", "Bash", testdata(t, "dryrun.py"), 0), approver, bashCall("c1", "echo deploy"), scripted.Text("ok"))
	r2.h.Tools.PreExecute.Use(func(context.Context, tool.Call, kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
		return tool.Decision{Kind: tool.Ask, Reason: "permission mode asks"}, nil
	})
	before := asked.Load()
	r2.run(t, "deploy")
	if asked.Load() != before || r2.results(t)[0].IsError {
		t.Fatal("a hook's allow must skip the approval prompt")
	}
}

func TestContinueFalseEndsTurn(t *testing.T) {
	r := newRig(t, hooks.Claude, hookCfg("PreToolUse", "", testdata(t, "halt.sh"), 0), nil, bashCall("c1", "echo x"), scripted.Text("never"))
	r.run(t, "go")
	te, _ := session.Decode[session.TurnEnd](r.last(t, session.TypeTurnEnd))
	if te.Reason.Kind != session.EndAborted || te.Reason.Reason != "halted by policy" || r.model.Calls() != 1 {
		t.Fatalf("turn end %+v calls %d", te.Reason, r.model.Calls())
	}
}

func TestPostToolUseFeedbackKeepsOutput(t *testing.T) {
	r := newRig(t, hooks.Claude, hookCfg("PostToolUse", "Bash", testdata(t, "postblock.sh"), 0), nil, bashCall("c1", "echo TOKEN=abc"), scripted.Text("ok"))
	r.run(t, "go")
	rs := r.results(t)
	if !strings.Contains(llm.TextOf(rs[0].Content), "TOKEN=abc") {
		t.Fatal("PostToolUse feedback must not replace the output")
	}
	b, _ := json.Marshal(r.model.Requests()[1].Messages)
	if !strings.Contains(string(b), "secret-looking token") {
		t.Fatalf("feedback missing: %s", b)
	}
}

func TestPayloadsAndEvents(t *testing.T) {
	var (
		mu        sync.Mutex
		modeAsked []session.ID
	)
	rigMode = func(id session.ID) string {
		mu.Lock()
		defer mu.Unlock()
		modeAsked = append(modeAsked, id)
		return "plan"
	}
	defer func() { rigMode = nil }()
	logf := filepath.Join(t.TempDir(), "calls.log")
	t.Setenv("HOOK_LOG", logf)
	rec := testdata(t, "record.sh")
	cfg := `{"hooks":{` +
		`"SessionStart":[{"hooks":[{"type":"command","command":"` + rec + `"}]}],` +
		`"UserPromptSubmit":[{"hooks":[{"type":"command","command":"` + rec + `"}]}],` +
		`"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"` + rec + `"}]}],` +
		`"PostToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"` + rec + `"}]}],` +
		`"PostToolUseFailure":[{"hooks":[{"type":"command","command":"` + rec + `"}]}],` +
		`"Stop":[{"hooks":[{"type":"command","command":"` + rec + `"}]}],` +
		`"SessionEnd":[{"hooks":[{"type":"command","command":"` + rec + `"}]}]}}`
	r := newRig(t, hooks.Claude, cfg, nil, bashCall("c1", "echo hi"), scripted.Call("c2", "nope", map[string]any{}, ""),
		bashCall("c3", "echo failing; exit 7"), scripted.Text("ok"))
	r.run(t, "go")
	r.h.Close(context.Background())
	b, _ := os.ReadFile(logf)
	var events []map[string]any
	for _, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("payload is not JSON: %q", line)
		}
		events = append(events, m)
	}
	seen := map[string]map[string]any{}
	for _, e := range events {
		name := e["hook_event_name"].(string)
		if seen[name] != nil && name == "PostToolUseFailure" {
			t.Errorf("PostToolUseFailure fired twice (an unknown tool never ran): %v", e)
		}
		seen[name] = e
		// Claude Code sends permission_mode on these events only.
		_, hasMode := e["permission_mode"]
		wantMode := map[string]bool{"UserPromptSubmit": true, "PreToolUse": true, "PostToolUse": true, "PostToolUseFailure": true, "Stop": true}[name]
		if e["session_id"] == "" || e["cwd"] != r.dir || hasMode != wantMode || wantMode && e["permission_mode"] != "plan" {
			t.Fatalf("base fields %v", e)
		}
	}
	if p := seen["PostToolUseFailure"]; p["tool_use_id"] != "c3" || p["error"] != "Exit code 7\nfailing" || p["is_interrupt"] != false {
		t.Errorf("PostToolUseFailure payload %v", p)
	}
	for _, want := range []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd"} {
		if seen[want] == nil {
			t.Errorf("no %s payload (saw %v)", want, keys(seen))
		}
	}
	if p := seen["PreToolUse"]; p["tool_name"] != "Bash" || p["tool_input"].(map[string]any)["command"] == nil || p["tool_use_id"] == "" {
		t.Errorf("PreToolUse payload %v", p)
	}
	if p := seen["UserPromptSubmit"]; p["prompt"] != "go" {
		t.Errorf("prompt payload %v", p)
	}
	if p := seen["Stop"]; p["stop_hook_active"] != false {
		t.Errorf("stop payload %v", p)
	}
	// The mode asked for is the session's own.
	mu.Lock()
	defer mu.Unlock()
	if sid := r.agent.Session().ID(); len(modeAsked) == 0 || slices.ContainsFunc(modeAsked, func(id session.ID) bool { return id != sid }) {
		t.Errorf("permission mode asked for sessions %v, want only %s", modeAsked, sid)
	}
}

func keys(m map[string]map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestCodexDialect(t *testing.T) {
	logf := filepath.Join(t.TempDir(), "calls.log")
	t.Setenv("HOOK_LOG", logf)
	cfg := `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"` + testdata(t, "record.sh") + `"},{"type":"command","command":"` + testdata(t, "guard.sh") + `"}]}]}}`
	r := newRig(t, hooks.Codex, cfg, nil, bashCall("c1", "rm -rf /tmp/x"), scripted.Text("ok"))
	r.run(t, "go")
	if rs := r.results(t); !rs[0].IsError {
		t.Fatal("codex guard must block")
	}
	b, _ := os.ReadFile(logf)
	var p map[string]any
	json.Unmarshal([]byte(strings.Split(string(b), "\n")[0]), &p)
	if p["tool_name"] != "Bash" || p["turn_id"] != "1" || p["tool_input"].(map[string]any)["command"] != "rm -rf /tmp/x" {
		t.Fatalf("codex payload %v", p)
	}
}

// Codex's config.toml declares hooks inline, in hooks.json's shape as TOML
// tables; the other tables of the file (and [hooks.state]) are not hooks.
func TestCodexConfigTOML(t *testing.T) {
	logf := filepath.Join(t.TempDir(), "calls.log")
	t.Setenv("HOOK_LOG", logf)
	cfg := `model = "gpt-5-codex"
approval_policy = "on-request"

[mcp_servers.docs]
command = "docs-server"

[[hooks.PreToolUse]]
matcher = "Bash"

[[hooks.PreToolUse.hooks]]
type = "command"
command = "` + testdata(t, "record.sh") + `"

[[hooks.PreToolUse.hooks]]
type = "command"
command = "` + testdata(t, "guard.sh") + `"
timeout = 30

[hooks.state]
"pre_tool_use:0" = { enabled = true }
`
	r := newRig(t, hooks.Codex, cfg, nil, bashCall("c1", "rm -rf /tmp/x"), scripted.Text("ok"))
	r.run(t, "go")
	if rs := r.results(t); !rs[0].IsError {
		t.Fatal("the config.toml guard must block")
	}
	if b, err := os.ReadFile(logf); err != nil || !strings.Contains(string(b), `"tool_name":"Bash"`) {
		t.Fatalf("the recording hook did not run: %q %v", b, err)
	}
	conf := hooks.Load(hooks.Codex, nil, []string{filepath.Join(r.dir, ".codex", "config.toml")})
	if len(conf.Warnings) != 0 || len(conf.Events) != 1 || len(conf.Events["PreToolUse"]) != 1 {
		t.Fatalf("config %+v", conf)
	}
	bad := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(bad, []byte("[[hooks.PreToolUse]\n"), 0o644)
	if conf := hooks.Load(hooks.Codex, []string{bad}, nil); len(conf.Warnings) != 1 || !strings.Contains(conf.Warnings[0], "not valid TOML") {
		t.Fatalf("a malformed config.toml: %+v", conf.Warnings)
	}
}

func TestMatcherAndConfig(t *testing.T) {
	cases := []struct {
		m, s string
		want bool
	}{{"", "Bash", true}, {"*", "x", true}, {"Bash", "Bash", true}, {"Bash", "BashOutput", false},
		{"Edit|Write", "Write", true}, {"Edit|Write", "Read", false}, {"mcp__.*", "mcp__git__status", true}, {"(", "x", false}}
	for _, c := range cases {
		if got := hooks.Match(c.m, c.s); got != c.want {
			t.Errorf("Match(%q, %q) = %v", c.m, c.s, got)
		}
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	os.WriteFile(a, []byte(hookCfg("PreToolUse", "Bash", "./x.sh", 0)), 0o644)
	os.WriteFile(b, []byte(hookCfg("PreToolUse", "Bash", "./x.sh", 0)), 0o644)
	c := hooks.Load(hooks.Claude, []string{a}, []string{b})
	if n := len(c.Matching("PreToolUse", true, "Bash")); n != 1 {
		t.Fatalf("identical commands must run once, got %d", n)
	}
	os.WriteFile(b, []byte(hookCfg("PreToolUse", "Bash", "./y.sh", 0)), 0o644)
	c = hooks.Load(hooks.Claude, []string{a}, []string{b})
	if n := len(c.Matching("PreToolUse", false, "Bash")); n != 1 {
		t.Fatalf("untrusted project hooks must not run, got %d", n)
	}
	os.WriteFile(b, []byte(`{"disableAllHooks":true}`), 0o644)
	c = hooks.Load(hooks.Claude, []string{a}, []string{b})
	if n := len(c.Matching("PreToolUse", true, "Bash")); n != 0 {
		t.Fatal("disableAllHooks")
	}
	// An untrusted project cannot switch off the user's own hooks.
	if n := len(c.Matching("PreToolUse", false, "Bash")); n != 1 {
		t.Fatalf("an untrusted project's disableAllHooks silenced the user's hook (%d run)", n)
	}
	os.WriteFile(a, []byte(`{"disableAllHooks":true}`), 0o644)
	os.WriteFile(b, []byte(hookCfg("PreToolUse", "Bash", "./y.sh", 0)), 0o644)
	c = hooks.Load(hooks.Claude, []string{a}, []string{b})
	if n := len(c.Matching("PreToolUse", true, "Bash")); n != 0 {
		t.Fatal("the user's disableAllHooks must hold for trusted projects too")
	}
	// A project hook identical to one in the user's dsh settings does not
	// hide the user's: it still runs when the project is untrusted.
	os.WriteFile(b, []byte(hookCfg("PreToolUse", "Bash", "./x.sh", 0)), 0o644)
	c = hooks.Load(hooks.Claude, nil, []string{b})
	var user map[string]json.RawMessage
	if err := json.Unmarshal([]byte(hookCfg("PreToolUse", "Bash", "./x.sh", 0)), &user); err != nil {
		t.Fatal(err)
	}
	var events map[string]json.RawMessage
	if err := json.Unmarshal(user["hooks"], &events); err != nil {
		t.Fatal(err)
	}
	c.AddRaw("/home/u/.dsh/settings.json", events, false)
	if got := c.Matching("PreToolUse", false, "Bash"); len(got) != 1 || got[0].Project {
		t.Fatalf("the user's copy of a project hook: %+v", got)
	}
}

func TestCodec(t *testing.T) {
	zero, two, one := 0, 2, 1
	o := hooks.Decode(&two, "{\"decision\":\"approve\"}", "nope", "PreToolUse")
	if o.Decision != "block" || o.Reason != "nope" {
		t.Fatalf("exit 2: %+v", o)
	}
	o = hooks.Decode(&one, "", "oops", "PreToolUse")
	if o.Decision != "" {
		t.Fatal("exit 1 is non-blocking")
	}
	o = hooks.Decode(&zero, `{"hookSpecificOutput":{"hookEventName":"PostToolUse","permissionDecision":"deny"}}`, "", "PreToolUse")
	if o.Decision != "" {
		t.Fatal("a block for another event is discarded")
	}
	m := hooks.Merge([]hooks.Output{{Decision: "allow", Reason: "a"}, {Decision: "ask", Reason: "b"}, {Decision: "ask", Reason: "c"},
		{UpdatedInput: json.RawMessage(`{"x":1}`)}, {UpdatedInput: json.RawMessage(`{"x":2}`)}})
	if m.Decision != "ask" || m.Reason != "b\n\nc" || string(m.UpdatedInput) != `{"x":1}` || len(m.Conflicts) != 1 {
		t.Fatalf("merge %+v", m)
	}
}

// TestNotificationPayload: a Notification hook hears about a pending
// approval with the waiting session's id (and, as in Claude Code, no
// permission mode).
func TestNotificationPayload(t *testing.T) {
	logf := filepath.Join(t.TempDir(), "calls.log")
	t.Setenv("HOOK_LOG", logf)
	rigMode = func(id session.ID) string {
		if id == "" {
			return "default"
		}
		return "acceptEdits"
	}
	defer func() { rigMode = nil }()
	cfg := `{"hooks":{` +
		`"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"` + testdata(t, "askjson.sh") + `"}]}],` +
		`"Notification":[{"hooks":[{"type":"command","command":"` + testdata(t, "record.sh") + `"}]}]}}`
	approver := tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.Approval, error) {
		return tool.Approval{Allow: true, By: "user"}, nil
	})
	r := newRig(t, hooks.Claude, cfg, approver, bashCall("c1", "echo hi"), scripted.Text("ok"))
	r.run(t, "go")
	r.h.Close(context.Background()) // waits for the notification hook
	b, err := os.ReadFile(logf)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(b), &p); err != nil {
		t.Fatalf("payload %q: %v", b, err)
	}
	if _, mode := p["permission_mode"]; p["hook_event_name"] != "Notification" || p["session_id"] != string(r.agent.Session().ID()) ||
		mode || p["notification_type"] != "permission_prompt" {
		t.Fatalf("notification payload %v", p)
	}
}

// TestHookEnvFromSettings: hooks run with the settings' env, and the
// project directory variables win over it.
func TestHookEnvFromSettings(t *testing.T) {
	logf := filepath.Join(t.TempDir(), "env.log")
	rigEnv = map[string]string{"DSH_TEST_HOOKVAR": "from-settings", "DSH_PROJECT_DIR": "spoofed"}
	defer func() { rigEnv = nil }()
	cmd := `echo "$DSH_TEST_HOOKVAR $DSH_PROJECT_DIR" > ` + logf
	r := newRig(t, hooks.Claude, hookCfg("UserPromptSubmit", "", cmd, 0), nil, scripted.Text("ok"))
	r.run(t, "go")
	b, err := os.ReadFile(logf)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != "from-settings "+r.dir {
		t.Fatalf("hook saw %q, want the settings' variable and the real project dir", got)
	}
}
