package serve_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dshq/dsh/internal/dshtest"
	"github.com/dshq/dsh/internal/pgtest"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/client"
	"github.com/dshq/dsh/session"
)

// TestRetryAfterDeadWorker: a worker SIGKILLed in the middle of a run's
// tool call leaves the run's prompt in its session with no answer. The
// worker that takes the run over closes the dead turn as interrupted and
// retries it without recording the prompt again: the session holds the
// prompt once, an interrupted turn, then one completed turn started by a
// retry, and the run succeeds with that turn's answer.
func TestRetryAfterDeadWorker(t *testing.T) {
	url, schema := pgtest.Schema(t)
	e := dshtest.New(t, "..", rewindReply)
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	mkdirs(t, ws)
	cfg := fmt.Sprintf(`{"sessionStore": "postgres", "postgres": {"schema": %q, "leaseTTL": "2s"}}`, schema)
	if err := os.WriteFile(filepath.Join(e.Home, "settings.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	admin := token(t, e, "admin")
	env := []string{"DSH_DATABASE_URL=" + url}
	args := []string{"--root", root, "--run-rescue-after", "2s", "--run-retry-backoff", "200ms"}
	first := startServe(t, e, env, append(args, "--worker", "w0")...)
	ctx := context.Background()
	c := client.New(first.URL, admin)

	// The tool blocks the first time only, so the retried turn, if it ran
	// the command again, would not hang.
	marker := filepath.Join(ws, "ran-once")
	prompt := fmt.Sprintf("shell if [ -e %[1]s ]; then echo again; else touch %[1]s; sleep 120; fi", marker)
	run, err := c.CreateRun(ctx, api.CreateRun{Workspace: ws, Prompt: prompt, PermissionMode: "bypassPermissions", MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the run in its tool call\n"+first.Stderr(), func() bool {
		r, err := c.Run(ctx, run.ID)
		if err != nil || r.Session == "" {
			return false
		}
		run = r
		_, err = os.Stat(marker)
		return err == nil
	})
	first.Kill()

	second := startServe(t, e, env, append(args, "--worker", "w1")...)
	c = client.New(second.URL, admin)
	deadline := time.Now().Add(90 * time.Second)
	for {
		r, err := c.Run(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.FinishedAt != 0 {
			run = r
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not finish after its worker died: %+v\n%s", r, second.Stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if run.State != api.RunSucceeded || run.Result != "done" || run.Attempt < 2 {
		t.Fatalf("run: %s %q after %d attempts (errors %v), want succeeded \"done\" on a retry", run.State, run.Result, run.Attempt, run.Errors)
	}

	var prompts int
	var ends []string
	var triggers []string
	for _, ev := range allEvents(t, c, run.Session) {
		switch ev.Type {
		case session.TypeUserMessage:
			p, err := session.Decode[session.Prompt](ev)
			if err != nil {
				t.Fatal(err)
			}
			if llm.TextOf(p.Content) != prompt {
				t.Fatalf("user/message %q, want the run's prompt", llm.TextOf(p.Content))
			}
			prompts++
		case session.TypeTurnStart:
			ts, _ := session.Decode[session.TurnStart](ev)
			triggers = append(triggers, ts.Trigger.Kind)
		case session.TypeTurnEnd:
			te, _ := session.Decode[session.TurnEnd](ev)
			ends = append(ends, te.Reason.Kind)
		}
	}
	if prompts != 1 {
		t.Errorf("the session holds the run's prompt %d times, want once", prompts)
	}
	if fmt.Sprint(triggers) != fmt.Sprint([]string{session.TriggerMessage, session.TriggerRetry}) ||
		fmt.Sprint(ends) != fmt.Sprint([]string{session.EndInterrupted, session.EndCompleted}) {
		t.Errorf("turns started by %v ended %v, want [message retry] ended [interrupted completed]", triggers, ends)
	}
}
