package serve_test

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dshq/dsh/internal/dshtest"
	"github.com/dshq/dsh/internal/fakeanthropic"
	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/client"
	"github.com/dshq/dsh/session"
)

// serviceSecret is a secret the server's settings give commands under a
// name that says so, in no credential shape: only the known value finds it.
const serviceSecret = "svc-pw-4f9a1c7e2b8d5a06"

// leakCommand prints two secrets the way a command comes by them: a
// variable the settings give every command (the "env" setting), on
// stdout (once after its name, once bare, where no credential shape
// finds it), and a project file holding the server's provider key, on
// stderr; then it waits, so the stream carries them as live progress
// before the result, and fails.
const leakCommand = `echo "DSH_TEST_SERVICE_TOKEN=$DSH_TEST_SERVICE_TOKEN"; echo "bare: $DSH_TEST_SERVICE_TOKEN"; cat deploy.env >&2; sleep 1; false`

// leakModel asks for leakCommand once, then answers with what it read
// back (echoing the tool result into its own text, as a model might).
func leakModel(r fakeanthropic.Request) fakeanthropic.Reply {
	if res := r.ToolResults(); len(res) > 0 {
		var b strings.Builder
		for _, c := range res[len(res)-1].Content {
			b.WriteString(c.Text)
		}
		return fakeanthropic.Reply{Text: "I read: " + b.String()}
	}
	return fakeanthropic.Reply{ToolUses: []fakeanthropic.ToolUse{{ID: "toolu_leak", Name: "bash",
		Input: map[string]any{"command": leakCommand, "description": "print the secrets"}}}}
}

// TestSecretsNeverRecorded: a command that prints the server's secrets
// (one the settings hand to commands, one a project file repeats) has
// them replaced before anything is
// recorded or sent: the JSONL log's bytes, the SSE stream (its live
// progress of the running command included), GET events and session,
// the model's next request and the HTML trace carry neither the provider
// key nor a secret under a secret-sounding name, while the command's other
// output (the variables' names) is there.
func TestSecretsNeverRecorded(t *testing.T) {
	e := dshtest.New(t, "..", leakModel)
	root := t.TempDir()
	ws := filepath.Join(root, "proj")
	mkdirs(t, ws)
	ws, _ = filepath.EvalSymlinks(ws)
	if err := os.WriteFile(filepath.Join(ws, "deploy.env"), []byte("ANTHROPIC_API_KEY="+secretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.Home, "settings.json"), []byte(`{"env": {"DSH_TEST_SERVICE_TOKEN": "`+serviceSecret+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := token(t, e, "alice")
	p := startServe(t, e, nil, "--root", root)
	c := client.New(p.URL, tok)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := c.CreateSession(ctx, api.CreateSession{Workspace: ws, PermissionMode: "bypassPermissions", Sandbox: "danger-full-access"})
	if err != nil {
		t.Fatal(err)
	}

	// The raw SSE stream, read byte for byte while the turn runs.
	req, _ := http.NewRequestWithContext(ctx, "GET", p.URL+"/v1/sessions/"+string(s.ID)+"/stream?from=0", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %s", resp.Status)
	}
	var sse bytes.Buffer
	var ended atomic.Bool
	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			sse.Write(buf[:n])
			if bytes.Contains(sse.Bytes(), []byte(`"type":"turn/end"`)) {
				ended.Store(true)
				return
			}
			if err != nil {
				return
			}
		}
	}()
	if _, err := c.Send(ctx, s.ID, "show me the environment"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-streamDone:
	case <-ctx.Done():
		t.Fatal("the turn did not end")
	}
	resp.Body.Close()
	if !ended.Load() {
		t.Fatalf("the stream ended before turn/end: %s", sse.String())
	}
	// The command's output went out live too (scrubbed as the log is).
	if !bytes.Contains(sse.Bytes(), []byte("event: progress\ndata: ")) || !bytes.Contains(sse.Bytes(), []byte(`SERVICE_TOKEN=[REDACTED]`)) {
		t.Errorf("the stream carried no progress of the command: %s", sse.String())
	}

	page, err := c.Events(ctx, s.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var result string
	for _, ev := range page.Events {
		if ev.Type == session.TypeToolResult {
			result = string(ev.Data)
		}
	}
	// The command ran and printed the variables: their names are there,
	// their values are not.
	for _, want := range []string{"DSH_TEST_SERVICE_TOKEN=[REDACTED]", "ANTHROPIC_API_KEY=[REDACTED]"} {
		if !strings.Contains(result, want) {
			t.Errorf("the recorded result lacks %q: %s", want, result)
		}
	}
	eventsBody := getRaw(t, ctx, p.URL+"/v1/sessions/"+string(s.ID)+"/events?from=0&limit=1000", tok)
	sessionBody := getRaw(t, ctx, p.URL+"/v1/sessions/"+string(s.ID), tok)
	var logs []byte
	_ = filepath.WalkDir(e.Home, func(path string, d fs.DirEntry, err error) error {
		// The user's own configuration holds the secret, and checkpoints
		// keep the project's files as they are (deploy.env among them).
		if d != nil && d.IsDir() && path == filepath.Join(e.Home, "checkpoints", "objects") {
			return filepath.SkipDir
		}
		if err == nil && !d.IsDir() && d.Name() != "settings.json" {
			b, _ := os.ReadFile(path)
			if bytes.Contains(b, []byte(secretKey)) || bytes.Contains(b, []byte(serviceSecret)) {
				t.Errorf("%s carries a secret", path)
			}
			logs = append(logs, b...)
		}
		return nil
	})
	trace := e.Run("", "sessions", "show", string(s.ID), "--html")
	if trace.Code != 0 {
		t.Fatalf("sessions show --html: %d %s", trace.Code, trace.Stderr)
	}
	if !strings.Contains(trace.Stdout, "SERVICE_TOKEN") {
		t.Errorf("the trace lacks the command's output")
	}
	var sent strings.Builder
	for _, r := range e.Model.Requests() {
		sent.WriteString(r.Text())
	}
	if !strings.Contains(sent.String(), "SERVICE_TOKEN=[REDACTED]") {
		t.Errorf("the model was not sent the scrubbed result: %s", sent.String())
	}
	for name, b := range map[string][]byte{"the SSE stream": sse.Bytes(), "GET events": eventsBody, "GET session": sessionBody,
		"the files under DSH_HOME (logs, sessions)": logs, "the HTML trace": []byte(trace.Stdout), "the model's requests": []byte(sent.String())} {
		for _, secret := range []string{serviceSecret, secretKey} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s carries the secret %q", name, secret)
			}
		}
	}
}

// getRaw returns a GET's body as the server wrote it.
func getRaw(t *testing.T, ctx context.Context, url, tok string) []byte {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return b
}
