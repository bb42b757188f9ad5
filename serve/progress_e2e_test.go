package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/serve/client"
	"github.com/dshq/dsh/session"
)

// liveOutput gathers one stream's view of a running command: its progress
// output per call, and whether the call's result had arrived.
type liveOutput struct {
	mu     sync.Mutex
	out    map[string]string
	result bool
}

func (l *liveOutput) add(p api.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.out[p.Call] += p.Output
}

func (l *liveOutput) get(call string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.out[call], l.result
}

// TestProgressOnEveryStream: a running command's output arrives over the
// WebSocket as it does over SSE, through a real dsh serve, before the
// command ends, scrubbed of the server's secret, each WebSocket message
// valid against the OpenAPI document's StreamMessage, and the log's
// events still in seq order around it. (The Go client's Stream hears it
// through StreamOptions.Progress.)
func TestProgressOnEveryStream(t *testing.T) {
	w := startWeb(t)
	ct := newContract(t, w.p.URL)
	c := client.New(w.p.URL, w.token)
	c.HTTP = ct.client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := c.CreateSession(ctx, api.CreateSession{Workspace: w.ws, PermissionMode: "bypassPermissions"})
	if err != nil {
		t.Fatal(err)
	}
	msgSchema := ct.doc.Components.Schemas["StreamMessage"]
	if msgSchema == nil {
		t.Fatal("the OpenAPI document has no StreamMessage schema")
	}

	sse := &liveOutput{out: map[string]string{}}
	ws := &liveOutput{out: map[string]string{}}
	var wg sync.WaitGroup
	sctx, stop := context.WithCancel(ctx)
	defer func() { stop(); wg.Wait() }()
	sseOpen := make(chan struct{})
	wg.Go(func() {
		once := sync.OnceFunc(func() { close(sseOpen) })
		for ev, err := range c.Stream(sctx, s.ID, 0, client.StreamOptions{Progress: func(p api.Progress) { sse.add(p) },
			Reconnected: func(error) {}}) {
			if err != nil {
				return
			}
			once()
			if ev.Type == session.TypeToolResult {
				sse.mu.Lock()
				sse.result = true
				sse.mu.Unlock()
			}
		}
	})
	conn, _, err := websocket.Dial(ctx, strings.Replace(w.p.URL, "http", "ws", 1)+"/v1/sessions/"+string(s.ID)+"/ws",
		&websocket.DialOptions{HTTPClient: ct.client(), HTTPHeader: http.Header{"Authorization": {"Bearer " + w.token}}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(64 << 20)
	wg.Go(func() {
		next := int64(0)
		for {
			_, b, err := conn.Read(sctx)
			if err != nil {
				return
			}
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Errorf("a WebSocket message is not JSON: %v %q", err, b)
				return
			}
			if err := msgSchema.Value.VisitJSON(v, openapi3.MultiErrors()); err != nil {
				t.Errorf("a WebSocket message is no StreamMessage: %v\n%s", err, b)
			}
			var m struct {
				*api.Progress `json:"progress"`
				session.Event
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Errorf("WebSocket message: %v", err)
				return
			}
			if m.Progress != nil {
				ws.add(*m.Progress)
				continue
			}
			if m.Seq != next {
				t.Errorf("WebSocket event seq %d, want %d", m.Seq, next)
			}
			next = m.Seq + 1
			if m.Type == session.TypeToolResult {
				ws.mu.Lock()
				ws.result = true
				ws.mu.Unlock()
			}
		}
	})

	if _, err := c.Send(ctx, s.ID, "please print slowly"); err != nil {
		t.Fatal(err)
	}
	<-sseOpen
	for name, l := range map[string]*liveOutput{"SSE": sse, "WebSocket": ws} {
		waitFor(t, "LIVE-LINE-3 and the key line on the "+name+" stream", func() bool {
			out, _ := l.get("toolu_live")
			return strings.Contains(out, "LIVE-LINE-3") && strings.Contains(out, "key=")
		})
		out, done := l.get("toolu_live")
		if done {
			t.Fatalf("%s: the call's result arrived before the gate opened", name)
		}
		if strings.Contains(out, secretKey) {
			t.Errorf("%s: the live output carries the server's secret: %q", name, out)
		}
		if strings.Contains(out, "AFTER-GATE") {
			t.Fatalf("%s: the command went past its gate: %q", name, out)
		}
		if want := "LIVE-LINE-1\nLIVE-LINE-2\nLIVE-LINE-3\n"; !strings.HasPrefix(out, want) {
			t.Errorf("%s: the live output is %q, want it to start %q", name, out, want)
		}
	}
	// The streams close before the command ends: its result, which the
	// log records as the command printed it, would carry the secret
	// (the live output is scrubbed; the recorded result is not).
	stop()
	wg.Wait()
	if err := os.WriteFile(filepath.Join(w.ws, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}
