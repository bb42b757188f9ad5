package acp_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dshq/dsh/acp/acptest"
	"github.com/dshq/dsh/hooks"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/session"
)

// The same settings and flags mean the same in `dsh -p` and `dsh acp`: the
// same permission decisions (rule, source, mode), the same model, the same
// appended system prompt and the same hooks, because both front doors build
// their configuration through one pipeline.
func TestFrontDoorsShareOneConfiguration(t *testing.T) {
	needNode(t)
	model := acptest.New()
	defer model.Close()
	e := newE2E(t, model)
	hookLog := filepath.Join(t.TempDir(), "hooks.log")
	userSettings := map[string]any{
		"providers":   map[string]any{"deepseek": map[string]any{"models": []any{map[string]any{"id": "deepseek-e2e"}}}},
		"aliases":     map[string]any{"pinned": "deepseek/deepseek-e2e"},
		"permissions": map[string]any{"deny": []string{"Bash(rm:*)"}, "ask": []string{"Bash(make:*)"}, "allow": []string{"Read"}},
		"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "Bash", "hooks": []any{
			map[string]any{"type": "command", "command": "cat >> '" + hookLog + "'; echo >> '" + hookLog + "'"},
		}}}},
	}
	b, _ := json.Marshal(userSettings)
	if err := os.WriteFile(filepath.Join(e.home, "settings.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	flags := []string{
		"--model", "pinned", "--permission-mode", "acceptEdits",
		"--allowedTools", "Bash(touch:*)", "--disallowedTools", "Bash(curl:*)",
		"--append-system-prompt", "FRONT-DOOR-MARKER",
	}
	script := func(tag string) []acptest.Reply {
		return []acptest.Reply{
			acptest.Tool(tag+"1", "bash", map[string]any{"command": "touch made-" + tag, "description": "allowed by --allowedTools"}),
			acptest.Tool(tag+"2", "bash", map[string]any{"command": "rm -f made-" + tag, "description": "denied by the settings"}),
			acptest.Tool(tag+"3", "bash", map[string]any{"command": "curl http://127.0.0.1:1/", "description": "denied by --disallowedTools"}),
			acptest.Tool(tag+"4", "bash", map[string]any{"command": "make -n", "description": "asks (an ask rule holds even in the sandbox)"}),
			writeCall(tag+"5", "w-"+tag+".txt", "w"), // allowed by acceptEdits
			acptest.Text("done"),
		}
	}

	// dsh -p.
	model.Push(script("p")...)
	cmd := exec.Command(dshBinary(t), append(append([]string{"-p", "--output-format", "json"}, flags...), "do the things")...)
	cmd.Dir, cmd.Env = e.dir, e.environ(nil)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("dsh -p: %v\n%s", err, out)
	}
	var res struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	headlessRequests := len(model.Requests())

	// dsh acp, the same flags.
	model.Push(script("a")...)
	ar := e.prompts("", []string{"do the things"}, []string{"reject_once"}, flags)
	acpID := ar["sessionId"].(string)
	requests := model.Requests()

	type decision struct{ Tool, Behavior, Rule, Source, Mode string }
	decisions := func(id string) (out []decision) {
		for _, ev := range e.events(id) {
			if ev.Type == permission.EventDecision {
				d, err := session.Decode[permission.DecisionEvent](ev)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, decision{d.Tool, string(d.Behavior), d.Rule, d.Source, string(d.Mode)})
			}
		}
		return out
	}
	hookRuns := func(id string) (out []string) {
		for _, ev := range e.events(id) {
			if ev.Type == hooks.TypeInvoked {
				h, err := session.Decode[hooks.Invoked](ev)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, h.Point+" "+h.Source)
			}
		}
		return out
	}
	dp, da := decisions(res.SessionID), decisions(acpID)
	if !slices.Equal(dp, da) {
		t.Fatalf("permission decisions differ:\n  -p:  %+v\n  acp: %+v", dp, da)
	}
	settingsFile := filepath.Join(e.home, "settings.json")
	want := []decision{
		{"bash", "allow", "Bash(touch:*)", "--allowedTools", "acceptEdits"},
		{"bash", "deny", "Bash(rm:*)", settingsFile, "acceptEdits"},
		{"bash", "deny", "Bash(curl:*)", "--disallowedTools", "acceptEdits"},
		{"bash", "ask", "Bash(make:*)", settingsFile, "acceptEdits"},
		{"write", "allow", "", "", "acceptEdits"},
	}
	if !slices.Equal(dp, want) {
		t.Errorf("decisions %+v\nwant      %+v", dp, want)
	}
	hp, ha := hookRuns(res.SessionID), hookRuns(acpID)
	if !slices.Equal(hp, ha) || len(hp) == 0 || !strings.Contains(hp[0], settingsFile) {
		t.Errorf("hook runs differ or are missing:\n  -p:  %v\n  acp: %v", hp, ha)
	}
	if b, err := os.ReadFile(hookLog); err != nil || strings.Count(string(b), `"hook_event_name":"PreToolUse"`) != 2*len(hp) {
		t.Errorf("the hook's own log: %v\n%s", err, b)
	}
	// The model (through the settings' alias) and the appended system
	// prompt reached every request of both runs.
	if res.SessionID == "" || headlessRequests == 0 || headlessRequests == len(requests) {
		t.Fatalf("session %q, %d headless requests of %d", res.SessionID, headlessRequests, len(requests))
	}
	for i, r := range requests {
		sys := fmt.Sprint(r["messages"].([]any)[0])
		if r["model"] != "deepseek-e2e" || !strings.Contains(sys, "FRONT-DOOR-MARKER") {
			t.Errorf("request %d (headless: %v): model %v, system prompt has the marker: %v", i, i < headlessRequests, r["model"], strings.Contains(sys, "FRONT-DOOR-MARKER"))
		}
	}
}
