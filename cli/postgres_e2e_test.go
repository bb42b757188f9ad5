package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dshq/dsh/internal/pgtest"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/postgres"
	"github.com/dshq/dsh/store/storetest"
)

// pgHost is one "machine" sharing a PostgreSQL store: its own DSH_HOME and
// host identity, the same database and schema as the others.
type pgHost struct {
	home, id, url, baseURL string
}

func newPGHost(t testing.TB, url, schema, id, baseURL string, ttl time.Duration) pgHost {
	t.Helper()
	home := t.TempDir()
	_ = os.Chmod(home, 0o700)
	cfg := fmt.Sprintf(`{"sessionStore": "postgres", "postgres": {"schema": %q, "leaseTTL": %q}}`, schema, ttl.String())
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return pgHost{home: home, id: id, url: url, baseURL: baseURL}
}

func (h pgHost) cmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(dshBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DSH_HOME="+h.home, "DSH_DATABASE_URL="+h.url, "DSH_HOST_ID="+h.id,
		"DEEPSEEK_API_KEY=test-key", "DEEPSEEK_BASE_URL="+h.baseURL, "ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "DSH_MODEL=")
	return cmd
}

func (h pgHost) run(t *testing.T, dir string, args ...string) run {
	t.Helper()
	cmd := h.cmd(dir, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return run{out.String(), errb.String(), code}
}

// readLog reads a session straight from the database, as a third process.
func readLog(t *testing.T, url, schema string, id session.ID) []session.Event {
	t.Helper()
	ctx := context.Background()
	b, err := postgres.Open(ctx, postgres.Options{URL: url, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	scope := kernel.NewScope("read")
	defer scope.Close()
	c, err := store.Attach(scope, nil, b, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, evs, err := c.Read(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return store.CloneEvents(evs)
}

func onlySession(t *testing.T, h pgHost, dir string) session.ID {
	t.Helper()
	ls := h.run(t, dir, "sessions", "--json")
	var infos []store.Info
	if err := json.Unmarshal([]byte(ls.stdout), &infos); err != nil || len(infos) != 1 {
		t.Fatalf("sessions: %v %+v", err, ls)
	}
	return infos[0].Header.ID
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func turnEnds(t *testing.T, evs []session.Event) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		if e.Type == session.TypeTurnEnd {
			te, err := session.Decode[session.TurnEnd](e)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, te.Reason.Kind)
		}
	}
	return out
}

// TestPostgresMultiHost: two dsh processes with different host identities
// share one database. The first runs a long turn (a tool step) and dies
// mid-step; the second's `dsh -r` waits for the lease to expire, closes the
// interrupted turn and continues. In the second case the first is frozen
// (SIGSTOP, as a paused VM) instead: revived after the takeover, it is
// fenced off, writes nothing and exits with an error naming the new holder.
func TestPostgresMultiHost(t *testing.T) {
	for _, mode := range []string{"killed", "frozen"} {
		t.Run(mode, func(t *testing.T) {
			url, schema := pgtest.Schema(t)
			dir := t.TempDir()
			marker := filepath.Join(dir, "in-the-tool")
			dsA := &deepseek{replies: []string{
				toolReply("call_1", "bash", map[string]string{"command": "touch " + marker + " && sleep 4", "description": "a long step"}),
				textReply("A finished"),
			}}
			srvA := httptest.NewServer(dsA)
			defer srvA.Close()
			dsB := &deepseek{replies: []string{textReply("B carries on")}}
			srvB := httptest.NewServer(dsB)
			defer srvB.Close()
			const ttl = 2 * time.Second
			hostA := newPGHost(t, url, schema, "host-a", srvA.URL, ttl)
			hostB := newPGHost(t, url, schema, "host-b", srvB.URL, ttl)

			a := hostA.cmd(dir, "-p", "--model", "deepseek/deepseek-chat", "--allowedTools", "Bash", "do the long thing")
			var aOut, aErr bytes.Buffer
			a.Stdout, a.Stderr = &aOut, &aErr
			if err := a.Start(); err != nil {
				t.Fatal(err)
			}
			waitFile(t, marker) // A is inside its tool step
			id := onlySession(t, hostB, dir)
			if mode == "killed" {
				_ = a.Process.Signal(syscall.SIGKILL)
				_ = a.Wait()
			} else {
				_ = a.Process.Signal(syscall.SIGSTOP)
			}
			// While A's lease is live, a plain read works and names no one.
			before := readLog(t, url, schema, id)
			if len(before) == 0 || before[len(before)-1].Type == session.TypeTurnEnd {
				t.Fatalf("A's turn should be open in the store: %d events", len(before))
			}

			start := time.Now()
			b := hostB.run(t, dir, "-r", string(id), "-p", "--model", "deepseek/deepseek-chat", "now continue")
			waited := time.Since(start)
			if b.code != 0 || strings.TrimSpace(b.stdout) != "B carries on" {
				t.Fatalf("B: %+v", b)
			}
			if !strings.Contains(b.stderr, "is held by pid") || !strings.Contains(b.stderr, "host-a") || !strings.Contains(b.stderr, "waiting up to") {
				t.Fatalf("B did not say whose lease it waited for: %q", b.stderr)
			}
			if waited < ttl/2 {
				t.Fatalf("B resumed after %s, before A's lease (%s) could expire", waited, ttl)
			}
			after := readLog(t, url, schema, id)
			if ends := turnEnds(t, after); len(ends) != 2 || ends[0] != session.EndInterrupted || ends[1] != session.EndCompleted {
				t.Fatalf("turn ends %v, want A's interrupted then B's completed", ends)
			}
			for i := range before {
				if !store.EventsEqual(before[i], after[i]) {
					t.Fatalf("event %d that A committed changed", i)
				}
			}
			if mode == "frozen" {
				// A wakes up: its tool ends, its next flush is refused (or
				// its renewal finds the lease gone first), and it stops.
				_ = a.Process.Signal(syscall.SIGCONT)
				werr := make(chan error, 1)
				go func() { werr <- a.Wait() }()
				select {
				case <-werr:
				case <-time.After(30 * time.Second):
					_ = a.Process.Kill()
					t.Fatal("the fenced process did not stop")
				}
				if a.ProcessState.ExitCode() == 0 || !strings.Contains(aErr.String(), "taken over by pid") || !strings.Contains(aErr.String(), "host-b") {
					t.Fatalf("A after the takeover: exit %d, stderr %q", a.ProcessState.ExitCode(), aErr.String())
				}
				final := readLog(t, url, schema, id)
				if len(final) != len(after) {
					t.Fatalf("the fenced process wrote: %d events, then %d", len(after), len(final))
				}
				dsA.mu.Lock()
				n := len(dsA.requests)
				dsA.mu.Unlock()
				if n != 1 {
					t.Fatalf("the fenced process asked the model again (%d requests)", n)
				}
			}
		})
	}
}

// TestPostgresResumeHeldSession: a live holder is named, not waited out;
// --takeover takes the session from it after one lease period, and the
// holder stops.
func TestPostgresResumeHeldSession(t *testing.T) {
	url, schema := pgtest.Schema(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "busy")
	dsA := &deepseek{replies: []string{toolReply("call_1", "bash", map[string]string{"command": "touch " + marker + " && sleep 20", "description": "busy"})}}
	srvA := httptest.NewServer(dsA)
	defer srvA.Close()
	dsB := &deepseek{replies: []string{textReply("mine now")}}
	srvB := httptest.NewServer(dsB)
	defer srvB.Close()
	const ttl = time.Second
	hostA := newPGHost(t, url, schema, "host-a", srvA.URL, ttl)
	hostB := newPGHost(t, url, schema, "host-b", srvB.URL, ttl)
	a := hostA.cmd(dir, "-p", "--model", "deepseek/deepseek-chat", "--allowedTools", "Bash", "be busy")
	var aErr bytes.Buffer
	a.Stderr = &aErr
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Process.Kill(); _ = a.Wait() }()
	waitFile(t, marker)
	id := onlySession(t, hostB, dir)
	held := hostB.run(t, dir, "-r", string(id), "-p", "--model", "deepseek/deepseek-chat", "mine?")
	if held.code == 0 || !strings.Contains(held.stderr, "is in use by another dsh process (pid") || !strings.Contains(held.stderr, "on host host-a") || !strings.Contains(held.stderr, "--takeover") {
		t.Fatalf("resume of a live session: %+v", held)
	}
	took := hostB.run(t, dir, "-r", string(id), "--takeover", "-p", "--model", "deepseek/deepseek-chat", "mine!")
	if took.code != 0 || strings.TrimSpace(took.stdout) != "mine now" || !strings.Contains(took.stderr, "taking it over in") {
		t.Fatalf("takeover: %+v", took)
	}
	werr := make(chan error, 1)
	go func() { werr <- a.Wait() }()
	select {
	case <-werr:
	case <-time.After(30 * time.Second):
		t.Fatal("the holder kept running after the takeover")
	}
	if !strings.Contains(aErr.String(), "taken over by") {
		t.Fatalf("holder stderr: %q", aErr.String())
	}
	if ends := turnEnds(t, readLog(t, url, schema, id)); len(ends) != 2 || ends[0] != session.EndInterrupted || ends[1] != session.EndCompleted {
		t.Fatalf("turn ends %v", ends)
	}
}

// TestPostgresTailFollow: `dsh sessions tail --follow` in one process shows
// every event of a turn run by another, as it commits.
func TestPostgresTailFollow(t *testing.T) {
	url, schema := pgtest.Schema(t)
	dir := t.TempDir()
	ds := &deepseek{replies: []string{textReply("first answer"),
		toolReply("call_1", "bash", map[string]string{"command": "echo hi", "description": "say hi"}), textReply("second answer")}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	h := newPGHost(t, url, schema, "host", srv.URL, 5*time.Second)
	if r := h.run(t, dir, "-p", "--model", "deepseek/deepseek-chat", "one"); r.code != 0 {
		t.Fatalf("first turn: %+v", r)
	}
	id := onlySession(t, h, dir)
	have := len(readLog(t, url, schema, id))
	f := h.cmd(dir, "sessions", "tail", string(id), "--follow", "--json", "-n", "0")
	out, err := f.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var fErr bytes.Buffer
	f.Stderr = &fErr
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Process.Kill(); _ = f.Wait() }()
	lines := make(chan session.Event, 256)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var e session.Event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				lines <- e
			}
		}
		close(lines)
	}()
	time.Sleep(300 * time.Millisecond) // let the follower subscribe
	if r := h.run(t, dir, "-r", string(id), "-p", "--model", "deepseek/deepseek-chat", "--allowedTools", "Bash", "two"); r.code != 0 {
		t.Fatalf("second turn: %+v", r)
	}
	log := readLog(t, url, schema, id)
	for i := have; i < len(log); i++ {
		select {
		case e, ok := <-lines:
			if !ok {
				t.Fatalf("the follower stopped: %s", fErr.String())
			}
			if e.Seq != int64(i) || e.Type != log[i].Type {
				t.Fatalf("followed seq %d %s, want %d %s", e.Seq, e.Type, i, log[i].Type)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d (%s) never reached the follower; stderr %q", i, log[i].Type, fErr.String())
		}
	}
	if log[len(log)-1].Type != session.TypeTurnEnd {
		t.Fatalf("the second turn did not end: %s", log[len(log)-1].Type)
	}
}

