package hooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/bash/local"
	"github.com/dshq/dsh/compact"
	"github.com/dshq/dsh/core"
	fslocal "github.com/dshq/dsh/fs/local"
	"github.com/dshq/dsh/hooks"
	"github.com/dshq/dsh/hooks/transcript"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/subagent"
	"github.com/dshq/dsh/tool"
	"github.com/dshq/dsh/tools/bashtool"
	"github.com/dshq/dsh/tools/fstool"
	"github.com/dshq/dsh/tools/searchtool"
	"github.com/dshq/dsh/tools/task"
	"github.com/dshq/dsh/tools/todo"
	"github.com/dshq/dsh/tools/webtool"
	"github.com/dshq/dsh/web"
)

// fakeFetch and fakeSearch answer the web tools without a network.
type fakeFetch struct{}

func (fakeFetch) ID() string       { return "fake" }
func (fakeFetch) Available() error { return nil }
func (fakeFetch) Fetch(_ context.Context, req web.FetchRequest) (*web.FetchResult, error) {
	return &web.FetchResult{Provider: "fake", URL: req.URL, FinalURL: req.URL, Status: 200, ContentType: "text/html", Title: "Page",
		Content: "# Page\n\nThe page's text.", Format: web.FormatMarkdown}, nil
}

type fakeSearch struct{}

func (fakeSearch) ID() string       { return "fake" }
func (fakeSearch) Available() error { return nil }
func (fakeSearch) Search(_ context.Context, req web.SearchRequest) (*web.SearchResult, error) {
	return &web.SearchResult{Provider: "fake", Query: req.Query, Sources: []web.Source{{URL: "https://example.org/a", Title: "A"}}}, nil
}

var update = flag.Bool("update", false, "rewrite the golden payloads in testdata/golden")

// events are every hook event dsh fires.
var events = []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure",
	"Notification", "SubagentStart", "SubagentStop", "Stop", "PreCompact", "PostCompact", "SessionEnd"}

