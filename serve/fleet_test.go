package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dshq/dsh/internal/dshtest"
	"github.com/dshq/dsh/internal/pgtest"
	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/client"
	"github.com/dshq/dsh/session"
)

// TestFleet is the fleet of issue 28: three dsh serve workers on one
// PostgreSQL, 100 queued runs, one worker SIGKILLed in the middle of a
// run's turn. Every run completes exactly once (one completed turn in its
// session, River's final state succeeded); no session has a gap or a
// second writer (the store's seqs, the turns' nesting); a client streaming
// the killed worker's session resumes (Last-Event-ID) on another worker and
// sees the retried turn through to its end.
func TestFleet(t *testing.T) {
	url, schema := pgtest.Schema(t)
	e := dshtest.New(t, "..", rewindReply)
	root := t.TempDir()
	var spaces []string
	for i := range 5 {
		spaces = append(spaces, filepath.Join(root, fmt.Sprintf("ws%d", i)))
	}
	mkdirs(t, spaces...)
	cfg := fmt.Sprintf(`{"sessionStore": "postgres", "postgres": {"url": %q, "schema": %q, "leaseTTL": "2s"}}`, url, schema)
	if err := os.WriteFile(filepath.Join(e.Home, "settings.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	admin := token(t, e, "admin")
	var workers []*proc
	for i := range 3 {
		name := fmt.Sprintf("w%d", i)
		workers = append(workers, startServe(t, e, []string{"DSH_DATABASE_URL=" + url}, "--root", root, "--worker", name,
			"--run-workers", "4", "--run-workspace-limit", "0", "--run-rescue-after", "2s", "--run-retry-backoff", "200ms", "--rate", "100000", "--burst", "100000"))
	}
	ctx := context.Background()
	clients := make([]*client.Client, len(workers))
	for i, p := range workers {
		clients[i] = client.New(p.URL, admin)
		clients[i].HTTP = newContract(t, p.URL).client()
	}

	// The slow runs first: a turn that sleeps in a tool, so a worker can be
	// killed in the middle of it.
	want := map[int64]string{}
	var slow []api.Run
	for i := range 3 {
		r, err := clients[i].CreateRun(ctx, api.CreateRun{Workspace: spaces[i], Prompt: "shell sleep 4", PermissionMode: "bypassPermissions"})
		if err != nil {
			t.Fatal(err)
		}
		slow = append(slow, r)
		want[r.ID] = "done"
	}
	for i := range 97 {
		prompt := fmt.Sprintf("task %d", i)
		r, err := clients[i%3].CreateRun(ctx, api.CreateRun{Workspace: spaces[i%len(spaces)], Prompt: prompt, MaxAttempts: 3})
		if err != nil {
			t.Fatal(err)
		}
		want[r.ID] = "hello from the scripted model, answering " + prompt
	}

	// A slow run in the middle of its tool call, the worker running its
	// turn and a client streaming it from that worker. The worker is the
	// session's holder, not the run's latest attempt: the slow turn
	// outlasts the rescue time, so River may already have handed a second
	// attempt to another worker, which snoozes while the first holds the
	// session (killing that one would interrupt nothing).
	var victim api.Run
	vi := -1
	waitFor(t, "a slow run in its tool call", func() bool {
		for _, s := range slow {
			r, err := clients[0].Run(ctx, s.ID)
			if err != nil || r.State != api.RunRunning || r.Session == "" {
				continue
			}
			for i, c := range clients {
				if v, err := c.Session(ctx, r.Session); err != nil || v.Holder != fmt.Sprintf("w%d", i) {
					continue
				}
				page, err := c.Events(ctx, r.Session, 0, 0)
				if err == nil && hasType(page.Events, session.TypeToolCall) && !hasType(page.Events, session.TypeTurnEnd) {
					victim, vi = r, i
					return true
				}
			}
		}
		return false
	})
	other := (vi + 1) % 3
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	var seen []session.Event
	for ev, err := range clients[vi].Stream(sctx, victim.Session, 0, client.StreamOptions{}) {
		if err != nil {
			t.Fatalf("stream from the victim: %v", err)
		}
		seen = append(seen, ev)
		if ev.Type == session.TypeToolCall {
			break
		}
	}
	scancel()
	workers[vi].Kill()
	t.Logf("killed w%d running run %d (session %s; latest attempt on %s) after %d streamed events", vi, victim.ID, victim.Session, victim.Worker, len(seen))

	// The client resumes from its last event on another worker, and sees
	// the retried run's turn complete.
	rest := resumeSSE(t, workers[other].URL, admin, victim.Session, seen[len(seen)-1].Seq)
	if rest == nil {
		r, err := clients[other].Run(ctx, victim.ID)
		t.Fatalf("the resumed stream saw no completed turn; the run: %v %+v\n%s", err, r, workers[other].Stderr())
	}
	all := append(seen, rest...)
	for i, ev := range all {
		if ev.Seq != int64(i) {
			t.Fatalf("the resumed stream has seq %d at %d", ev.Seq, i)
		}
	}

	// Every run finishes, exactly once.
	live := clients[other]
	deadline := time.Now().Add(150 * time.Second)
	for id := range want {
		for {
			r, err := live.Run(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if r.FinishedAt != 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %d did not finish: %+v", id, r)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	runs, err := live.Runs(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != len(want) {
		t.Fatalf("%d runs listed, want %d", len(runs), len(want))
	}
	retried := 0
	for _, r := range runs {
		if r.State != api.RunSucceeded || r.Result != want[r.ID] {
			t.Errorf("run %d: %s %q (attempts %d, errors %v), want succeeded %q", r.ID, r.State, r.Result, r.Attempt, r.Errors, want[r.ID])
		}
		if r.Attempt > 1 {
			retried++
		}
		evs := allEvents(t, live, r.Session)
		completed, open := 0, false
		for i, ev := range evs {
			if ev.Seq != int64(i) {
				t.Fatalf("run %d: session %s has seq %d at %d", r.ID, r.Session, ev.Seq, i)
			}
			switch ev.Type {
			case session.TypeTurnStart:
				if open {
					t.Fatalf("run %d: a turn starts inside another (two writers)", r.ID)
				}
				open = true
			case session.TypeTurnEnd:
				open = false
				if end, _ := session.Decode[session.TurnEnd](ev); end.Reason.Kind == session.EndCompleted {
					completed++
				}
			}
		}
		if completed != 1 || open {
			t.Errorf("run %d: %d completed turns (open %v) in session %s, want exactly 1", r.ID, completed, open, r.Session)
		}
	}
	v, err := live.Run(ctx, victim.ID)
	if err != nil || v.Attempt < 2 {
		t.Fatalf("the killed run was not retried: %v %+v", err, v)
	}
	interrupted := false
	for _, ev := range allEvents(t, live, victim.Session) {
		if end, err := session.Decode[session.TurnEnd](ev); err == nil && ev.Type == session.TypeTurnEnd && end.Reason.Kind != session.EndCompleted {
			interrupted = true
		}
	}
	if !interrupted {
		t.Fatal("the killed worker's turn was not closed as interrupted")
	}
	t.Logf("%d runs, %d retried", len(runs), retried)

	// The store itself: every session's seqs are 0..n-1, no gap.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT session_id, count(*), min(seq), max(seq) FROM `+pgx.Identifier{schema, "events"}.Sanitize()+` GROUP BY session_id`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var id string
		var count, lo, hi int64
		if err := rows.Scan(&id, &count, &lo, &hi); err != nil {
			t.Fatal(err)
		}
		if lo != 0 || hi != count-1 {
			t.Errorf("session %s in the store: %d events, seqs %d..%d", id, count, lo, hi)
		}
		n++
	}
	if rows.Err() != nil || n < len(want) {
		t.Fatalf("%d sessions in the store (%v), want %d", n, rows.Err(), len(want))
	}

	// dsh serve jobs reads the same queue.
	jr := runWith(t, e, []string{"DSH_DATABASE_URL=" + url}, "serve", "jobs", "--limit", "1000", "--json")
	if got := strings.Count(jr, "\n"); got != len(want) || strings.Contains(jr, url) {
		t.Fatalf("dsh serve jobs printed %d lines:\n%s", got, jr)
	}
}

func hasType(evs []session.Event, typ string) bool {
	for _, ev := range evs {
		if ev.Type == typ {
			return true
		}
	}
	return false
}

func allEvents(t *testing.T, c *client.Client, id session.ID) []session.Event {
	t.Helper()
	var out []session.Event
	from := int64(0)
	for {
		page, err := c.Events(context.Background(), id, from, 5000)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Events...)
		if !page.More {
			return out
		}
		from = page.Next
	}
}

// resumeSSE reconnects to a session's stream as an EventSource does, with
// Last-Event-ID, and reads until a completed turn ends.
func resumeSSE(t *testing.T, base, tok string, id session.ID, last int64) []session.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/sessions/"+string(id)+"/stream", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Last-Event-ID", strconv.FormatInt(last, 10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("resumed stream: %s", resp.Status)
	}
	var out []session.Event
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev session.Event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("stream data %q: %v", data, err)
		}
		out = append(out, ev)
		if ev.Type == session.TypeTurnEnd {
			if end, _ := session.Decode[session.TurnEnd](ev); end.Reason.Kind == session.EndCompleted {
				return out
			}
		}
	}
	t.Errorf("the resumed stream ended (%v) after %d events without a completed turn", sc.Err(), len(out))
	return nil
}

// runWith runs dsh in e with extra environment and returns its stdout.
func runWith(t *testing.T, e *dshtest.Env, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(dshtest.Bin, args...)
	cmd.Dir, cmd.Env = e.Dir, e.Environ(env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("dsh %v: %v", args, err)
	}
	return string(out)
}
