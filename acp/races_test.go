package acp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/acp"
	"github.com/dshq/dsh/acp/acptest"
	"github.com/dshq/dsh/compact"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
)

// slowMCP is an HTTP MCP server that answers every request after a pause
// (with an error): connecting it keeps session/new or session/load busy.
func slowMCP(t *testing.T, d time.Duration) []sdk.McpServer {
	t.Helper()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
		}
		http.Error(w, "nope", http.StatusInternalServerError)
	}))
	t.Cleanup(slow.Close)
	return []sdk.McpServer{{Http: &sdk.McpServerHttpInline{Name: "slow", Type: "http", Url: slow.URL, Headers: []sdk.HttpHeader{}}}}
}

// A session/close that lands while session/load of the same id is still
// starting the session wins: the load fails, no agent is left behind, and
// the session can be loaded again.
func TestCloseDuringLoad(t *testing.T) {
	servers := slowMCP(t, 1500*time.Millisecond)
	model := acptest.New(acptest.Text("one"), acptest.Text("two"))
	defer model.Close()
	h := newHarness(t, model)
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	h.mustPrompt(id, "first", sdk.StopReasonEndTurn)
	if _, err := h.conn.CloseSession(h.ctx(), sdk.CloseSessionRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	loaded := make(chan error, 1)
	go func() {
		_, err := h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: h.dir, McpServers: servers})
		loaded <- err
	}()
	time.Sleep(500 * time.Millisecond) // the load is connecting the MCP server
	_, cerr := h.conn.CloseSession(h.ctx(), sdk.CloseSessionRequest{SessionId: id})
	lerr := <-loaded
	if cerr == nil && lerr == nil {
		t.Fatal("both session/close and session/load succeeded")
	}
	if cerr == nil && !strings.Contains(lerr.Error(), "closed while loading") {
		t.Fatalf("load after a close: %v", lerr)
	}
	// No zombie: the session loads again, and works.
	if _, err := h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: h.dir, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatalf("reloading: %v", err)
	}
	h.mustPrompt(id, "second", sdk.StopReasonEndTurn)
	h.close()
	_, events := h.events(id)
	if r := balanced(t, events); !slices.Equal(r, []string{session.EndCompleted, session.EndCompleted}) {
		t.Fatalf("turn ends %v", r)
	}
}

// The connection ending while session/new or session/load is still starting
// the session leaves no agent behind and Serve returns promptly.
func TestDisconnectDuringNewAndLoad(t *testing.T) {
	servers := slowMCP(t, 1500*time.Millisecond)
	model := acptest.New(acptest.Text("one"))
	defer model.Close()
	h := newHarness(t, model)
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	h.mustPrompt(id, "first", sdk.StopReasonEndTurn)
	h.restart()
	h.initialize(sdk.ClientCapabilities{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, _ = h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: h.dir, McpServers: servers})
	}()
	go func() {
		defer wg.Done()
		_, _ = h.conn.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: h.dir, McpServers: servers})
	}()
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	h.close()
	wg.Wait()
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Serve took %v to return", d)
	}
	// The stored session is intact and free: a new connection loads it.
	h.client = newClient()
	h.start(func(o *acp.Options) { *o = h.opts })
	defer h.close()
	h.initialize(sdk.ClientCapabilities{})
	if _, err := h.conn.LoadSession(h.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: h.dir, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatalf("reloading: %v", err)
	}
}

// compactHarness is a session with two answered prompts, compaction tuned
// so /compact always has something to summarize, and the summary call
// stalled until release is closed.
func compactHarness(t *testing.T, release chan struct{}) (*harness, *acptest.Server, sdk.SessionId) {
	t.Helper()
	model := acptest.New(acptest.Text("answer one"), acptest.Text("answer two"))
	t.Cleanup(model.Close)
	h := newHarness(t, model, withSettings(t, compact.Settings.In(settings.LayerUser, "settings.json", compact.Config{RetainTokens: 1})))
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	h.mustPrompt(id, "first question", sdk.StopReasonEndTurn)
	h.mustPrompt(id, "second question", sdk.StopReasonEndTurn)
	model.Push(acptest.Stall("Summary", release))
	return h, model, id
}

