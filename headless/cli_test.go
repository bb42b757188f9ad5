package headless_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dshq/dsh/internal/fakeanthropic"
)

func echoReply(req fakeanthropic.Request) fakeanthropic.Reply {
	return fakeanthropic.Reply{Text: "you said: " + strings.TrimSpace(req.LastUserText())}
}

// `echo 42 | dsh -p "what number?"`: the piped data reaches the model
// with the prompt.
func TestPipedStdinGoesToTheModel(t *testing.T) {
	e := newEnv(t, echoReply)
	r := e.dsh("42\n", "-p", "what number?")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	reqs := e.model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	got := reqs[0].LastUserText()
	if !strings.Contains(got, "42") || !strings.Contains(got, "what number?") {
		t.Fatalf("the model's request has %q", got)
	}
	// Past the cap the input is cut, and both the user and the model are
	// told.
	big := strings.Repeat("x", 600<<10)
	r = e.dsh(big, "-p", "how long?")
	if r.code != 0 || !strings.Contains(r.stderr, "only its first 512 KiB") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	last := e.model.Requests()[1].LastUserText()
	if !strings.Contains(last, "standard input was cut at 512 KiB") || strings.Count(last, "x") != 512<<10 || !strings.Contains(last, "how long?") {
		t.Fatalf("capped request: %d x's, note present %v", strings.Count(last, "x"), strings.Contains(last, "cut at"))
	}
}

func TestBadFlagsExitTwo(t *testing.T) {
	e := newEnv(t, echoReply)
	for _, args := range [][]string{
		{"-p", "--bogus"},
		{"--bogus"},
		{"-p", "--output-format", "yaml", "hi"},
		{"-p", "--input-format", "xml", "hi"},
		{"-p", "--max-turns", "many", "hi"},
		{"sessions", "--bogus"},
	} {
		r := e.dsh("", args...)
		if r.code != 2 {
			t.Errorf("dsh %v: exit %d (want 2): %s", args, r.code, r.stderr)
		}
	}
	if n := len(e.model.Requests()); n != 0 {
		t.Fatalf("a bad command line reached the model %d times", n)
	}
	v := e.dsh("", "--version")
	if v.code != 0 || !strings.HasPrefix(v.stdout, "dsh ") {
		t.Fatalf("--version: %+v", v)
	}
}

// Kebab-case --allowed-tools is Claude Code's other spelling of
// --allowedTools; --dangerously-skip-permissions is bypass mode.
func TestClaudeCodeFlagSpellings(t *testing.T) {
	calls := func(req fakeanthropic.Request) fakeanthropic.Reply {
		if len(req.ToolResults()) > 0 {
			return fakeanthropic.Reply{Text: "result: " + strings.TrimSpace(fakeanthropic.Request{Messages: []fakeanthropic.Message{{Role: "user", Content: req.ToolResults()[0].Content}}}.Text())}
		}
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_1", Name: "write", Input: map[string]string{"file_path": "made.txt", "content": "made"}}}}
	}
	for _, tc := range []struct {
		args  []string
		allow bool
	}{
		{[]string{}, false},
		{[]string{"--allowed-tools", "Write"}, true},
		{[]string{"--dangerously-skip-permissions"}, true},
		{[]string{"--allowed-tools", "Write", "--disallowed-tools", "Write"}, false},
	} {
		e := newEnv(t, calls)
		r := e.dsh("", append([]string{"-p", "--output-format", "json"}, append(tc.args, "make it")...)...)
		var res map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatalf("%v: %v %q %s", tc.args, err, r.stdout, r.stderr)
		}
		_, statErr := os.Stat(filepath.Join(e.dir, "made.txt"))
		ran := statErr == nil
		if strings.Contains(fmt.Sprint(res["result"]), "Error") == ran {
			t.Errorf("%v: the file exists %v but the model was told %v", tc.args, ran, res["result"])
		}
		if ran != tc.allow {
			t.Errorf("%v: the command ran %v (want %v): %v", tc.args, ran, tc.allow, res["result"])
		}
		if d, _ := res["permission_denials"].([]any); (len(d) == 0) != tc.allow {
			t.Errorf("%v: permission_denials %v", tc.args, d)
		}
	}
}

