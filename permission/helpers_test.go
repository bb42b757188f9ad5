package permission

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/tool"
)

// env is a project directory and a home directory, both resolved (the
// temp dir may sit behind a symlink, as on macOS).
type env struct {
	root, home, outside string
}

func newEnv(t testing.TB) env {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := env{root: filepath.Join(base, "proj"), home: filepath.Join(base, "home"), outside: filepath.Join(base, "elsewhere")}
	for _, d := range []string{e.root, filepath.Join(e.root, "src"), filepath.Join(e.root, "docs"), filepath.Join(e.root, "sub"),
		filepath.Join(e.home, ".ssh"), e.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func rules(b Behavior, src string, texts ...string) []Rule {
	out := make([]Rule, len(texts))
	for i, s := range texts {
		out[i] = Rule{Text: s, Behavior: b, Source: src}
	}
	return out
}

func mustNew(t testing.TB, cfg Config) *Checker {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func call(name string, args any) tool.Call {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return tool.Call{ID: "c1", Name: name, Args: b, Raw: string(b)}
}

func bashCall(line string) tool.Call {
	return call("bash", map[string]string{"command": line, "description": "x"})
}

// fakeHost is a tool.Host that records appended events.
type fakeHost struct {
	cwd, sid string
	scope    *kernel.Scope
	mu       sync.Mutex
	events   []recorded
}

type recorded struct {
	typ  string
	data any
}

func (h *fakeHost) AgentID() string   { return "agent" }
func (h *fakeHost) SessionID() string { return h.sid }
func (h *fakeHost) Cwd() string       { return h.cwd }
func (h *fakeHost) Append(_ context.Context, typ string, data any) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, recorded{typ, data})
	return nil
}
func (h *fakeHost) Inject(context.Context, []llm.Block, llm.Source) error { return nil }
func (h *fakeHost) Scope() *kernel.Scope                                  { return h.scope }

func (h *fakeHost) ofType(typ string) []any {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []any
	for _, e := range h.events {
		if e.typ == typ {
			out = append(out, e.data)
		}
	}
	return out
}
