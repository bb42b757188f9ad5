package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/compact"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/tool"
)

type bigOutput struct{}

func (bigOutput) Info() tool.Info {
	return tool.Info{Name: "big", Description: "prints a lot", Parameters: []byte(`{"type":"object"}`)}
}
func (bigOutput) Run(_ context.Context, c tool.Call) (tool.Result, error) {
	return tool.TextResult(strings.Repeat("output <line> with \"quotes\" & words "+string(c.ID)+"\n", 200)), nil
}

// writeStream writes one Messages API stream: optional text, an optional tool_use,
// and usage that reports the request's real size.
func writeStream(w io.Writer, text, callID string, inputTokens int) {
	var b strings.Builder
	ev := func(name string, v any) {
		data, _ := json.Marshal(v)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, data)
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message", "role": "assistant",
		"model": "claude-x", "content": []any{}, "usage": map[string]int{"input_tokens": inputTokens, "output_tokens": 1}}})
	idx := 0
	if text != "" {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]string{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]string{"type": "text_delta", "text": text}})
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	stop := "end_turn"
	if callID != "" {
		stop = "tool_use"
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "tool_use", "id": callID, "name": "big", "input": map[string]any{}}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]string{"type": "input_json_delta", "partial_json": `{"n": 1}`}})
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
	}
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop}, "usage": map[string]int{"output_tokens": 20}})
	ev("message_stop", map[string]string{"type": "message_stop"})
	_, _ = io.WriteString(w, b.String())
}

// TestLoopRequestsByteIdentical: through the real loop, session and
// compaction (prunes and summaries), over loopback HTTP, every request body
// the adapter sends equals the whole request marshalled at once.
func TestLoopRequestsByteIdentical(t *testing.T) {
	const steps = 120
	var (
		mu     sync.Mutex
		bodies [][]byte
		work   int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, body)
		summarizing := bytes.Contains(body, []byte("checkpoint that replaces it"))
		if !summarizing {
			work++
		}
		n := work
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		switch {
		case summarizing:
			writeStream(w, "## Goal\n- call big\n## Decisions\n- (none)\n## Files touched\n- (none)\n## Errors and fixes\n- (none)\n## Open tasks\n- more\n## Next step\n- call big", "", len(body)/4)
		case n > steps:
			writeStream(w, "Done.", "", len(body)/4)
		default:
			writeStream(w, fmt.Sprintf("Step %d: calling big.", n), fmt.Sprintf("toolu_%03d", n), len(body)/4)
		}
	}))
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()

	h, err := core.New(core.Options{Invariants: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	a, err := New(Config{Provider: "anthropic", BaseURL: srv.URL, APIKey: "k", HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.LLM.Register([]llm.ModelInfo{{ID: "anthropic/claude-x", ContextWindow: 30000}}, a); err != nil {
		t.Fatal(err)
	}
	var sent []*llm.Request // each request as it was when sent
	h.LLM.StreamPoint.Use(func(ctx context.Context, req *llm.Request, next func(context.Context, *llm.Request) (llm.Stream, error)) (llm.Stream, error) {
		cp := *req
		cp.Messages = nil
		for _, m := range req.Messages {
			cp.Messages = append(cp.Messages, m.Clone())
		}
		mu.Lock()
		sent = append(sent, &cp)
		mu.Unlock()
		return next(ctx, req)
	})
	if _, err := h.Tools.Register(bigOutput{}); err != nil {
		t.Fatal(err)
	}
	c := compact.New(compact.Config{Threshold: 0.7, RetainTokens: 6000, PruneAbove: 400}, h.LLM, h.Agents.Hub, nil)
	if err := c.Install(h.Scope); err != nil {
		t.Fatal(err)
	}
	hd, err := h.Agents.Create(context.Background(), agent.CreateOptions{Options: agent.Options{Model: "anthropic/claude-x", MaxSteps: steps + 10}})
	if err != nil {
		t.Fatal(err)
	}
	if err := hd.Agent.Send(context.Background(), []llm.Block{llm.Text("Call big until it is done.")}, llm.Source{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := hd.Agent.WhenIdle(ctx); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != len(sent) || work != steps+1 {
		t.Fatalf("%d bodies, %d requests sent, %d work requests", len(bodies), len(sent), work)
	}
	pruned, summarized := false, false
	for i, req := range sent {
		want, err := a.wholeBody(req)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(bodies[i], want) {
			t.Fatalf("request %d: the body sent differs from a whole re-encode\n got: %.2000s\nwant: %.2000s", i, bodies[i], want)
		}
		pruned = pruned || bytes.Contains(want, []byte("characters of this old tool result were pruned"))
		summarized = summarized || bytes.Contains(want, []byte(`\u003ccompacted-summary\u003e`)) // JSON escapes < and >
	}
	if !pruned || !summarized {
		t.Fatalf("the run should have pruned (%v) and summarized (%v)", pruned, summarized)
	}
}