// The events format is documented as a JSON Schema; real output follows it.
func TestEventsFormatFollowsItsSchema(t *testing.T) {
	raw, err := os.ReadFile("../docs/schema/events.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	rs, err := schema.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(req fakeanthropic.Request) fakeanthropic.Reply {
		if len(req.ToolResults()) == 0 {
			return fakeanthropic.Reply{Thinking: "look first", ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_ls", Name: "ls", Input: map[string]string{}}}}
		}
		return fakeanthropic.Reply{Text: "Nothing here."}
	})
	r := e.dsh("", "-p", "--output-format", "events", "what is here?")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	seen := map[string]bool{}
	ls := lines(t, r.stdout)
	for i, l := range ls {
		if err := rs.Validate(l); err != nil {
			t.Errorf("line %d does not follow the schema: %v\n%v", i, err, l)
		}
		seen[l["type"].(string)] = true
	}
	for _, typ := range []string{"turn/start", "user/message", "step/start", "assistant/chunk", "assistant/message", "tool/call", "tool/result", "step/end", "turn/end", "result"} {
		if !seen[typ] {
			t.Errorf("no %s line", typ)
		}
	}
	last := ls[len(ls)-1]
	if last["result"] != "Nothing here." || last["stop_reason"] != "completed" || last["num_steps"].(float64) != 2 {
		t.Fatalf("result line %v", last)
	}
	// A line that breaks the schema is caught (the check is not vacuous).
	bad := map[string]any{"type": "tool/result", "seq": 1, "time": 1, "data": map[string]any{"turn": 1, "step": 1, "callId": "x", "content": []any{}, "isError": "no"}}
	if rs.Validate(bad) == nil {
		t.Fatal("a malformed tool/result line passed the schema")
	}
}

