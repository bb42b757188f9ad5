package headless_test

import (
	"testing"

	"github.com/dshq/dsh/internal/dshtest"
	"github.com/dshq/dsh/internal/fakeanthropic"
)

func TestMain(m *testing.M) { dshtest.Main(m, "..", raceBuild) }

// env wraps dshtest.Env with the short names these tests use.
type env struct {
	*dshtest.Env
	t     testing.TB
	home  string
	dir   string
	model *fakeanthropic.Server
}

func newEnv(t *testing.T, reply func(fakeanthropic.Request) fakeanthropic.Reply) *env {
	e := dshtest.New(t, "..", reply)
	return &env{Env: e, t: t, home: e.Home, dir: e.Dir, model: e.Model}
}

type result struct {
	stdout, stderr string
	code           int
}

func (e *env) dsh(stdin string, args ...string) result {
	e.t.Helper()
	r := e.Run(stdin, args...)
	return result{r.Stdout, r.Stderr, r.Code}
}

func newBenchEnv(b *testing.B, reply func(fakeanthropic.Request) fakeanthropic.Reply) *env {
	e := dshtest.New(b, "..", reply)
	return &env{Env: e, t: b, home: e.Home, dir: e.Dir, model: e.Model}
}

func dshBinPath() string { return dshtest.Bin }

func lines(t testing.TB, s string) []map[string]any { return dshtest.Lines(t, s) }

func (e *env) node(script, scenario string, extra ...string) map[string]any {
	e.t.Helper()
	return e.Node(script, "@anthropic-ai/claude-agent-sdk", []string{scenario}, extra...)
}
