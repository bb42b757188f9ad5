package acp_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/acp"
	"github.com/dshq/dsh/acp/acptest"
	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/jsonl"
)

// client is a scripted ACP client (the editor side) built on the Go SDK.
type client struct {
	mu      sync.Mutex
	updates map[sdk.SessionId][]sdk.SessionUpdate
	notify  chan struct{} // pulsed on every update

	// permission answers a request; nil answers allow_once.
	permission func(sdk.RequestPermissionRequest) sdk.RequestPermissionResponse
	permReqs   []sdk.RequestPermissionRequest

	// Editor buffers served by fs/*; nil map: fs methods fail.
	files  map[string]string
	writes []sdk.WriteTextFileRequest

	terms    map[string]*term
	termSeq  int
	termReqs []sdk.CreateTerminalRequest
}

type term struct {
	out  string
	code int
	done chan struct{}
}

func newClient() *client {
	return &client{updates: map[sdk.SessionId][]sdk.SessionUpdate{}, notify: make(chan struct{}, 1), terms: map[string]*term{}}
}

func (c *client) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	c.updates[n.SessionId] = append(c.updates[n.SessionId], n.Update)
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
	return nil
}

func (c *client) RequestPermission(_ context.Context, r sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.permReqs = append(c.permReqs, r)
	f := c.permission
	c.mu.Unlock()
	if f == nil {
		return selectOption("allow_once"), nil
	}
	return f(r), nil
}

func selectOption(id string) sdk.RequestPermissionResponse {
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Selected: &sdk.RequestPermissionOutcomeSelected{Outcome: "selected", OptionId: sdk.PermissionOptionId(id)}}}
}

func (c *client) ReadTextFile(_ context.Context, r sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if text, ok := c.files[r.Path]; ok {
		return sdk.ReadTextFileResponse{Content: text}, nil
	}
	b, err := os.ReadFile(r.Path)
	if err != nil {
		return sdk.ReadTextFileResponse{}, &sdk.RequestError{Code: -32002, Message: "Resource not found"}
	}
	return sdk.ReadTextFileResponse{Content: string(b)}, nil
}

func (c *client) WriteTextFile(_ context.Context, r sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, r)
	if c.files != nil {
		c.files[r.Path] = r.Content
	}
	// Like Zed: the buffer is saved.
	return sdk.WriteTextFileResponse{}, os.WriteFile(r.Path, []byte(r.Content), 0o644)
}

func (c *client) CreateTerminal(_ context.Context, r sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	c.mu.Lock()
	c.termSeq++
	id := "term-" + string(rune('0'+c.termSeq))
	t := &term{done: make(chan struct{})}
	c.terms[id] = t
	c.termReqs = append(c.termReqs, r)
	c.mu.Unlock()
	go func() {
		cmd := exec.Command(r.Command, r.Args...)
		if r.Cwd != nil {
			cmd.Dir = *r.Cwd
		}
		out, err := cmd.CombinedOutput()
		c.mu.Lock()
		t.out = string(out)
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.code = ee.ExitCode()
		}
		c.mu.Unlock()
		close(t.done)
	}()
	return sdk.CreateTerminalResponse{TerminalId: id}, nil
}

func (c *client) term(id string) *term {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.terms[id]
}

func (c *client) WaitForTerminalExit(ctx context.Context, r sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	t := c.term(r.TerminalId)
	select {
	case <-t.done:
	case <-ctx.Done():
		return sdk.WaitForTerminalExitResponse{}, ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	code := t.code
	return sdk.WaitForTerminalExitResponse{ExitCode: &code}, nil
}

func (c *client) TerminalOutput(_ context.Context, r sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	t := c.term(r.TerminalId)
	c.mu.Lock()
	defer c.mu.Unlock()
	return sdk.TerminalOutputResponse{Output: t.out}, nil
}

func (c *client) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, nil
}

func (c *client) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, nil
}

func (c *client) updatesOf(id sdk.SessionId) []sdk.SessionUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sdk.SessionUpdate(nil), c.updates[id]...)
}

func (c *client) reset(id sdk.SessionId) {
	c.mu.Lock()
	delete(c.updates, id)
	c.mu.Unlock()
}

