package mcp_test

import (
	"strings"
	"testing"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/internal/redact"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/mcp"
)

// A credential an MCP server's config holds — a header filled from
// ${VAR}, a literal env value, a token flag — is as secret as the
// environment's: once the server is added, a message, an answer or a tool
// result repeating it is recorded with it replaced, and the model's next
// request (built from the log) does not carry it either. What the config
// holds that is no credential stays readable.
func TestServerCredentialsNeverRecorded(t *testing.T) {
	g := newGoServer(t)
	const envKey, flagToken, plain = "literal-api-key-0123456789", "flag-token-abcdef0123", "plain-setting-value"
	leak := "header=" + token + " env=" + envKey + " flag=" + flagToken + " plain=" + plain
	r := newRig(t, mcp.Options{Env: env}, scripted.Text("noted "+leak), scripted.Text("again"))
	stdio := mcp.ServerConfig{Name: "local", Command: "/nonexistent/mcp-server", Args: []string{"--api-token", flagToken},
		Env: map[string]string{"SERVICE_API_KEY": envKey, "SERVICE_MODE": plain}}
	if err := r.m.Start(t.Context(), []mcp.ServerConfig{stdio}); err != nil {
		t.Logf("start: %v", err) // the stdio server cannot run; its config is what counts
	}
	startGo(t, r, g, g.config("go"))
	a := r.agent(agent.Options{})
	r.run(a, "remember "+leak)
	r.run(a, "and now?")

	var log strings.Builder
	for _, e := range a.Session().Events() {
		log.Write(e.Data)
		log.WriteByte('\n')
	}
	for _, secret := range []string{token, envKey, flagToken} {
		if strings.Contains(log.String(), secret) {
			t.Errorf("the session log holds %q:\n%s", secret, log.String())
		}
	}
	if n := strings.Count(log.String(), redact.Mark); n < 6 {
		t.Errorf("%d redaction marks in the log, want the three secrets replaced in the prompt and the answer:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "plain="+plain) {
		t.Errorf("a value that is no credential was scrubbed:\n%s", log.String())
	}
	reqs := r.model.Requests()
	last := reqs[len(reqs)-1]
	for _, m := range last.Messages {
		for _, b := range m.Content {
			for _, secret := range []string{token, envKey, flagToken} {
				if strings.Contains(b.Text, secret) {
					t.Errorf("the model's second request carries %q in a %s message", secret, m.Role)
				}
			}
		}
	}
}
