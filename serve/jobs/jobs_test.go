package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dshq/dsh/internal/pgtest"
	"github.com/dshq/dsh/serve"
	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/jobs"
	"github.com/dshq/dsh/serve/tokens"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeExec plays the dsh serve of a worker: it records each attempt and
// answers as do says.
type fakeExec struct {
	mu       sync.Mutex
	attempts map[int64][]serve.RunSpec
	do       func(ctx context.Context, spec serve.RunSpec) (string, error)
}

func (f *fakeExec) ExecuteRun(ctx context.Context, spec serve.RunSpec) (string, error) {
	f.mu.Lock()
	if f.attempts == nil {
		f.attempts = map[int64][]serve.RunSpec{}
	}
	f.attempts[spec.Run] = append(f.attempts[spec.Run], spec)
	f.mu.Unlock()
	return f.do(ctx, spec)
}

func (f *fakeExec) of(run int64) []serve.RunSpec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]serve.RunSpec(nil), f.attempts[run]...)
}

func open(t *testing.T, url, schema string, workers, wsLimit int, exec jobs.Executor) *jobs.Queue {
	t.Helper()
	ctx := context.Background()
	q, err := jobs.Open(ctx, jobs.Options{URL: url, Schema: schema, Workers: workers, WorkspaceLimit: wsLimit,
		RetryBackoff: 50 * time.Millisecond, BusyWait: 50 * time.Millisecond, Worker: fmt.Sprintf("w%d", workers)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close(context.Background()) })
	if exec != nil {
		if err := q.Start(ctx, exec); err != nil {
			t.Fatal(err)
		}
	}
	return q
}