// waitFor waits until an update of the session satisfies ok.
func (c *client) waitFor(t testing.TB, id sdk.SessionId, ok func(sdk.SessionUpdate) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		for _, u := range c.updatesOf(id) {
			if ok(u) {
				return
			}
		}
		select {
		case <-c.notify:
		case <-time.After(5 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for an update; got %s", describe(c.updatesOf(id)))
		}
	}
}

// harness runs a server in process, connected to a Go SDK client.
type harness struct {
	t      testing.TB
	model  *acptest.Server
	home   string
	dir    string
	client *client
	conn   *sdk.ClientSideConnection
	in     *io.PipeWriter
	done   chan error
	opts   acp.Options
	// wrapOut, when set, wraps the server's output (benchmarks stamp it).
	wrapOut func(io.Writer) io.Writer
}

// withSettings serves every workspace from these layers (as if read from
// the user's settings file), plus its additional directories.
func withSettings(t testing.TB, layers ...settings.File) func(*acp.Options) {
	return func(o *acp.Options) {
		o.Configure = func(_ string, extra ...settings.File) (*settings.Config, func(string) bool, error) {
			c, err := settings.From(app.Schema(), false, append(slices.Clone(layers), extra...)...)
			return c, func(string) bool { return false }, err
		}
	}
}

func newHarness(t testing.TB, model *acptest.Server, opts ...func(*acp.Options)) *harness {
	t.Helper()
	h := &harness{t: t, model: model, home: t.TempDir(), dir: t.TempDir(), client: newClient()}
	h.dir, _ = filepath.EvalSymlinks(h.dir)
	h.start(opts...)
	return h
}

func (h *harness) start(opts ...func(*acp.Options)) {
	env := h.model.Env()
	env["HOME"] = h.home
	h.opts = acp.Options{
		Home: h.home, Env: func(k string) string { return env[k] }, NoSync: true, Cwd: h.dir,
		CancelGrace: 5 * time.Second,
	}
	for _, o := range opts {
		o(&h.opts)
	}
	cr, cw := io.Pipe()
	sr, sw := io.Pipe()
	h.in = cw
	h.done = make(chan error, 1)
	var out io.Writer = sw
	if h.wrapOut != nil {
		out = h.wrapOut(sw)
	}
	go func() {
		err := acp.Serve(context.Background(), cr, out, h.opts)
		sw.Close()
		h.done <- err
	}()
	h.conn = sdk.NewClientSideConnection(h.client, cw, sr)
	h.conn.SetLogger(slog.New(slog.DiscardHandler))
}

// restart closes the connection and opens a new one on the same home.
func (h *harness) restart() {
	h.close()
	h.client = newClient()
	h.start(func(o *acp.Options) { *o = h.opts })
}

func (h *harness) close() {
	h.t.Helper()
	h.in.Close()
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		h.t.Fatal("Serve did not return after the client disconnected")
	}
}

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

func (h *harness) initialize(caps sdk.ClientCapabilities) sdk.InitializeResponse {
	h.t.Helper()
	r, err := h.conn.Initialize(h.ctx(), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber, ClientCapabilities: caps})
	if err != nil {
		h.t.Fatalf("initialize: %v", err)
	}
	return r
}

func (h *harness) newSession() sdk.SessionId {
	h.t.Helper()
	r, err := h.conn.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: h.dir, McpServers: []sdk.McpServer{}})
	if err != nil {
		h.t.Fatalf("session/new: %v", err)
	}
	return r.SessionId
}