func waitRequests(t *testing.T, h *harness, id sdk.SessionId, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(h.model.Requests()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the model saw %d requests, want %d; updates %s", len(h.model.Requests()), n, describe(h.client.updatesOf(id)))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// session/cancel stops /compact: the prompt answers cancelled at once (not
// when the summary call would have finished) and the log stays balanced.
func TestCompactCancelled(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	h, model, id := compactHarness(t, release)
	type result struct {
		r   sdk.PromptResponse
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := h.prompt(id, "/compact")
		done <- result{r, err}
	}()
	waitRequests(t, h, id, 3)
	if err := h.conn.Cancel(h.ctx(), sdk.CancelNotification{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.err != nil || res.r.StopReason != sdk.StopReasonCancelled {
			t.Fatalf("cancelled /compact: %+v %v", res.r, res.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("/compact did not answer the cancel")
	}
	// The session still works.
	model.Push(acptest.Text("still here"))
	h.mustPrompt(id, "third question", sdk.StopReasonEndTurn)
	h.close()
	_, events := h.events(id)
	// Two prompts, the compaction's own turn (closed), the third prompt.
	if r := balanced(t, events); len(r) != 4 || r[3] != session.EndCompleted {
		t.Fatalf("turn ends %v", r)
	}
}

// The connection ending during /compact closes the compaction's turn before
// the agent is disposed, and Serve does not wait for the summary call.
func TestCompactDisconnect(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	h, _, id := compactHarness(t, release)
	go func() { _, _ = h.prompt(id, "/compact") }()
	waitRequests(t, h, id, 3)
	start := time.Now()
	h.in.Close()
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return while /compact was running")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Serve took %v to return", d)
	}
	_, events := h.events(id)
	// Two prompts, then the compaction's own turn, closed.
	if r := balanced(t, events); len(r) != 3 {
		t.Fatalf("turn ends %v", r)
	}
}

// A session/cancel written right behind its session/prompt (one write, so
// the server reads both before the prompt's handler runs) is never lost.
func TestCancelRightAfterPrompt(t *testing.T) {
	model := acptest.New()
	defer model.Close()
	model.SetDefault(func(map[string]any) acptest.Reply {
		return acptest.Reply{acptest.TextDelta("slow"), {Sleep: 300 * time.Millisecond}, acptest.TextDelta(" answer"), acptest.Finish("stop")}
	})
	h := newHarness(t, model)
	h.initialize(sdk.ClientCapabilities{})
	const n = 30
	ids := make([]sdk.SessionId, n)
	for i := range ids {
		ids[i] = h.newSession()
	}
	for i, id := range ids {
		frames := fmt.Sprintf(`{"jsonrpc":"2.0","id":"raw-%d","method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"go"}]}}`+"\n"+
			`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`+"\n", i, id, id)
		if _, err := io.WriteString(h.in, frames); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // an uncancelled turn answers within ~300 ms
	// A cancel does not reach past its prompt: the next prompts run.
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := h.prompt(id, "again")
			if err == nil && r.StopReason != sdk.StopReasonEndTurn {
				err = fmt.Errorf("stop %q", r.StopReason)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	h.close()
	for i, id := range ids {
		if errs[i] != nil {
			t.Errorf("session %d: the prompt after the cancelled one: %v", i, errs[i])
		}
		_, events := h.events(id)
		reasons := balanced(t, events)
		if len(reasons) == 0 || reasons[len(reasons)-1] != session.EndCompleted {
			t.Errorf("session %d: turn ends %v", i, reasons)
			continue
		}
		if slices.Contains(reasons[:len(reasons)-1], session.EndCompleted) {
			t.Errorf("session %d: the cancelled prompt completed: turn ends %v", i, reasons)
		}
	}
}

// A request over the frame limit is answered with its own id, so the
// client gets an error instead of waiting forever.
func TestOversizedRequestAnswered(t *testing.T) {
	model := acptest.New(acptest.Text("fine"))
	defer model.Close()
	h := newHarness(t, model)
	defer h.close()
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession()
	// The deadline only guards against a hang: a 9 MiB frame through a pipe
	// takes seconds under -race on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := h.conn.Prompt(ctx, sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock(strings.Repeat("x", 9<<20))}})
	var re *sdk.RequestError
	if !errors.As(err, &re) || re.Code != -32600 {
		t.Fatalf("9 MiB prompt: %v", err)
	}
	// The connection is still usable.
	h.mustPrompt(id, "small", sdk.StopReasonEndTurn)
}
