package fstool

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/dshq/dsh/fs"
	"github.com/dshq/dsh/fs/local"
	"github.com/dshq/dsh/fs/policy"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/tool"
)

// fakeHost is the calling agent as the tools see it.
type fakeHost struct {
	id, cwd string
	scope   *kernel.Scope
}

func newHost(id, cwd string) *fakeHost {
	return &fakeHost{id: id, cwd: cwd, scope: kernel.NewScope("agent " + id)}
}

func (h *fakeHost) AgentID() string                                       { return h.id }
func (h *fakeHost) SessionID() string                                     { return "session-" + h.id }
func (h *fakeHost) Cwd() string                                           { return h.cwd }
func (h *fakeHost) Append(context.Context, string, any) error             { return nil }
func (h *fakeHost) Inject(context.Context, []llm.Block, llm.Source) error { return nil }
func (h *fakeHost) Scope() *kernel.Scope                                  { return h.scope }

var _ tool.Host = (*fakeHost)(nil)

// fixture is a provider over a temp dir, a tracker, the three tools and an
// agent whose cwd is the temp dir.
type fixture struct {
	dir               string
	p                 *local.Provider
	tr                *policy.Tracker
	read, write, edit tool.Tool
	host              *fakeHost
}

func newFixture(t *testing.T, withPolicy bool) *fixture {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p, err := local.New(local.Options{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{dir: dir, p: p, host: newHost("agent-1", dir)}
	if withPolicy {
		f.tr = policy.New()
	}
	ts := Tools(p, f.tr, Options{})
	f.read, f.write, f.edit = ts[0], ts[1], ts[2]
	return f
}

func (f *fixture) path(name string) string { return filepath.Join(f.dir, name) }

// call runs tl with args (marshalled to JSON) for host, as the registry would
// after validation.
func call(t testing.TB, ctx context.Context, tl tool.Tool, host tool.Host, args any) (tool.Result, error) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	c := tool.Call{ID: "call-1", Name: tl.Info().Name, Args: b, Raw: string(b)}
	if host != nil {
		c.Host = host
	}
	return tl.Run(ctx, c)
}

// ok runs a call that must succeed and returns its text.
func (f *fixture) ok(t *testing.T, tl tool.Tool, args any) (string, tool.Result) {
	t.Helper()
	res, err := call(t, context.Background(), tl, f.host, args)
	if err != nil {
		t.Fatalf("%s %v: %v", tl.Info().Name, args, err)
	}
	return resultText(t, res), res
}

// fail runs a call that must fail and returns the error.
func (f *fixture) fail(t *testing.T, tl tool.Tool, args any) error {
	t.Helper()
	_, err := call(t, context.Background(), tl, f.host, args)
	if err == nil {
		t.Fatalf("%s %v succeeded, want an error", tl.Info().Name, args)
	}
	return err
}

func resultText(t *testing.T, res tool.Result) string {
	t.Helper()
	if len(res.Content) != 1 || res.Content[0].Type != llm.BlockText {
		t.Fatalf("result content = %+v, want one text block", res.Content)
	}
	return res.Content[0].Text
}

// wantFsCode checks err is a filesystem error with code, as the registry
// sees it (an *llm.Error named FsError).
func wantFsCode(t *testing.T, err error, code string) {
	t.Helper()
	he, ok := llm.AsError(err)
	if !ok || he.Name != fs.ErrorName || he.Code != code {
		t.Fatalf("want FsError %s, got %v (%T)", code, err, err)
	}
}

// wantPlain checks err is a plain error (no harness code) with message msg.
func wantPlain(t *testing.T, err error, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want error %q, got nil", msg)
	}
	if _, ok := llm.AsError(err); ok {
		t.Fatalf("want a plain error, got harness error %v", err)
	}
	if err.Error() != msg {
		t.Fatalf("error = %q, want %q", err.Error(), msg)
	}
}

func codeOf(err error) string { return llm.CodeOf(err) }
