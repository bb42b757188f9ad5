package bashtool

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/bash/local"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeHost is the agent a call runs for.
type fakeHost struct {
	id    string
	cwd   string
	scope *kernel.Scope

	mu        sync.Mutex
	injected  []injection
	injectErr error
	injectedC chan struct{} // receives one value per Inject
}

type injection struct {
	text string
	src  llm.Source
}

var _ tool.Host = (*fakeHost)(nil)

func newHost(id, cwd string) *fakeHost {
	return &fakeHost{id: id, cwd: cwd, scope: kernel.NewScope("agent " + id), injectedC: make(chan struct{}, 16)}
}

func (h *fakeHost) AgentID() string                           { return h.id }
func (h *fakeHost) SessionID() string                         { return "session-" + h.id }
func (h *fakeHost) Cwd() string                               { return h.cwd }
func (h *fakeHost) Append(context.Context, string, any) error { return errors.New("not supported") }
func (h *fakeHost) Scope() *kernel.Scope                      { return h.scope }
func (h *fakeHost) Inject(_ context.Context, content []llm.Block, src llm.Source) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.injected = append(h.injected, injection{text: llm.TextOf(content), src: src})
	h.injectedC <- struct{}{}
	return h.injectErr
}

func (h *fakeHost) injections() []injection {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]injection(nil), h.injected...)
}

// kit is the three tools over a real local executor.
type kit struct {
	exec   *local.Executor
	bash   tool.Tool
	output tool.Tool
	kill   tool.Tool
}

func newKit(t *testing.T, cfg local.Config) *kit {
	t.Helper()
	if cfg.Grace == 0 {
		cfg.Grace = 200 * time.Millisecond
	}
	e, err := local.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	ts := Tools(e, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return &kit{exec: e, bash: ts[0], output: ts[1], kill: ts[2]}
}

// call runs tl with args (a JSON object) for host h (nil: no agent) and
// returns the text the model would read, with errors as "Error: …".
func call(t *testing.T, ctx context.Context, tl tool.Tool, h tool.Host, args any) (string, tool.Result, bool) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	c := tool.Call{ID: "call-1", Name: tl.Info().Name, Args: raw, Raw: string(raw), Host: h}
	res, err := tl.Run(ctx, c)
	if err != nil {
		return "Error: " + err.Error(), res, true
	}
	return llm.TextOf(res.Content), res, res.IsError
}

func mustCall(t *testing.T, tl tool.Tool, h tool.Host, args any) (string, tool.Result) {
	t.Helper()
	text, res, isErr := call(t, context.Background(), tl, h, args)
	if isErr {
		t.Fatalf("%s(%v): %s", tl.Info().Name, args, text)
	}
	return text, res
}

type obj = map[string]any

// hostOf keeps a nil *fakeHost from becoming a non-nil tool.Host.
func hostOf(h *fakeHost) tool.Host {
	if h == nil {
		return nil
	}
	return h
}

// pollOutput calls bash_output until the text contains want.
func pollOutput(t *testing.T, k *kit, h tool.Host, id string, want string) string {
	t.Helper()
	var all strings.Builder
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		text, _ := mustCall(t, k.output, h, obj{"task_id": id})
		all.WriteString(text)
		if strings.Contains(text, want) {
			return text
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("bash_output %s never contained %q; saw %q", id, want, all.String())
	return ""
}

func waitTask(t *testing.T, e bash.Executor, owner bash.Owner, id string) {
	t.Helper()
	for _, tk := range e.List(context.Background(), owner) {
		if string(tk.ID) == id {
			select {
			case <-tk.Done:
				return
			case <-time.After(10 * time.Second):
				t.Fatalf("task %s did not finish", id)
			}
		}
	}
	t.Fatalf("task %s not listed for %q", id, owner)
}

func liveInGroup(t *testing.T, pgid int) []string {
	t.Helper()
	out, err := exec.Command("ps", "-eo", "pid=,pgid=,stat=,args=").Output()
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	var live []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[1] == strconv.Itoa(pgid) && !strings.HasPrefix(f[2], "Z") {
			live = append(live, line)
		}
	}
	return live
}