// TestPostgresStoreCommands: `dsh store`, `dsh store migrate`, and `dsh
// sessions copy` between a file store and the database, both ways.
func TestPostgresStoreCommands(t *testing.T) {
	url, schema := pgtest.Schema(t)
	dir := t.TempDir()
	ds := &deepseek{replies: []string{textReply("one"), textReply("two")}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	h := newPGHost(t, url, schema, "host", srv.URL, 5*time.Second)
	pw := url[strings.Index(url, "://dsh:")+7 : strings.Index(url, "@")]
	m := h.run(t, dir, "store", "migrate")
	if m.code != 0 || !strings.Contains(m.stdout, "migrated from version 0 to 2") || !strings.Contains(m.stdout, "2: snapshots") || strings.Contains(m.stdout+m.stderr, pw) {
		t.Fatalf("migrate: %+v", m)
	}
	if s := h.run(t, dir, "store"); s.code != 0 || !strings.Contains(s.stdout, "postgres store at postgres://dsh:xxxxx@") || strings.Contains(s.stdout, pw) {
		t.Fatalf("store: %+v", s)
	}
	if m := h.run(t, dir, "store", "migrate"); m.code != 0 || !strings.Contains(m.stdout, "up to date") {
		t.Fatalf("migrate again: %+v", m)
	}
	// A session in JSONL (before the switch), copied into PostgreSQL.
	jsonlHome := pgHost{home: t.TempDir(), url: url, baseURL: srv.URL}
	_ = os.Chmod(jsonlHome.home, 0o700)
	if r := jsonlHome.run(t, dir, "-p", "--model", "deepseek/deepseek-chat", "a prompt about plums"); r.code != 0 {
		t.Fatalf("jsonl run: %+v", r)
	}
	_ = os.Rename(filepath.Join(jsonlHome.home, "sessions"), filepath.Join(h.home, "sessions"))
	cp := h.run(t, dir, "sessions", "copy", "--from", "jsonl")
	if cp.code != 0 || !strings.Contains(cp.stdout, "copied 1 sessions from jsonl to postgres") {
		t.Fatalf("copy in: %+v", cp)
	}
	if ls := h.run(t, dir, "sessions"); !strings.Contains(ls.stdout, "a prompt about plums") {
		t.Fatalf("listing: %+v", ls)
	}
	back := h.run(t, dir, "sessions", "copy", "--from", "postgres", "--to", "sqlite")
	if back.code != 0 || !strings.Contains(back.stdout, "copied 1 sessions from postgres to sqlite") {
		t.Fatalf("copy out: %+v", back)
	}
	if bad := h.run(t, dir, "sessions", "copy", "--from", "mongo"); bad.code != 2 || !strings.Contains(bad.stderr, `unknown store "mongo"`) {
		t.Fatalf("bad store: %+v", bad)
	}
}

// BenchmarkPostgresTailFollow measures how long after a commit `dsh
// sessions tail --follow` (another process) prints the committed events:
// this process writes one 23-event agent step per iteration through a
// coordinator and times from the flush's return to the follower's line
// for the step's last event. It reports the median, the 99th percentile
// and the worst case.
func BenchmarkPostgresTailFollow(b *testing.B) {
	url, schema := pgtest.Schema(b)
	ctx := context.Background()
	be, err := postgres.Open(ctx, postgres.Options{URL: url, Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	live := session.NewLive(nil)
	scope := kernel.NewScope("writer")
	defer scope.Close()
	if _, err := store.Attach(scope, live, be, store.Options{}); err != nil {
		b.Fatal(err)
	}
	s, err := live.Create(ctx, scope, "followed", session.Options{Header: session.Header{Cwd: "/bench"}})
	if err != nil {
		b.Fatal(err)
	}
	if err := storetest.Apply(ctx, s, []storetest.Op{storetest.TurnStart(1), storetest.User("go")}); err != nil {
		b.Fatal(err)
	}
	if err := live.FlushSession(ctx, s); err != nil {
		b.Fatal(err)
	}
	h := newPGHost(b, url, schema, "follower", "http://127.0.0.1:1", 5*time.Second)
	f := h.cmd(b.TempDir(), "sessions", "tail", "followed", "--follow", "--json", "-n", "0")
	out, err := f.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Process.Kill(); _ = f.Wait() }()
	seen := make(chan int64, 1024)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var e session.Event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				seen <- e.Seq
			}
		}
		close(seen)
	}()
	time.Sleep(500 * time.Millisecond) // the follower connects and LISTENs
	var lat []time.Duration
	b.ResetTimer()
	for step := 1; step <= b.N; step++ {
		ops := []storetest.Op{storetest.StepStart(1, step)}
		for i := range 20 {
			ops = append(ops, storetest.Chunk(1, step, fmt.Sprintf("token %d ", i)))
		}
		ops = append(ops, storetest.Assistant(1, step, "answer"), storetest.StepEnd(1, step))
		if err := storetest.Apply(ctx, s, ops); err != nil {
			b.Fatal(err)
		}
		if err := live.FlushSession(ctx, s); err != nil {
			b.Fatal(err)
		}
		committed := time.Now()
		last := int64(s.Len() - 1)
		for {
			seq, ok := <-seen
			if !ok {
				b.Fatal("the follower stopped")
			}
			if seq == last {
				break
			}
		}
		lat = append(lat, time.Since(committed))
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
}

