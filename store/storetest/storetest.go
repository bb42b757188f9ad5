// Package storetest is the contract every session storage backend must pass,
// written once and run against each backend: the persistence contract
// (create, append, load with crash repair, list), the coordinator's
// orchestration (write-behind, adoption, resume, fork, dispose), plus a
// crash harness (a child process killed with SIGKILL mid-session) and
// shared benchmarks.
//
// A backend's tests call [Run] with a [Factory] that opens its backend over
// a directory; every Open of the same directory must see the same storage.
package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/session/invariants"
	"github.com/dshq/dsh/store"
)

// Factory opens one kind of backend and knows how to damage its storage the
// way a crash or another program would.
type Factory struct {
	// Open returns a backend over dir; the same dir means the same storage.
	Open func(dir string) (store.Backend, error)
	// Tear leaves a never-completed write after the stored log of id, as a
	// crash in the middle of an append does.
	Tear func(t testing.TB, dir string, id session.ID)
	// SetVersion rewrites the format version in the stored header of id.
	SetVersion func(t testing.TB, dir string, id session.ID, v int)
	// Corrupt damages the committed region of id's log (optional). The
	// returned text must appear in the load error.
	Corrupt func(t testing.TB, dir string, id session.ID) string
	// NoSnapshots says the backend does not implement [store.Snapshots]:
	// the snapshot cases are then skipped, each saying so. Without it a
	// backend lacking snapshots fails them.
	NoSnapshots bool
}

type env struct {
	t   *testing.T
	f   Factory
	dir string
	ctx context.Context
}

func newEnv(t *testing.T, f Factory) *env {
	return &env{t: t, f: f, dir: t.TempDir(), ctx: context.Background()}
}

func (e *env) open() store.Backend {
	e.t.Helper()
	b, err := e.f.Open(e.dir)
	if err != nil {
		e.t.Fatalf("open: %v", err)
	}
	return b
}

// attached is one coordinator over a fresh backend instance.
type attached struct {
	c     *store.Coordinator
	fb    *Faulty
	scope *kernel.Scope
}

// attach opens a new backend over the env's storage and attaches a
// coordinator to sessions (nil: API only). Its scope closes at cleanup.
func (e *env) attach(sessions *session.Live) *attached {
	e.t.Helper()
	fb := NewFaulty(e.open())
	scope := kernel.NewScope("store-test")
	c, err := store.Attach(scope, sessions, fb, store.Options{Logf: e.t.Logf})
	if err != nil {
		e.t.Fatalf("Attach: %v", err)
	}
	e.t.Cleanup(func() { _ = scope.Close() })
	return &attached{c: c, fb: fb, scope: scope}
}

// close disposes the coordinator (final drain, backend closed).
func (a *attached) close(t testing.TB) {
	t.Helper()
	if err := a.scope.Close(); err != nil {
		t.Fatalf("dispose: %v", err)
	}
}

// reload reads id through a brand-new backend instance (another process,
// in effect) and returns what Load returns.
func (e *env) reload(id session.ID) (session.Header, []session.Event) {
	e.t.Helper()
	a := e.attach(nil)
	defer a.close(e.t)
	h, evs, err := a.c.Load(e.ctx, id)
	if err != nil {
		e.t.Fatalf("reload %q: %v", id, err)
	}
	return h, evs
}

func newStore() *session.Live { return session.NewLive(FixedClock()) }

// live creates a live session in st, owned by a scope closed at cleanup.
func (e *env) live(st *session.Live, id session.ID, opts session.Options) (*session.Session, *kernel.Scope) {
	e.t.Helper()
	scope := kernel.NewScope("live-" + string(id))
	e.t.Cleanup(func() { _ = scope.Close() })
	s, err := st.Create(e.ctx, scope, id, opts)
	if err != nil {
		e.t.Fatalf("create live %q: %v", id, err)
	}
	return s, scope
}

func (e *env) apply(s *session.Session, ops []Op) {
	e.t.Helper()
	if err := Apply(e.ctx, s, ops); err != nil {
		e.t.Fatalf("append: %v", err)
	}
}

func (e *env) flush(st *session.Live, s *session.Session) {
	e.t.Helper()
	if err := st.FlushSession(e.ctx, s); err != nil {
		e.t.Fatalf("flush: %v", err)
	}
}

func header(id session.ID, cwd string) session.Header {
	return session.Header{Version: session.FormatVersion, ID: id, CreatedAt: BaseTime - 1000, Cwd: cwd}
}

func types(evs []session.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func checkSeqs(t testing.TB, evs []session.Event, n int) {
	t.Helper()
	if len(evs) != n {
		t.Fatalf("got %d events %v, want %d", len(evs), types(evs), n)
	}
	for i, e := range evs {
		if e.Seq != int64(i) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}

func sameEvents(t testing.TB, got, want []session.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d events %v, want %d %v", len(got), types(got), len(want), types(want))
	}
	for i := range got {
		if !store.EventsEqual(got[i], want[i]) {
			t.Fatalf("event %d differs:\n got  %+v data %s\n want %+v data %s", i, got[i], got[i].Data, want[i], want[i].Data)
		}
	}
}

func checkLog(t testing.TB, evs []session.Event) {
	t.Helper()
	if err := invariants.CheckLog(evs); err != nil {
		t.Fatalf("invariants: %v\n%v", err, types(evs))
	}
}

func wantErr(t testing.TB, err error, target error, substr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error (%v, %q), got nil", target, substr)
	}
	if target != nil && !errors.Is(err, target) {
		t.Fatalf("error %q is not %v", err, target)
	}
	if substr != "" && !strings.Contains(err.Error(), substr) {
		t.Fatalf("error %q does not mention %q", err, substr)
	}
}

func lastReason(t testing.TB, evs []session.Event) string {
	t.Helper()
	te, err := session.Decode[session.TurnEnd](evs[len(evs)-1])
	if err != nil {
		t.Fatal(err)
	}
	return te.Reason.Kind
}

// Run runs the whole contract against the factory's backend.
func Run(t *testing.T, f Factory) {
	for _, c := range contractCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(newEnv(t, f))
		})
	}
	for _, c := range snapshotCases {
		t.Run(c.name, func(t *testing.T) {
			if f.NoSnapshots {
				t.Skip("this backend keeps no snapshots (store.Snapshots): every resume of it replays the whole log")
			}
			t.Parallel()
			c.fn(newEnv(t, f))
		})
	}
}

type contractCase struct {
	name string
	fn   func(e *env)
}