// goldenRun drives one session through every event and every tool with a
// recording hook on each event of both dialects, and returns the payloads
// each dialect's hooks received, keyed by event and tool call.
func goldenRun(t *testing.T) (payloads map[string]map[string]json.RawMessage, dir string, sessionID string, children []string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "payloads")
	for _, d := range []string{hooks.Claude, hooks.Codex} {
		os.MkdirAll(filepath.Join(out, d), 0o755)
	}
	rec := func(dialect string) string {
		return `f=$(mktemp ` + filepath.Join(out, dialect) + `/p.XXXXXX); cat > "$f"`
	}
	conf := func(dialect string) string {
		ev := map[string]any{}
		for _, e := range events {
			ev[e] = []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": rec(dialect)}}}}
		}
		b, _ := json.Marshal(map[string]any{"hooks": ev})
		return string(b)
	}
	os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
	os.MkdirAll(filepath.Join(dir, ".codex"), 0o755)
	os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(conf(hooks.Claude)), 0o644)
	os.WriteFile(filepath.Join(dir, ".codex", "hooks.json"), []byte(conf(hooks.Codex)), 0o644)
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	os.WriteFile(filepath.Join(dir, "src", "b.go"), []byte("package b // needle\n"), 0o644)

	h, err := core.New(core.Options{Invariants: true, Clock: func() time.Time { return time.UnixMilli(1_800_000_000_000) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	exec, err := local.New(local.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h.Scope.Defer(exec.Close)
	fsp, err := fslocal.New(fslocal.Options{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	svc := subagent.NewService(subagent.Options{})
	for _, p := range []subagent.Provider{subagent.Spawn(svc, h.Agents), subagent.Fork(svc, h.Agents)} {
		d, err := svc.Register(p)
		if err != nil {
			t.Fatal(err)
		}
		h.Scope.Add(d)
	}
	websvc := web.NewService(web.Options{})
	websvc.RegisterFetch(fakeFetch{})
	websvc.RegisterSearch(fakeSearch{})
	var ts []tool.Tool
	ts = append(ts, bashtool.Tools(exec, bashtool.Options{})...)
	ts = append(ts, fstool.Tools(fsp, nil, fstool.Options{})...)
	ts = append(ts, searchtool.Tools(searchtool.Options{})...)
	ts = append(ts, webtool.Tools(websvc, webtool.Options{})...)
	ts = append(ts, todo.New(), task.Tool("task", "spawn", svc, h.Agents, nil), task.Tool("fork", "fork", svc, h.Agents, nil),
		tool.Func(tool.Info{Name: "mcp__srv__echo", Description: "echo"}, func(_ context.Context, _ tool.Call, a struct {
			Message string `json:"message"`
		}) (tool.Result, error) {
			return tool.TextResult("Echo: " + a.Message), nil
		}),
		// Plan mode's tool, as the permission capability registers it
		// (its decisions are not this test's business, only its payload).
		tool.Func(tool.Info{Name: "exit_plan_mode", Description: "present the plan"}, func(_ context.Context, _ tool.Call, a struct {
			Plan string `json:"plan"`
		}) (tool.Result, error) {
			return tool.TextResult("The user approved the plan."), nil
		}))
	if err := h.Tools.RegisterAll(h.Scope, ts...); err != nil {
		t.Fatal(err)
	}
	// One call asks for approval, so PermissionRequest and Notification fire.
	h.Tools.PreExecute.Use(func(ctx context.Context, c tool.Call, next kernel.Next[tool.Call, tool.Decision]) (tool.Decision, error) {
		if c.ID == "t_ask" {
			return tool.Decision{Kind: tool.Ask, Reason: "test asks"}, nil
		}
		return next(ctx, c)
	})
	model := scripted.New(
		scripted.Call("t_bash", "bash", map[string]any{"command": "echo out; echo err >&2", "description": "print", "timeoutMs": 5000}, ""),
		scripted.Call("t_write", "write", map[string]any{"file_path": "src/a.txt", "content": "one\ntwo\n"}, ""),
		scripted.Call("t_read", "read", map[string]any{"file_path": "src/a.txt"}, ""),
		scripted.Call("t_edit", "edit", map[string]any{"file_path": "src/a.txt", "old_string": "two", "new_string": "TWO"}, ""),
		scripted.Call("t_glob", "glob", map[string]any{"pattern": "**/*.go"}, ""),
		scripted.Call("t_grep", "grep", map[string]any{"pattern": "needle", "path": "src"}, ""),
		scripted.Call("t_ls", "ls", map[string]any{"path": "src"}, ""),
		scripted.Call("t_bg", "bash", map[string]any{"command": "sleep 30", "description": "serve", "run_in_background": true}, ""),
		scripted.Call("t_output", "bash_output", map[string]any{"task_id": "bash-1"}, ""),
		scripted.Call("t_kill", "bash_kill", map[string]any{"task_id": "bash-1"}, ""),
		scripted.Call("t_fetch", "web_fetch", map[string]any{"url": "https://example.org/page", "prompt": "summarize"}, ""),
		scripted.Call("t_search", "web_search", map[string]any{"query": "dsh hooks"}, ""),
		scripted.Call("t_todo", "todo_write", map[string]any{"todos": []any{map[string]any{"content": "ship it", "status": "in_progress", "activeForm": "Shipping it"}}}, ""),
		scripted.Call("t_mcp", "mcp__srv__echo", map[string]any{"message": "hi"}, ""),
		scripted.Call("t_plan", "exit_plan_mode", map[string]any{"plan": "1. Read the code\n2. Fix the bug"}, ""),
		scripted.Call("t_task", "task", map[string]any{"description": "look around", "prompt": "Say hi."}, ""),
		scripted.Text("child says hi"),
		scripted.Call("t_fork", "fork", map[string]any{"description": "try it", "prompt": "Say hi again."}, ""),
		scripted.Text("fork says hi"),
		scripted.Call("t_fail", "bash", map[string]any{"command": "echo failing; exit 3", "description": "fail"}, ""),
		scripted.Call("t_ask", "bash", map[string]any{"command": "echo asked", "description": "asked"}, ""),
		scripted.Text("all done"),
		scripted.Text("<summary>the session so far</summary>"),
	)
	if _, err := h.LLM.RegisterModels([]string{"mock"}, model); err != nil {
		t.Fatal(err)
	}
	comp := compact.New(compact.Config{RetainTokens: 1, Manual: true}, h.LLM, h.Agents.Hub, nil)
	if err := comp.Install(h.Scope); err != nil {
		t.Fatal(err)
	}
	tw := transcript.New(filepath.Join(t.TempDir(), "transcripts"), "test", nil)
	if err := tw.Install(h.Scope, h.Sessions); err != nil {
		t.Fatal(err)
	}
	var bridges []*hooks.Bridge
	for _, dialect := range []string{hooks.Claude, hooks.Codex} {
		_, proj := hooks.Files(dialect, "", dir)
		cfg := hooks.Load(dialect, nil, proj)
		b := hooks.New(hooks.Options{Dialect: dialect, Config: func(string) *hooks.Config { return &cfg },
			Runner: hooks.Runner{Exec: exec}, Trusted: func(string) bool { return true }, Model: "mock",
			TranscriptPath: tw.Path, Mode: func(session.ID) string { return "default" }}, h.Agents)
		if err := b.Install(h.Scope, h.Tools, h.Sessions, comp); err != nil {
			t.Fatal(err)
		}
		if err := b.InstallSubagents(h.Scope, svc.Started, svc.Ended); err != nil {
			t.Fatal(err)
		}
		bridges = append(bridges, b)
	}
	approver := tool.ApproverFunc(func(context.Context, tool.ApprovalRequest) (tool.Approval, error) {
		return tool.Approval{Allow: true, By: "user"}, nil
	})
	hd, err := h.Agents.Create(context.Background(), agent.CreateOptions{AgentID: "main", Header: session.Header{Cwd: dir},
		Options: agent.Options{Model: "mock", Approver: bridges[0].Approver(bridges[1].Approver(approver))}})
	if err != nil {
		t.Fatal(err)
	}
	a := hd.Agent
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := a.Send(ctx, []llm.Block{llm.Text("go")}, llm.Source{}); err != nil {
		t.Fatal(err)
	}
	if err := a.WhenIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := comp.Compact(ctx, a, "keep it short"); err != nil {
		t.Fatalf("compact: %v", err)
	}
	for _, b := range bridges {
		b.SetEndReason(a.ID(), hooks.EndClear)
	}
	if err := hd.Dispose(ctx); err != nil {
		t.Fatal(err)
	}
	h.Close(ctx) // waits for the notification hooks
	for _, e := range a.Session().Events() {
		if e.Type == subagent.TypeStart {
			st, _ := session.Decode[subagent.StartEvent](e)
			children = append(children, string(st.ChildSession))
		}
	}
	payloads = map[string]map[string]json.RawMessage{}
	for _, dialect := range []string{hooks.Claude, hooks.Codex} {
		payloads[dialect] = map[string]json.RawMessage{}
		files, _ := filepath.Glob(filepath.Join(out, dialect, "p.*"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var p struct {
				Event     string `json:"hook_event_name"`
				ID        string `json:"tool_use_id"`
				Agent     string `json:"agent_id"`
				AgentType string `json:"agent_type"`
			}
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatalf("%s payload is not JSON: %q", dialect, b)
			}
			name := p.Event
			if p.ID != "" {
				name += "-" + p.ID
			}
			switch {
			case p.Event == "SubagentStart" || p.Event == "SubagentStop":
				name += "-" + p.AgentType
			case p.Agent != "":
				name += "-in-subagent"
			}
			if _, dup := payloads[dialect][name]; dup {
				t.Errorf("%s: %s fired twice", dialect, name)
			}
			payloads[dialect][name] = b
		}
	}
	return payloads, dir, string(a.Session().ID()), children
}

// normalize replaces what differs between runs (ids, temp paths,
// durations) with placeholders and indents the payload.
func normalize(t *testing.T, raw json.RawMessage, dir, sid string, children []string) []byte {
	t.Helper()
	s := string(raw)
	for i, child := range children {
		s = strings.ReplaceAll(s, child, fmt.Sprintf("<child-session-%d>", i+1))
	}
	s = strings.ReplaceAll(s, sid, "<session>")
	s = strings.ReplaceAll(s, dir, "<cwd>")
	s = regexp.MustCompile(`"[^"]*/transcripts/`).ReplaceAllString(s, `"<transcripts>/`)
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	zeroDurations(v)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return b.Bytes()
}

func zeroDurations(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "duration_ms", "durationMs", "totalDurationMs", "durationSeconds":
				x[k] = 0
			default:
				zeroDurations(e)
			}
		}
	case []any:
		for _, e := range x {
			zeroDurations(e)
		}
	}
}

// TestGoldenPayloads: every event × tool payload of both dialects matches
// its golden file in testdata/golden (go test -run TestGoldenPayloads
// -update rewrites them; review the diff against the references), and
// every golden file is still produced (a payload that stops firing fails
// too).
func TestGoldenPayloads(t *testing.T) {
	payloads, dir, sid, children := goldenRun(t)
	for _, dialect := range []string{hooks.Claude, hooks.Codex} {
		gdir := filepath.Join("testdata", "golden", dialect)
		if *update {
			os.RemoveAll(gdir)
			os.MkdirAll(gdir, 0o755)
		}
		var names []string
		for name := range payloads[dialect] {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			got := normalize(t, payloads[dialect][name], dir, sid, children)
			path := filepath.Join(gdir, name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("%s: no golden file for %s (run with -update and review it): %v", dialect, name, err)
				continue
			}
			if d := cmp.Diff(string(want), string(got)); d != "" {
				t.Errorf("%s %s drifted from %s (-golden +now):\n%s", dialect, name, path, d)
			}
		}
		files, _ := filepath.Glob(filepath.Join(gdir, "*.json"))
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".json")
			if _, ok := payloads[dialect][name]; !ok {
				t.Errorf("%s: %s has a golden file but did not fire", dialect, name)
			}
		}
	}
}