func (h *harness) prompt(id sdk.SessionId, text string) (sdk.PromptResponse, error) {
	return h.conn.Prompt(h.ctx(), sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
}

func (h *harness) mustPrompt(id sdk.SessionId, text string, want sdk.StopReason) sdk.PromptResponse {
	h.t.Helper()
	r, err := h.prompt(id, text)
	if err != nil {
		h.t.Fatalf("session/prompt %q: %v", text, err)
	}
	if r.StopReason != want {
		h.t.Fatalf("session/prompt %q: stop %q, want %q; updates %s", text, r.StopReason, want, describe(h.client.updatesOf(id)))
	}
	return r
}

// events reads a session's stored log (after the connection closed, or
// for a session not live in this process).
func (h *harness) events(id sdk.SessionId) (session.Header, []session.Event) {
	h.t.Helper()
	b, err := jsonl.Open(filepath.Join(h.home, "sessions"), jsonl.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	scope := kernel.NewScope("test")
	defer scope.Close()
	c, err := store.Attach(scope, session.NewLive(nil), b, store.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	hd, ev, err := c.Read(context.Background(), session.ID(id))
	if err != nil {
		h.t.Fatalf("reading session %s: %v", id, err)
	}
	return hd, ev
}

// balanced checks the turn-enclosure invariant and returns the end reasons.
func balanced(t *testing.T, events []session.Event) []string {
	t.Helper()
	open := false
	var reasons []string
	for _, e := range events {
		switch e.Type {
		case session.TypeTurnStart:
			if open {
				t.Fatalf("turn/start inside an open turn (seq %d)", e.Seq)
			}
			open = true
		case session.TypeTurnEnd:
			if !open {
				t.Fatalf("turn/end outside a turn (seq %d)", e.Seq)
			}
			open = false
			te, _ := session.Decode[session.TurnEnd](e)
			reasons = append(reasons, te.Reason.Kind)
		}
	}
	if open {
		t.Fatalf("log ends inside an open turn")
	}
	return reasons
}

func kind(u sdk.SessionUpdate) string {
	switch {
	case u.AgentMessageChunk != nil:
		return "agent_message_chunk"
	case u.AgentThoughtChunk != nil:
		return "agent_thought_chunk"
	case u.UserMessageChunk != nil:
		return "user_message_chunk"
	case u.ToolCall != nil:
		return "tool_call"
	case u.ToolCallUpdate != nil:
		return "tool_call_update"
	case u.Plan != nil:
		return "plan"
	case u.AvailableCommandsUpdate != nil:
		return "available_commands_update"
	case u.CurrentModeUpdate != nil:
		return "current_mode_update"
	case u.ConfigOptionUpdate != nil:
		return "config_option_update"
	case u.UsageUpdate != nil:
		return "usage_update"
	case u.SessionInfoUpdate != nil:
		return "session_info_update"
	}
	return "?"
}

func text(u sdk.SessionUpdate) string {
	var cb *sdk.ContentBlock
	switch {
	case u.AgentMessageChunk != nil:
		cb = &u.AgentMessageChunk.Content
	case u.AgentThoughtChunk != nil:
		cb = &u.AgentThoughtChunk.Content
	case u.UserMessageChunk != nil:
		cb = &u.UserMessageChunk.Content
	}
	if cb == nil || cb.Text == nil {
		return ""
	}
	return cb.Text.Text
}

// messageText concatenates a session's agent message chunks.
func messageText(us []sdk.SessionUpdate) string {
	var b strings.Builder
	for _, u := range us {
		if u.AgentMessageChunk != nil {
			b.WriteString(text(u))
		}
	}
	return b.String()
}

// toolStatuses lists a call's statuses in order (tool_call, then updates).
func toolStatuses(us []sdk.SessionUpdate, id string) []string {
	var out []string
	for _, u := range us {
		switch {
		case u.ToolCall != nil && string(u.ToolCall.ToolCallId) == id:
			out = append(out, string(u.ToolCall.Status))
		case u.ToolCallUpdate != nil && string(u.ToolCallUpdate.ToolCallId) == id && u.ToolCallUpdate.Status != nil:
			out = append(out, string(*u.ToolCallUpdate.Status))
		}
	}
	return out
}

func describe(us []sdk.SessionUpdate) string {
	var b strings.Builder
	for _, u := range us {
		b.WriteString(kind(u))
		if s := text(u); s != "" {
			b.WriteString("(" + s + ")")
		}
		if u.ToolCall != nil {
			b.WriteString("(" + string(u.ToolCall.ToolCallId) + " " + string(u.ToolCall.Status) + ")")
		}
		if u.ToolCallUpdate != nil && u.ToolCallUpdate.Status != nil {
			b.WriteString("(" + string(u.ToolCallUpdate.ToolCallId) + " " + string(*u.ToolCallUpdate.Status) + ")")
		}
		b.WriteString(" ")
	}
	return b.String()
}
