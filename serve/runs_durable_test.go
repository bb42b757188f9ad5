package serve

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/providers"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/serve/tokens"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
)

// runWorld is a server in this process (no HTTP) over one workspace app
// with a scripted model (model runModel) that answers each prompt with text, whose session durability checkpoint (the
// Flush every store listens to) goes through hold first: a stand-in for a
// slow or failing PostgreSQL at exactly the moment a run's turn has ended.
type runWorld struct {
	srv   *Server
	app   *app.App
	dir   string
	model *scripted.Adapter
	hold  func(ctx context.Context, s *session.Session) error
}

const runModel = "script/m"

func newRunWorld(t *testing.T, hold func(ctx context.Context, s *session.Session) error) *runWorld {
	t.Helper()
	home, root := t.TempDir(), t.TempDir()
	root, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	w := &runWorld{dir: root, hold: hold}
	cfg, err := settings.From(app.Schema(), true, providers.ModelKey.Flag("--model", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := app.New(ctx, app.Options{Config: cfg, Site: core.Site{Home: home, Cwd: root, NoSync: true, Getenv: func(string) string { return "" }}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Host.Scope.Add(a.Host.Sessions.Flush.Use(func(ctx context.Context, s *session.Session) error { return w.hold(ctx, s) }, kernel.Named("test/hold"))); err != nil {
		t.Fatal(err)
	}
	w.app = a
	w.model = scripted.New(scripted.Text("the answer"), scripted.Text("a second answer"))
	if _, err := a.Host.LLM.Register([]llm.ModelInfo{{ID: runModel, ContextWindow: 200000}}, w.model); err != nil {
		t.Fatal(err)
	}
	handed := false
	w.srv, err = New(Options{Roots: []string{root}, Tokens: tokens.Open(filepath.Join(home, "tokens.json")), Catalog: a.Coordinator,
		IdleEvict: -1,
		App: func(_ context.Context, dir, sandbox string) (*app.App, error) {
			if dir != root || sandbox != "" || handed {
				t.Errorf("app asked for %q %q (again: %v)", dir, sandbox, handed)
				return nil, errors.New("test: one workspace only")
			}
			handed = true
			return a, nil
		}})
	if err != nil {
		_ = a.Close(ctx)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.srv.Close(context.Background()); err != nil {
			t.Errorf("closing the server: %v", err)
		}
	})
	return w
}

// ended reports whether s holds a turn/end (in memory).
func ended(s *session.Session) bool {
	found := false
	_ = s.Range(context.Background(), 0, int64(s.Len()), func(ev session.Event) error {
		if ev.Type == session.TypeTurnEnd {
			found = true
			return errStop
		}
		return nil
	})
	return found
}

// storedTurnEnd reports whether the store holds a completed turn of id.
func (w *runWorld) storedTurnEnd(t *testing.T, id session.ID) bool {
	t.Helper()
	_, evs, err := w.app.Coordinator.Read(context.Background(), id)
	if err != nil {
		t.Fatalf("reading %s from the store: %v", id, err)
	}
	for _, ev := range evs {
		if te, err := session.Decode[session.TurnEnd](ev); err == nil && ev.Type == session.TypeTurnEnd && te.Reason.Kind == session.EndCompleted {
			return true
		}
	}
	return false
}

// TestExecuteRunFailsUnlessTurnSaved: a run's attempt succeeds only once
// its turn is durable. When the checkpoint after the turn/end fails (the
// database went away), the attempt fails, so River retries it instead of
// completing a run whose answer no other worker can read; the retry, with
// the store back, reports the answer without asking the model again.
func TestExecuteRunFailsUnlessTurnSaved(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) }) // after the server's close
	errDown := errors.New("test: the database is unreachable")
	var failing atomic.Bool
	failing.Store(true)
	var failed atomic.Int32
	w := newRunWorld(t, func(_ context.Context, s *session.Session) error {
		if failing.Load() && ended(s) {
			failed.Add(1)
			return errDown
		}
		return nil
	})
	ctx := context.Background()
	spec := RunSpec{Run: 7, Attempt: 1, Session: "run-durable-1", Workspace: w.dir, Prompt: "hello", Model: runModel}
	text, err := w.srv.ExecuteRun(ctx, spec)
	if err == nil {
		t.Fatalf("attempt 1 reported success (%q) though its turn/end was never saved (%d failed checkpoints)", text, failed.Load())
	}
	if !errors.Is(err, errDown) {
		t.Fatalf("attempt 1 failed with %v, want the checkpoint's error", err)
	}
	failing.Store(false)
	spec.Attempt = 2
	text, err = w.srv.ExecuteRun(ctx, spec)
	if err != nil || text != "the answer" {
		t.Fatalf("attempt 2 with the store back: %q, %v", text, err)
	}
	if n := w.model.Calls(); n != 1 {
		t.Fatalf("the model was called %d times, want once (attempt 2 reports the stored answer)", n)
	}
	if !w.storedTurnEnd(t, spec.Session) {
		t.Fatal("attempt 2 succeeded but the store holds no completed turn")
	}
}

// TestExecuteRunWaitsForTheCheckpoint: while the checkpoint after the
// turn/end is still writing, the attempt has not returned — it returns
// once the write is done, so River's completion (and any worker reading
// the session from PostgreSQL) comes after the turn is stored.
func TestExecuteRunWaitsForTheCheckpoint(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) }) // after the server's close
	release := make(chan struct{})
	blocked := make(chan struct{})
	var once sync.Once
	var durable atomic.Bool
	w := newRunWorld(t, func(ctx context.Context, s *session.Session) error {
		if !ended(s) {
			return nil
		}
		once.Do(func() { close(blocked) })
		select {
		case <-release:
			durable.Store(true)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	spec := RunSpec{Run: 8, Attempt: 1, Session: "run-durable-2", Workspace: w.dir, Prompt: "hello", Model: runModel}
	type result struct {
		text    string
		err     error
		durable bool // the checkpoint had finished when it returned
	}
	done := make(chan result, 1)
	go func() {
		text, err := w.srv.ExecuteRun(context.Background(), spec)
		done <- result{text, err, durable.Load()}
	}()
	var r result
	got := false
	select {
	case <-blocked:
		// A broken attempt returns while the checkpoint is held; the
		// window only bounds how long the test gives it to do so.
		select {
		case r = <-done:
			got = true
		case <-time.After(time.Second):
		}
		close(release)
		if !got {
			r = <-done
		}
	case r = <-done:
		close(release)
	}
	if !r.durable {
		t.Fatalf("the attempt returned (%q, %v) before the checkpoint of its turn/end had finished", r.text, r.err)
	}
	if r.err != nil || r.text != "the answer" {
		t.Fatalf("after the checkpoint: %q, %v", r.text, r.err)
	}
}
