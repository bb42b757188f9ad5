package serve_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	rig := newRetryRig(t, "")
	ctx := context.Background()
	c := rig.client
	// The tool blocks the first time only, so the retried turn, if it ran
	// the command again, would not hang.
	marker := filepath.Join(rig.ws, "ran-once")
	prompt := fmt.Sprintf("shell if [ -e %[1]s ]; then echo again; else touch %[1]s; sleep 120; fi", marker)
	run, err := c.CreateRun(ctx, api.CreateRun{Workspace: rig.ws, Prompt: prompt, PermissionMode: "bypassPermissions", MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	run = rig.killWhen(t, run, marker)
	c = rig.client
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

// TestRunAnsweredBeforeItsWorkerDied: a worker SIGKILLed after the model's
// final answer was stored but before its turn ended (here in a Stop hook)
// leaves a turn that the next worker closes as interrupted, with nothing
// for the model to answer. The run succeeds with the stored answer, and
// the model is not asked again. It failed the run ("nothing to retry")
// after every attempt.
func TestRunAnsweredBeforeItsWorkerDied(t *testing.T) {
	hook := filepath.Join(t.TempDir(), "stop.sh")
	marker := hook + ".ran"
	script := fmt.Sprintf("#!/bin/sh\ncat >/dev/null\n[ -e %[1]s ] && exit 0\ntouch %[1]s\nexec sleep 60\n", marker)
	if err := os.WriteFile(hook, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	rig := newRetryRig(t, fmt.Sprintf(`, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": %q}]}]}`, hook))
	ctx := context.Background()
	const prompt = "say hello"
	run, err := rig.client.CreateRun(ctx, api.CreateRun{Workspace: rig.ws, Prompt: prompt, MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	run = rig.killWhen(t, run, marker)
	want := "hello from the scripted model, answering " + prompt
	if run.State != api.RunSucceeded || run.Result != want || run.Attempt < 2 {
		t.Fatalf("run: %s %q after %d attempts (errors %v), want succeeded %q after the worker died", run.State, run.Result, run.Attempt, run.Errors, want)
	}
	asked := 0
	for _, r := range rig.e.Model.Requests() {
		if strings.TrimSpace(r.LastUserText()) == prompt {
			asked++
		}
	}
	if asked != 1 {
		t.Errorf("the model was asked the run's prompt %d times, want once", asked)
	}
	var types []string
	for _, ev := range allEvents(t, rig.client, run.Session) {
		switch ev.Type {
		case session.TypeUserMessage, session.TypeAssistantMessage, session.TypeTurnStart:
			types = append(types, ev.Type)
		case session.TypeTurnEnd:
			te, _ := session.Decode[session.TurnEnd](ev)
			types = append(types, ev.Type+":"+te.Reason.Kind)
		}
	}
	if w := []string{session.TypeTurnStart, session.TypeUserMessage, session.TypeAssistantMessage, session.TypeTurnEnd + ":" + session.EndInterrupted}; fmt.Sprint(types) != fmt.Sprint(w) {
		t.Errorf("the session holds %v, want %v (one answered turn, closed as interrupted by the worker that took over)", types, w)
	}
}

// retryRig is one dsh serve worker on a fresh PostgreSQL schema with a
// 2 s lease, runs rescued after 2 s, and a workspace for them; settings
// is appended to its settings.json object.
type retryRig struct {
	e      *dshtest.Env
	ws     string
	env    []string
	args   []string
	admin  string
	client *client.Client
	first  *proc
}

func newRetryRig(t *testing.T, settings string) *retryRig {
	t.Helper()
	url, schema := pgtest.Schema(t)
	r := &retryRig{e: dshtest.New(t, "..", rewindReply)}
	root := t.TempDir()
	r.ws = filepath.Join(root, "ws")
	mkdirs(t, r.ws)
	cfg := fmt.Sprintf(`{"sessionStore": "postgres", "postgres": {"url": %q, "schema": %q, "leaseTTL": "2s"}%s}`, url, schema, settings)
	if err := os.WriteFile(filepath.Join(r.e.Home, "settings.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r.admin = token(t, r.e, "admin")
	r.env = []string{"DSH_DATABASE_URL=" + url}
	r.args = []string{"--root", root, "--run-rescue-after", "2s", "--run-retry-backoff", "200ms"}
	r.first = startServe(t, r.e, r.env, append(r.args, "--worker", "w0")...)
	r.client = client.New(r.first.URL, r.admin)
	return r
}

// killWhen SIGKILLs the first worker once run has a session and marker
// exists, starts a second worker (the rig's client then talks to it), and
// returns the run once it has finished there.
func (r *retryRig) killWhen(t *testing.T, run api.Run, marker string) api.Run {
	t.Helper()
	ctx := context.Background()
	waitFor(t, "the run at its marker\n"+r.first.Stderr(), func() bool {
		got, err := r.client.Run(ctx, run.ID)
		if err != nil || got.Session == "" {
			return false
		}
		run = got
		_, err = os.Stat(marker)
		return err == nil
	})
	r.first.Kill()
	second := startServe(t, r.e, r.env, append(r.args, "--worker", "w1")...)
	r.client = client.New(second.URL, r.admin)
	deadline := time.Now().Add(90 * time.Second)
	for {
		got, err := r.client.Run(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.FinishedAt != 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not finish after its worker died: %+v\n%s", got, second.Stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