// reference is what a peer's published hook reference requires of a
// payload (testdata/reference/*.json).
type reference struct {
	Sources []string `json:"sources"`
	// Closed: the peer's schema allows no other fields (Codex's
	// additionalProperties: false).
	Closed bool              `json:"closed"`
	Common map[string]string `json:"common"`
	Events map[string]struct {
		Required map[string]string `json:"required"`
		Optional map[string]string `json:"optional"`
	} `json:"events"`
	// Tools give the shapes of tool_input and tool_response per tool name.
	Tools map[string]struct {
		Input    map[string]string `json:"tool_input"`
		Response map[string]string `json:"tool_response"`
	} `json:"tools"`
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// typeOK reports whether v has one of the "|"-separated types of want.
func typeOK(v any, want string) bool {
	for _, w := range strings.Split(want, "|") {
		if w == "any" || jsonType(v) == w {
			return true
		}
	}
	return false
}

// TestPayloadsMatchReferences checks each payload against the dialect's
// published reference, kept in testdata/reference: every required field
// present with its type, nothing the reference does not know where its
// schema is closed, and the documented tool_input and tool_response
// fields per tool.
func TestPayloadsMatchReferences(t *testing.T) {
	payloads, _, _, _ := goldenRun(t)
	fired := map[string]map[string]bool{}
	for _, dialect := range []string{hooks.Claude, hooks.Codex} {
		b, err := os.ReadFile(filepath.Join("testdata", "reference", dialect+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var ref reference
		if err := json.Unmarshal(b, &ref); err != nil {
			t.Fatal(err)
		}
		fired[dialect] = map[string]bool{}
		for name, raw := range payloads[dialect] {
			var p map[string]any
			json.Unmarshal(raw, &p)
			event := p["hook_event_name"].(string)
			fired[dialect][event] = true
			spec, ok := ref.Events[event]
			if !ok {
				t.Errorf("%s: %s fires but the reference has no such event", dialect, name)
				continue
			}
			allowed := map[string]string{}
			for k, v := range ref.Common {
				allowed[k] = v
			}
			for k, v := range spec.Required {
				allowed[k] = v
			}
			for k, want := range allowed {
				v, ok := p[k]
				if !ok {
					t.Errorf("%s %s: required field %q missing", dialect, name, k)
				} else if !typeOK(v, want) {
					t.Errorf("%s %s: %q is %s, the reference says %s", dialect, name, k, jsonType(v), want)
				}
			}
			for k, want := range spec.Optional {
				if v, ok := p[k]; ok && !typeOK(v, want) {
					t.Errorf("%s %s: %q is %s, the reference says %s", dialect, name, k, jsonType(v), want)
				}
				allowed[k] = want
			}
			if ref.Closed {
				for k := range p {
					if _, ok := allowed[k]; !ok {
						t.Errorf("%s %s: field %q is not in the reference (its schema allows no other fields)", dialect, name, k)
					}
				}
			}
			tn, _ := p["tool_name"].(string)
			ts, ok := ref.Tools[tn]
			if tn == "" || !ok {
				continue
			}
			check := func(part string, obj any, fields map[string]string) {
				m, isObj := obj.(map[string]any)
				if len(fields) > 0 && !isObj {
					t.Errorf("%s %s: %s is %s, want an object", dialect, name, part, jsonType(obj))
					return
				}
				for k, want := range fields {
					if v, ok := m[k]; !ok || !typeOK(v, want) {
						t.Errorf("%s %s: %s.%s is %v (%s), the reference says %s", dialect, name, part, k, v, jsonType(v), want)
					}
				}
			}
			check("tool_input", p["tool_input"], ts.Input)
			if r, ok := p["tool_response"]; ok {
				check("tool_response", r, ts.Response)
			}
		}
	}
	// Every event of each dialect's reference that dsh has fired.
	for _, e := range events {
		if !fired[hooks.Claude][e] {
			t.Errorf("claude: %s never fired", e)
		}
	}
}