// TestPostgresDatabaseRestart: the database restarts while `dsh -p` is in
// the middle of a turn. The flush that meets the outage says so on stderr,
// retries until the server is back, and the run completes with nothing
// lost.
func TestPostgresDatabaseRestart(t *testing.T) {
	cl := pgtest.Start(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "in-the-tool")
	ds := &deepseek{replies: []string{
		toolReply("call_1", "bash", map[string]string{"command": "touch " + marker + " && sleep 1", "description": "a step"}),
		textReply("done despite the outage"),
	}}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	h := newPGHost(t, cl.URL, "dsh", "host", srv.URL, 5*time.Second)
	a := h.cmd(dir, "-p", "--model", "deepseek/deepseek-chat", "--allowedTools", "Bash", "work through it")
	var out, errb bytes.Buffer
	a.Stdout, a.Stderr = &out, &errb
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, marker)
	cl.StopServer(t, "fast")
	time.Sleep(2500 * time.Millisecond) // the step ends and its flush meets the outage
	cl.StartServer(t)
	if err := a.Wait(); err != nil {
		t.Fatalf("dsh: %v\nstdout %s\nstderr %s", err, out.String(), errb.String())
	}
	if strings.TrimSpace(out.String()) != "done despite the outage" {
		t.Fatalf("stdout %q", out.String())
	}
	if !strings.Contains(errb.String(), "the database is unreachable") || !strings.Contains(errb.String(), "succeeded after") {
		t.Fatalf("the outage was not reported: %q", errb.String())
	}
	if strings.Contains(errb.String(), pgtestPassword(cl.URL)) {
		t.Fatal("stderr shows the password")
	}
	id := onlySession(t, h, dir)
	evs := readLog(t, cl.URL, "dsh", id)
	if ends := turnEnds(t, evs); len(ends) != 1 || ends[0] != session.EndCompleted {
		t.Fatalf("turn ends %v", ends)
	}
	var results int
	for _, e := range evs {
		if e.Type == session.TypeToolResult {
			results++
		}
	}
	if results != 1 {
		t.Fatalf("%d tool results stored", results)
	}
}

func pgtestPassword(url string) string {
	return url[strings.Index(url, "://dsh:")+7 : strings.Index(url, "@")]
}
