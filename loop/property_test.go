package loop_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/scripted"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/session/invariants"
	"github.com/dshq/dsh/tool"
)

type seenRequest struct {
	msgs  []llm.Message
	steps int // step/start events in the log when the request was made
	len   int // log length when the request was made
}

// TestPropertyInterleavings drives an agent with random interleavings of
// send, steer, inject, cancel and dispose against a scripted model and
// checks that the log passes the invariants, ends balanced, and that every
// request's history is exactly the history derived from the log at that
// point.
func TestPropertyInterleavings(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h, err := core.New(core.Options{Invariants: true})
		if err != nil {
			rt.Fatal(err)
		}
		defer h.Close(context.Background())
		var (
			mu   sync.Mutex
			reqs []seenRequest
			sess *session.Session
		)
		n := rapid.IntRange(1, 6).Draw(rt, "script")
		var entries []scripted.Entry
		for i := range n {
			kind := rapid.IntRange(0, 2).Draw(rt, fmt.Sprintf("entry%d", i))
			var chunks []llm.Chunk
			switch kind {
			case 0:
				chunks = scripted.TextChunks(fmt.Sprintf("reply %d", i), llm.FinishStop)
			case 1:
				chunks = scripted.CallChunks("", scripted.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "echo", Args: map[string]string{"text": "x"}})
			default:
				chunks = scripted.TextChunks("cut", llm.FinishMaxTokens)
			}
			entries = append(entries, scripted.Entry{Fn: func(req *llm.Request) []llm.Chunk {
				mu.Lock()
				defer mu.Unlock()
				evs := sess.Events()
				steps := 0
				for _, e := range evs {
					if e.Type == session.TypeStepStart {
						steps++
					}
				}
				reqs = append(reqs, seenRequest{msgs: append([]llm.Message(nil), req.Messages...), steps: steps, len: len(evs)})
				return chunks
			}})
		}
		model := scripted.New(entries...)
		model.Loop = true
		if _, err := h.LLM.RegisterModels([]string{"mock"}, model); err != nil {
			rt.Fatal(err)
		}
		type args struct {
			Text string `json:"text"`
		}
		_ = h.Tools.RegisterAll(h.Scope, tool.Func(tool.Info{Name: "echo"}, func(ctx context.Context, c tool.Call, a args) (tool.Result, error) {
			time.Sleep(50 * time.Microsecond)
			return tool.TextResult(a.Text), nil
		}))
		hd, err := h.Agents.Create(context.Background(), agent.CreateOptions{AgentID: "p", SessionID: "p-session", Options: agent.Options{Model: "mock", MaxSteps: 4}})
		if err != nil {
			rt.Fatal(err)
		}
		a := hd.Agent
		mu.Lock()
		sess = a.Session()
		mu.Unlock()
		ctx := context.Background()
		ops := rapid.SliceOfN(rapid.IntRange(0, 5), 1, 12).Draw(rt, "ops")
		disposed := false
		for i, op := range ops {
			if disposed {
				break
			}
			c := []llm.Block{llm.Text(fmt.Sprintf("op %d", i))}
			switch op {
			case 0:
				_ = a.Send(ctx, c, llm.Source{})
			case 1:
				_ = a.Steer(ctx, c, llm.Source{})
			case 2:
				_ = a.Inject(ctx, c, llm.PluginSource("prop"))
			case 3:
				a.Cancel("prop cancel")
			case 4:
				time.Sleep(time.Duration(rapid.IntRange(0, 300).Draw(rt, "sleep")) * time.Microsecond)
			case 5:
				if rapid.Bool().Draw(rt, "dispose") {
					_ = hd.Dispose(ctx)
					disposed = true
				}
			}
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := a.WhenIdle(wctx); err != nil {
			rt.Fatalf("never idle: %v", err)
		}
		if err := hd.Dispose(wctx); err != nil {
			rt.Fatal(err)
		}
		events := a.Session().Events()
		if err := invariants.CheckLog(events); err != nil {
			for _, e := range events {
				rt.Logf("%d %s %s", e.Seq, e.Type, e.Data)
			}
			rt.Fatalf("invariants: %v", err)
		}
		if a.Session().TurnOpen() {
			rt.Fatal("log ends with an open turn")
		}
		// Every request equals the derivation of some log prefix taken
		// after its step opened and before its response was recorded.
		mu.Lock()
		defer mu.Unlock()
		stepSeqs := []int64{}
		for _, e := range events {
			if e.Type == session.TypeStepStart {
				stepSeqs = append(stepSeqs, e.Seq)
			}
		}
		for i, r := range reqs {
			s := stepSeqs[r.steps-1]
			ok := false
			for k := int(s) + 1; k <= r.len && !ok; k++ {
				re, err := session.New("check", session.Options{Seed: events[:k]})
				if err != nil {
					rt.Fatal(err)
				}
				msgs, err := re.Messages()
				if err != nil {
					rt.Fatal(err)
				}
				ok = reflect.DeepEqual(normalize(msgs), normalize(r.msgs))
			}
			if !ok {
				rt.Fatalf("request %d does not match the derived history of the log", i)
			}
		}
	})
}

// normalize makes nil and empty content compare equal.
func normalize(ms []llm.Message) []llm.Message {
	out := make([]llm.Message, len(ms))
	for i, m := range ms {
		m = m.Clone()
		if m.Content == nil {
			m.Content = []llm.Block{}
		}
		for j := range m.Content {
			if m.Content[j].Content == nil && m.Content[j].Type == llm.BlockToolResult {
				m.Content[j].Content = []llm.Block{}
			}
		}
		out[i] = m
	}
	return out
}