// Session ids: pinned with --session-id, resumed by a unique prefix,
// ambiguity reported with the candidates, forks leave the original alone.
func TestSessionIDsAndPrefixes(t *testing.T) {
	e := newEnv(t, func(req fakeanthropic.Request) fakeanthropic.Reply {
		return fakeanthropic.Reply{Text: fmt.Sprintf("%d messages so far", len(req.Messages))}
	})
	const a, b = "aaaa1111-0000-4000-8000-000000000001", "aaaa2222-0000-4000-8000-000000000002"
	for _, id := range []string{a, b} {
		if r := e.dsh("", "-p", "--session-id", id, "hello"); r.code != 0 {
			t.Fatalf("--session-id %s: exit %d %s", id, r.code, r.stderr)
		}
	}
	if r := e.dsh("", "-p", "--session-id", a, "again"); r.code != 2 || !strings.Contains(r.stderr, "already exists") {
		t.Fatalf("reused --session-id: exit %d %s", r.code, r.stderr)
	}
	r := e.dsh("", "-p", "-r", "aaaa", "more")
	if r.code != 2 || !strings.Contains(r.stderr, a) || !strings.Contains(r.stderr, b) || !strings.Contains(r.stderr, "ambiguous") {
		t.Fatalf("ambiguous -r: exit %d %s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "store:") || strings.Contains(r.stderr, "loop:") {
		t.Fatalf("an internal error chain reached the user: %s", r.stderr)
	}
	r = e.dsh("", "-p", "--output-format", "json", "-r", "aaaa1", "more")
	var res map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res["session_id"] != a || res["result"] != "3 messages so far" {
		t.Fatalf("-r prefix: exit %d %v %s %s", r.code, err, r.stdout, r.stderr)
	}
	// --fork-session: a new session from the resumed one's turns.
	r = e.dsh("", "-p", "--output-format", "json", "-r", "aaaa2", "--fork-session", "branch")
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res["session_id"] == b || res["result"] != "3 messages so far" {
		t.Fatalf("fork: %v %s %s", err, r.stdout, r.stderr)
	}
	show := e.dsh("", "sessions", "show", "aaaa2")
	if show.code != 0 || strings.Contains(show.stdout, "branch") || !strings.Contains(show.stdout, b) {
		t.Fatalf("the original changed, or show by prefix failed: %+v", show)
	}
	if ex := e.dsh("", "sessions", "export", "aaaa"); ex.code != 2 || !strings.Contains(ex.stderr, "ambiguous") {
		t.Fatalf("export of an ambiguous prefix: %+v", ex)
	}
	if ex := e.dsh("", "sessions", "show", "nope"); ex.code != 2 || !strings.Contains(ex.stderr, `no session "nope"`) {
		t.Fatalf("show of an unknown id: %+v", ex)
	}
	// -r without an id and no terminal lists the sessions to choose from.
	r = e.dsh("", "-p", "-r")
	if r.code != 2 || !strings.Contains(r.stderr, a) || !strings.Contains(r.stderr, "needs a session id") {
		t.Fatalf("-r alone: exit %d %s", r.code, r.stderr)
	}
}

// --json-schema: a non-conforming answer is sent back, the conforming one
// is the result's structured_output; retries are bounded.
func TestJSONSchema(t *testing.T) {
	schema := `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`
	calls := 0
	e := newEnv(t, func(req fakeanthropic.Request) fakeanthropic.Reply {
		calls++
		if !strings.Contains(req.SystemText(), `"required":["n"]`) {
			return fakeanthropic.Reply{Text: "the schema was not in the system prompt"}
		}
		if strings.Contains(req.LastUserText(), "cannot be used") {
			return fakeanthropic.Reply{Text: "```json\n{\"n\": 42}\n```"}
		}
		return fakeanthropic.Reply{Text: "forty-two"}
	})
	r := e.dsh("", "-p", "--output-format", "json", "--json-schema", schema, "how many?")
	var res map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 {
		t.Fatalf("exit %d %v: %s %s", r.code, err, r.stdout, r.stderr)
	}
	if so, _ := json.Marshal(res["structured_output"]); string(so) != `{"n":42}` || calls != 2 {
		t.Fatalf("structured_output %s after %d calls: %v", so, calls, res)
	}
	// A model that never conforms: three retries, then the error subtype.
	e2 := newEnv(t, func(fakeanthropic.Request) fakeanthropic.Reply { return fakeanthropic.Reply{Text: `{"n": "many"}`} })
	r = e2.dsh("", "-p", "--output-format", "json", "--json-schema", schema, "how many?")
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 1 {
		t.Fatalf("exit %d %v: %s", r.code, err, r.stdout)
	}
	if res["subtype"] != "error_max_structured_output_retries" || len(e2.model.Requests()) != 4 || !strings.Contains(fmt.Sprint(res["errors"]), "does not conform") {
		t.Fatalf("%d requests, result %v", len(e2.model.Requests()), res)
	}
	if bad := e.dsh("", "-p", "--json-schema", "{not json", "x"); bad.code != 2 {
		t.Fatalf("malformed schema: %+v", bad)
	}
}

// --mcp-config adds servers for the run (connected before the prompt);
// --strict-mcp-config leaves out every configured one; Claude Code flags
// dsh does not act on are named on stderr.
func TestMCPConfigFlag(t *testing.T) {
	srv, err := filepath.Abs("../node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(srv); err != nil {
		t.Skip("server-everything is not installed (npm ci)")
	}
	e := newEnv(t, func(req fakeanthropic.Request) fakeanthropic.Reply {
		if trs := req.ToolResults(); len(trs) > 0 {
			return fakeanthropic.Reply{Text: "echoed: " + strings.TrimSpace(fakeanthropic.Request{Messages: []fakeanthropic.Message{{Role: "user", Content: trs[0].Content}}}.Text())}
		}
		if _, ok := req.HasTool("mcp__ev__echo"); !ok {
			return fakeanthropic.Reply{Text: "no echo tool"}
		}
		return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_e", Name: "mcp__ev__echo", Input: map[string]string{"message": "ping"}}}}
	})
	// A server of the user's settings: strict runs must not start it.
	user := fmt.Sprintf(`{"mcpServers":{"configured":{"command":"node","args":[%q]}}}`, srv)
	if err := os.WriteFile(filepath.Join(e.home, "settings.json"), []byte(user), 0o600); err != nil {
		t.Fatal(err)
	}
	servers := func(r result) []string {
		t.Helper()
		var names []string
		for _, l := range lines(t, r.stdout) {
			if l["type"] == "system" && l["subtype"] == "init" {
				for _, s := range l["mcp_servers"].([]any) {
					names = append(names, s.(map[string]any)["name"].(string))
				}
				slices.Sort(names)
				return names
			}
		}
		t.Fatalf("no init line:\n%s", r.stdout)
		return nil
	}
	cfg := fmt.Sprintf(`{"mcpServers":{"ev":{"command":"node","args":[%q]}}}`, srv)
	r := e.dsh("", "-p", "--output-format", "stream-json", "--verbose", "--mcp-config", cfg, "--allowedTools", "mcp__ev", "--strict-mcp-config", "--setting-sources", "user", "echo ping")
	if r.code != 0 || !strings.Contains(r.stdout, "echoed:") || !strings.Contains(r.stdout, "ping") {
		t.Fatalf("exit %d: %q %s", r.code, r.stdout, r.stderr)
	}
	if got := servers(r); !slices.Equal(got, []string{"ev"}) {
		t.Fatalf("--strict-mcp-config: servers %v, want only ev", got)
	}
	if !strings.Contains(r.stderr, "--setting-sources") || strings.Contains(r.stderr, "--strict-mcp-config") {
		t.Fatalf("ignored flags (only --setting-sources is ignored): %s", r.stderr)
	}
	if got := servers(e.dsh("", "-p", "--output-format", "stream-json", "--verbose", "--mcp-config", cfg, "echo ping")); !slices.Equal(got, []string{"configured", "ev"}) {
		t.Fatalf("without --strict-mcp-config: servers %v, want configured and ev", got)
	}
}

// total_cost_usd comes from the price table, which the "pricing" settings
// override (cache reads and writes priced apart, defaulting to input).
func TestCostFromPriceTable(t *testing.T) {
	e := newEnv(t, echoReply)
	cost := func() (float64, map[string]any) {
		t.Helper()
		r := e.dsh("", "-p", "--output-format", "json", "hi")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatal(err)
		}
		mu, _ := res["modelUsage"].(map[string]any)
		m, _ := mu["anthropic/claude-sonnet-4-5"].(map[string]any)
		return res["total_cost_usd"].(float64), m
	}
	// The list price: 100 input tokens at $3/M, 10 output at $15/M.
	if got, _ := cost(); fmt.Sprintf("%.7f", got) != "0.0004500" {
		t.Fatalf("list-price cost %v", got)
	}
	settings := `{"pricing":{"anthropic/claude-sonnet-4-5":{"input":1000,"output":2000,"cacheRead":1}}}`
	if err := os.WriteFile(filepath.Join(e.home, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	got, m := cost()
	if fmt.Sprintf("%.4f", got) != "0.1200" || fmt.Sprintf("%.4f", m["costUSD"]) != "0.1200" || m["costBasis"] != "list" {
		t.Fatalf("overridden cost %v, model usage %v", got, m)
	}
}

// --debug logs debug records (here: each hook run, what hook authors use
// it for) to stderr and the log file, never to stdout: a stream-json
// reader sees only its JSON lines.
func TestDebugFlag(t *testing.T) {
	e := newEnv(t, func(fakeanthropic.Request) fakeanthropic.Reply { return fakeanthropic.Reply{Text: "ok"} })
	hook := `{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"true"}]}]}}`
	if err := os.WriteFile(filepath.Join(e.home, "settings.json"), []byte(hook), 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.dsh("", "-p", "--debug", "--output-format", "stream-json", "--verbose", "hi")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "level=DEBUG") || !strings.Contains(r.stderr, "hook ran") {
		t.Fatalf("no debug record on stderr:\n%s", r.stderr)
	}
	ls := lines(t, r.stdout) // fails on any line that is not JSON
	if last := ls[len(ls)-1]; last["type"] != "result" || last["result"] != "ok" {
		t.Fatalf("last line %v", last)
	}
	if quiet := e.dsh("", "-p", "hi"); quiet.code != 0 || strings.Contains(quiet.stderr, "level=") {
		t.Fatalf("without --debug: exit %d, stderr %q", quiet.code, quiet.stderr)
	}
}
