package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness is the spec's test rig: the spine with invariants on, a scripted
// model registered as "mock", and a recorder of events and agent errors.
type harness struct {
	t      *testing.T
	h      *core.Host
	model  *scripted.Adapter
	mu     sync.Mutex
	errs   []agent.ErrorNote
	status []agent.Status
	flushN int
	// queuedN counts agent/queued announcements (Send, Steer, Prompt).
	queuedN int
}

func newHarness(t *testing.T, entries ...scripted.Entry) *harness {
	t.Helper()
	h, err := core.New(core.Options{Invariants: true})
	if err != nil {
		t.Fatal(err)
	}
	hs := &harness{t: t, h: h, model: scripted.New(entries...)}
	if _, err := h.LLM.RegisterModels([]string{"mock"}, hs.model); err != nil {
		t.Fatal(err)
	}
	h.Agents.Hub.Error.Listen(func(_ context.Context, n agent.ErrorNote) error {
		hs.mu.Lock()
		hs.errs = append(hs.errs, n)
		hs.mu.Unlock()
		return nil
	})
	h.Agents.Hub.Status.Listen(func(_ context.Context, c agent.StatusChange) error {
		hs.mu.Lock()
		hs.status = append(hs.status, c.Status)
		hs.mu.Unlock()
		return nil
	})
	h.Agents.Hub.Queued.Listen(func(context.Context, agent.Queued) error {
		hs.mu.Lock()
		hs.queuedN++
		hs.mu.Unlock()
		return nil
	})
	h.Sessions.Flush.Use(func(context.Context, *session.Session) error {
		hs.mu.Lock()
		hs.flushN++
		hs.mu.Unlock()
		return nil
	})
	t.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("closing host: %v", err)
		}
	})
	return hs
}

func (hs *harness) agent(opts agent.Options) agent.Agent {
	hs.t.Helper()
	if opts.Model == "" {
		opts.Model = "mock"
	}
	return hs.agentRaw("a1", opts)
}

func (hs *harness) agentRaw(id string, opts agent.Options) agent.Agent {
	hs.t.Helper()
	hd, err := hs.h.Agents.Create(context.Background(), agent.CreateOptions{AgentID: agent.ID(id), SessionID: session.ID(id + "-session"), Options: opts})
	if err != nil {
		hs.t.Fatal(err)
	}
	return hd.Agent
}

func (hs *harness) errors() []agent.ErrorNote {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return append([]agent.ErrorNote(nil), hs.errs...)
}

func (hs *harness) statuses() []agent.Status {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return append([]agent.Status(nil), hs.status...)
}

func text(s string) []llm.Block { return []llm.Block{llm.Text(s)} }

func send(t *testing.T, a agent.Agent, s string) {
	t.Helper()
	if err := a.Send(context.Background(), text(s), llm.Source{}); err != nil {
		t.Fatal(err)
	}
}

func idle(t *testing.T, a agent.Agent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.WhenIdle(ctx); err != nil {
		t.Fatalf("agent never went idle: %v", err)
	}
}

func run(t *testing.T, a agent.Agent, s string) {
	t.Helper()
	send(t, a, s)
	idle(t, a)
}

// types lists event types, collapsing runs of assistant/chunk into "chunk×N".
func types(events []session.Event) []string {
	var out []string
	n := 0
	flush := func() {
		if n > 0 {
			out = append(out, fmt.Sprintf("chunk×%d", n))
			n = 0
		}
	}
	for _, e := range events {
		if e.Type == session.TypeAssistantChunk {
			n++
			continue
		}
		flush()
		out = append(out, e.Type)
	}
	flush()
	return out
}

func eq(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("events:\n got  %v\n want %v", got, want)
	}
}

func lastEnd(t *testing.T, s *session.Session) session.EndReason {
	t.Helper()
	e, ok := s.Last(session.TypeTurnEnd)
	if !ok {
		t.Fatal("no turn/end")
	}
	te, err := session.Decode[session.TurnEnd](e)
	if err != nil {
		t.Fatal(err)
	}
	return te.Reason
}

func ofType(s *session.Session, typ string) []session.Event {
	var out []session.Event
	for _, e := range s.Events() {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func mustDecode[T any](t *testing.T, e session.Event) T {
	t.Helper()
	v, err := session.Decode[T](e)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// requestText flattens a request's messages for substring assertions.
func requestText(r llm.Request) string {
	b, _ := json.Marshal(r.Messages)
	return string(b)
}

// echoTool returns "echo: "+text.
func echoTool() tool.Tool {
	type args struct {
		Text string `json:"text"`
	}
	return tool.Func(tool.Info{Name: "echo", Description: "echo text"}, func(_ context.Context, _ tool.Call, a args) (tool.Result, error) {
		return tool.TextResult("echo: " + a.Text), nil
	})
}

// funcTool is a raw tool around fn.
type funcTool struct {
	info tool.Info
	fn   func(ctx context.Context, c tool.Call) (tool.Result, error)
}

func (f funcTool) Info() tool.Info { return f.info }
func (f funcTool) Run(ctx context.Context, c tool.Call) (tool.Result, error) {
	return f.fn(ctx, c)
}

func register(t *testing.T, hs *harness, tools ...tool.Tool) {
	t.Helper()
	if err := hs.h.Tools.RegisterAll(hs.h.Scope, tools...); err != nil {
		t.Fatal(err)
	}
}