func waitRun(t *testing.T, q *jobs.Queue, id int64, cond func(api.Run) bool) api.Run {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := q.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if cond(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %d: timed out in %+v", id, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func finished(r api.Run) bool { return r.FinishedAt != 0 }

var tok = tokens.Token{Name: "tester"}

// TestRunLifecycle: a run succeeds with its result; a failing one is
// retried per its maxAttempts, each attempt on the same session, and is
// reported failed with every attempt's error; callbacks are POSTed once
// each, retried when the receiver fails.
func TestRunLifecycle(t *testing.T) {
	url, schema := pgtest.Schema(t)
	var calls atomic.Int64
	got := make(chan api.Run, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			http.Error(w, "not yet", http.StatusBadGateway) // the first delivery fails: it is retried
			return
		}
		b, _ := io.ReadAll(r.Body)
		var run api.Run
		if err := json.Unmarshal(b, &run); err != nil || r.Header.Get("X-Dsh-Run") != fmt.Sprint(run.ID) {
			t.Errorf("callback body %s (%v), header %q", b, err, r.Header.Get("X-Dsh-Run"))
		}
		got <- run
	}))
	defer recv.Close()
	exec := &fakeExec{do: func(_ context.Context, spec serve.RunSpec) (string, error) {
		if spec.Prompt == "fail" {
			return "", fmt.Errorf("the model is down (attempt %d)", spec.Attempt)
		}
		return "answered " + spec.Prompt, nil
	}}
	q := open(t, url, schema, 2, 0, exec)
	ctx := context.Background()
	ok, err := q.Create(ctx, tok, api.CreateRun{Prompt: "hello", Callback: recv.URL}, "/w/a")
	if err != nil {
		t.Fatal(err)
	}
	if ok.State != api.RunQueued || ok.Session == "" || ok.MaxAttempts != jobs.DefaultMaxAttempts || !ok.Callback {
		t.Fatalf("queued run %+v", ok)
	}
	bad, err := q.Create(ctx, tok, api.CreateRun{Prompt: "fail", MaxAttempts: 2}, "/w/b")
	if err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, q, ok.ID, finished)
	if r.State != api.RunSucceeded || r.Result != "answered hello" || r.Attempt != 1 || r.Worker != "w2" {
		t.Fatalf("succeeded run %+v", r)
	}
	select {
	case cb := <-got:
		if cb.ID != ok.ID || cb.State != api.RunSucceeded || cb.Result != "answered hello" {
			t.Fatalf("callback %+v", cb)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no callback")
	}
	r = waitRun(t, q, bad.ID, finished)
	if r.State != api.RunFailed || r.Attempt != 2 || len(r.Errors) != 2 {
		t.Fatalf("failed run %+v", r)
	}
	atts := exec.of(bad.ID)
	if len(atts) != 2 || atts[0].Session != bad.Session || atts[1].Session != bad.Session || atts[1].Attempt != 2 {
		t.Fatalf("attempts %+v", atts)
	}
	if n := len(exec.of(ok.ID)); n != 1 {
		t.Fatalf("the succeeded run was executed %d times", n)
	}
	list, err := q.List(ctx, 10)
	if err != nil || len(list) != 2 || list[0].ID != bad.ID {
		t.Fatalf("list %v %+v", err, list)
	}
	if _, err := q.Get(ctx, 999999); !errors.Is(err, serve.ErrRunNotFound) {
		t.Fatalf("unknown run: %v", err)
	}
	if _, err := q.Cancel(ctx, ok.ID); !errors.Is(err, serve.ErrRunFinished) {
		t.Fatalf("cancelling a finished run: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := calls.Load(); n != 2 {
		t.Fatalf("the callback was called %d times, want 2 (one failed delivery, one good)", n)
	}
}

// TestRunCancel: a queued run is cancelled at once; a running one has its
// context cancelled, ends cancelled and is not retried.
func TestRunCancel(t *testing.T) {
	url, schema := pgtest.Schema(t)
	ctx := context.Background()
	started := make(chan int64, 1)
	exec := &fakeExec{do: func(ctx context.Context, spec serve.RunSpec) (string, error) {
		started <- spec.Run
		<-ctx.Done()
		return "", context.Cause(ctx)
	}}
	idle := open(t, url, schema, 0, 0, nil) // queues, works nothing
	queued, err := idle.Create(ctx, tok, api.CreateRun{Prompt: "wait"}, "/w")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := idle.Cancel(ctx, queued.ID); err != nil || r.State != api.RunCancelled {
		t.Fatalf("cancel queued: %v %+v", err, r)
	}
	q := open(t, url, schema, 1, 0, exec)
	running, err := q.Create(ctx, tok, api.CreateRun{Prompt: "wait"}, "/w")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the run never started")
	}
	if _, err := q.Cancel(ctx, running.ID); err != nil {
		t.Fatal(err)
	}
	r := waitRun(t, q, running.ID, finished)
	if r.State != api.RunCancelled || r.Attempt != 1 {
		t.Fatalf("cancelled running run %+v", r)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(exec.of(running.ID)); n != 1 {
		t.Fatalf("a cancelled run ran %d times", n)
	}
	if n := len(exec.of(queued.ID)); n != 0 {
		t.Fatalf("a run cancelled while queued ran %d times", n)
	}
}

// TestLimitsAndBusy: at most WorkspaceLimit runs work in one workspace at
// once across two queues (two workers), others of the same workspace wait
// without spending attempts; a run whose session is busy waits too.
func TestLimitsAndBusy(t *testing.T) {
	url, schema := pgtest.Schema(t)
	ctx := context.Background()
	var mu sync.Mutex
	inWS := map[string]int{}
	peak := map[string]int{}
	busyLeft := atomic.Int64{}
	busyLeft.Store(3)
	do := func(_ context.Context, spec serve.RunSpec) (string, error) {
		if spec.Prompt == "busy" && busyLeft.Add(-1) >= 0 {
			return "", fmt.Errorf("%w: held by another worker", serve.ErrRunBusy)
		}
		mu.Lock()
		inWS[spec.Workspace]++
		peak[spec.Workspace] = max(peak[spec.Workspace], inWS[spec.Workspace])
		mu.Unlock()
		time.Sleep(30 * time.Millisecond)
		mu.Lock()
		inWS[spec.Workspace]--
		mu.Unlock()
		return "ok", nil
	}
	e1, e2 := &fakeExec{do: do}, &fakeExec{do: do}
	q1 := open(t, url, schema, 3, 1, e1)
	open(t, url, schema, 3, 1, e2)
	var ids []int64
	for i := range 12 {
		r, err := q1.Create(ctx, tok, api.CreateRun{Prompt: fmt.Sprint(i), MaxAttempts: 1}, fmt.Sprintf("/ws/%d", i%2))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	busy, err := q1.Create(ctx, tok, api.CreateRun{Prompt: "busy", MaxAttempts: 1}, "/ws/busy")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range append(ids, busy.ID) {
		if r := waitRun(t, q1, id, finished); r.State != api.RunSucceeded {
			t.Fatalf("run %+v", r)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if peak["/ws/0"] != 1 || peak["/ws/1"] != 1 {
		t.Fatalf("peak concurrency per workspace %v, want 1", peak)
	}
	n := len(e1.of(busy.ID)) + len(e2.of(busy.ID))
	if n != 4 {
		t.Fatalf("the busy run was tried %d times, want 4 (3 busy, 1 run)", n)
	}
}
