package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/tool"
)

// hostOf is a tool.Host that only names its session (all the plugin asks).
type hostOf struct {
	tool.Host
	id string
}

func (h hostOf) SessionID() string { return h.id }

// feed appends one event of s to the instruments, as the session log's
// Appended signal does.
func feed(t *testing.T, in *instruments, s *session.Session, typ string, data any) {
	raw, err := json.Marshal(data)
	if err != nil {
		t.Error(err)
		return
	}
	if err := in.event(context.Background(), session.Appended{Session: s, Event: session.Event{Type: typ, Data: raw}}); err != nil {
		t.Error(err)
	}
}

func newSession(t *testing.T, id, parent string) *session.Session {
	s, err := session.New(session.ID(id), session.Options{Header: session.Header{ParentSession: session.ID(parent)}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestInstrumentsExactUnderConcurrency drives many sessions through the
// instruments at once — turns of several steps, each step's usage and two
// tool calls running in parallel, one of which runs a subagent's turn — and
// checks that every turn and tool call is counted exactly once, the turns'
// token totals are their own session's, every span ended, and each span
// nests under its own session's turn, step or tool call. Under -race it is
// also the guard that the per-session state is locked.
func TestInstrumentsExactUnderConcurrency(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	prevT, prevM := otel.GetTracerProvider(), otel.GetMeterProvider()
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	t.Cleanup(func() { otel.SetTracerProvider(prevT); otel.SetMeterProvider(prevM) })
	in := newInstruments()

	const sessions, turns, steps = 16, 4, 3
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			id := fmt.Sprintf("s%02d", i)
			s := newSession(t, id, "")
			for turn := 1; turn <= turns; turn++ {
				feed(t, in, s, session.TypeTurnStart, session.TurnStart{Turn: turn, Trigger: session.Trigger{Kind: "user"}})
				for step := 1; step <= steps; step++ {
					feed(t, in, s, session.TypeStepStart, session.StepBoundary{Turn: turn, Step: step})
					feed(t, in, s, session.TypeAssistantMessage, session.AssistantMessage{Turn: turn, Step: step,
						Usage: &llm.Usage{InputTokens: 10 + i, OutputTokens: 1}})
					var calls sync.WaitGroup
					for c := range 2 {
						calls.Go(func() {
							call := tool.Call{ID: llm.CallID(fmt.Sprintf("%s-%d-%d-%d", id, turn, step, c)), Name: "bash", Host: hostOf{id: id}}
							_, err := in.tool(context.Background(), call, func(ctx context.Context, call tool.Call) (tool.Result, error) {
								if c == 1 {
									sub := newSession(t, string(call.ID)+"-sub", id)
									feed(t, in, sub, session.TypeTurnStart, session.TurnStart{Turn: 1, Trigger: session.Trigger{Kind: "task"}})
									feed(t, in, sub, session.TypeTurnEnd, session.TurnEnd{Turn: 1, Reason: session.EndReason{Kind: session.EndCompleted}})
								}
								return tool.Result{}, nil
							})
							if err != nil {
								t.Error(err)
							}
						})
					}
					calls.Wait()
					feed(t, in, s, session.TypeStepEnd, session.StepBoundary{Turn: turn, Step: step})
				}
				feed(t, in, s, session.TypeTurnEnd, session.TurnEnd{Turn: turn, Reason: session.EndReason{Kind: session.EndCompleted}})
			}
		})
	}
	wg.Wait()
	in.endAll()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	sums := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range s.DataPoints {
					sums[m.Name] += p.Value
				}
			}
		}
	}
	subTurns := sessions * turns * steps
	if want := int64(sessions*turns + subTurns); sums["dsh.turns"] != want {
		t.Errorf("dsh.turns = %d, want %d", sums["dsh.turns"], want)
	}
	if want := int64(sessions * turns * steps * 2); sums["dsh.tool.calls"] != want {
		t.Errorf("dsh.tool.calls = %d, want %d", sums["dsh.tool.calls"], want)
	}
	if sums["dsh.errors"] != 0 {
		t.Errorf("dsh.errors = %d, want 0 (no turn was interrupted)", sums["dsh.errors"])
	}

	ended := rec.Ended()
	if started := len(rec.Started()); started != len(ended) {
		t.Errorf("%d spans started, %d ended", started, len(ended))
	}
	if want := sessions*turns*(1+steps*3) + subTurns; len(ended) != want {
		t.Errorf("%d spans ended, want %d", len(ended), want)
	}
	byID := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range ended {
		byID[s.SpanContext().SpanID().String()] = s
	}
	conv := func(s sdktrace.ReadOnlySpan) string {
		for _, kv := range s.Attributes() {
			if kv.Key == attrConversation {
				return kv.Value.AsString()
			}
		}
		return ""
	}
	for _, s := range ended {
		parent, hasParent := byID[s.Parent().SpanID().String()]
		switch {
		case s.Name() == "invoke_agent dsh" && strings.HasSuffix(conv(s), "-sub"):
			// A subagent's turn nests under the tool call that ran it.
			if !hasParent || parent.Name() != "execute_tool bash" {
				t.Errorf("subagent turn %s: parent %v, want its tool call", conv(s), parent)
			}
		case s.Name() == "invoke_agent dsh":
			if s.Parent().IsValid() {
				t.Errorf("turn of %s has a parent", conv(s))
			}
			var i int
			fmt.Sscanf(conv(s), "s%d", &i)
			for _, kv := range s.Attributes() {
				if kv.Key == attrInputTokens && kv.Value.AsInt64() != int64(steps*(10+i)) {
					t.Errorf("turn of %s: %d input tokens, want %d", conv(s), kv.Value.AsInt64(), steps*(10+i))
				}
			}
		case s.Name() == "step":
			if !hasParent || parent.Name() != "invoke_agent dsh" || conv(parent) != conv(s) {
				t.Errorf("step of %s: parent %v, want its own turn", conv(s), parent)
			}
		case s.Name() == "execute_tool bash":
			var call string
			for _, kv := range s.Attributes() {
				if kv.Key == attrToolCallID {
					call = kv.Value.AsString()
				}
			}
			if !hasParent || parent.Name() != "step" || !strings.HasPrefix(call, conv(parent)+"-") {
				t.Errorf("tool call %s: parent %v, want a step of its own session", call, parent)
			}
		}
	}
}
