package cli_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// `dsh sessions show ID --html` writes one self-contained page: nothing it
// would fetch, a policy that allows no connection, the subagent's session
// inside, secrets scrubbed (a value this process holds as a secret, and a
// credential-shaped string in a tool's output), and --no-tool-output
// leaves the outputs out.
func TestSessionsShowHTML(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	const known = "deploy-value-7f3a9c2e41"
	const shaped = "sk-ant-api03-QwErTyUiOpAsDfGhJkLzXc"
	ds := &deepseek{replies: []string{
		toolReply("call_1", "bash", map[string]string{"command": "printf 'OUT%s %s\\n' PUT-MARK " + shaped, "description": "print"}),
		toolReply("call_2", "task", map[string]string{"description": "look around", "prompt": "CHILD-TASK: just answer"}),
		textReply("child says hi"),
		textReply("parent done with " + known),
	}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	r := dsh(t, dir, home, srv.URL, "", "-p", "--model", "deepseek/deepseek-chat", "--allowedTools", "Bash(printf:*) task", "--output-format", "json", "use "+known+" please")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	id, _ := res["session_id"].(string)
	show := func(args ...string) run {
		t.Helper()
		return invocation{dir: dir, home: home, baseURL: srv.URL, env: []string{"MY_DEPLOY_TOKEN=" + known}}.run(t, append([]string{"sessions", "show", id}, args...)...)
	}
	page := show("--html")
	if page.code != 0 {
		t.Fatalf("%+v", page)
	}
	html := page.stdout
	if !strings.HasPrefix(html, "<!doctype html>") || !strings.Contains(html, `http-equiv="Content-Security-Policy" content="default-src 'none';`) {
		t.Fatalf("not a page with the trace's policy:\n%.400s", html)
	}
	for _, leak := range []string{known, shaped, "QwErTyUiOp"} {
		if strings.Contains(html, leak) {
			t.Errorf("the trace holds the secret %q", leak)
		}
	}
	for _, want := range []string{"OUTPUT-MARK [REDACTED]", "use [REDACTED] please", "CHILD-TASK", "child says hi"} {
		if !strings.Contains(html, want) {
			t.Errorf("the trace lacks %q", want)
		}
	}
	for _, fetch := range []string{" src=", "<link", "@import", "url(http"} {
		if strings.Contains(html, fetch) {
			t.Errorf("the trace would fetch something (%q)", fetch)
		}
	}
	bare := show("--html", "--no-tool-output")
	if bare.code != 0 || strings.Contains(bare.stdout, "OUTPUT-MARK") || !strings.Contains(bare.stdout, "printf") {
		t.Errorf("--no-tool-output: exit %d, output present %v, call present %v", bare.code, strings.Contains(bare.stdout, "OUTPUT-MARK"), strings.Contains(bare.stdout, "printf"))
	}
	if r := show("--no-tool-output"); r.code != 2 || !strings.Contains(r.stderr, "--html") {
		t.Errorf("--no-tool-output without --html: %+v", r)
	}
}
