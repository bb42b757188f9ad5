package headless

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/internal/claudemsg"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/permission"
)

// The control protocol of the Claude Agent SDK, over the same pipes as
// the messages. Both sides send control_request lines
// ({type, request_id, request: {subtype, …}}) and answer them with
// control_response lines ({type, response: {subtype: success|error,
// request_id, response|error}}); control_cancel_request withdraws a
// request. The SDK asks dsh to initialize, interrupt, set_permission_mode,
// set_model and relay its in-process MCP servers' messages (mcp_message);
// dsh asks the SDK can_use_tool, hook_callback and mcp_message.

// maxLine bounds one stdin line (a user message with images can be big).
const maxLine = 64 << 20

// inLine is any stdin line; which fields count depends on Type.
type inLine struct {
	Type      string          `json:"type"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Response  *ctlResponse    `json:"response"`
	Message   json.RawMessage `json:"message"`
	// user messages
	ShouldQuery *bool  `json:"shouldQuery"`
	UUID        string `json:"uuid"`
}

type ctlResponse struct {
	Subtype   string          `json:"subtype"` // success, error
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response,omitempty"`
	Error     string          `json:"error,omitempty"`
}

type ctlRequestLine struct {
	Type      string `json:"type"` // control_request
	RequestID string `json:"request_id"`
	Request   any    `json:"request"`
}

type ctlResponseLine struct {
	Type     string      `json:"type"` // control_response
	Response ctlResponse `json:"response"`
}

// errInputClosed fails requests to the client once stdin has ended: the
// answers could never arrive.
var errInputClosed = errors.New("the client closed its input, so it cannot answer")

// control is one stream-json session's side of the control protocol.
type control struct {
	r *run

	mu       sync.Mutex
	next     int
	pending  map[string]chan ctlResponse
	closed   bool
	handlers map[string]context.CancelFunc // requests from the client being served
	warned   map[string]bool
	sdkMCP   map[string]*sdkTransport
}

func newControl(r *run) *control {
	return &control{r: r, pending: map[string]chan ctlResponse{}, handlers: map[string]context.CancelFunc{},
		warned: map[string]bool{}, sdkMCP: map[string]*sdkTransport{}}
}

// warn says once on stderr that something the client asked for is not
// supported (nothing unsupported is skipped silently).
func (c *control) warn(key, format string, args ...any) {
	c.mu.Lock()
	seen := c.warned[key]
	c.warned[key] = true
	c.mu.Unlock()
	if !seen {
		fmt.Fprintf(c.r.o.Err, "dsh: "+format+"\n", args...)
	}
}

// request sends a control request to the client and waits for its answer.
func (c *control) request(ctx context.Context, body any) (json.RawMessage, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errInputClosed
	}
	c.next++
	id := fmt.Sprintf("dsh-%d", c.next)
	ch := make(chan ctlResponse, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	if err := c.r.w.write(ctlRequestLine{Type: "control_request", RequestID: id, Request: body}); err != nil {
		return nil, fmt.Errorf("writing to the client: %w", err)
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, errInputClosed
		}
		if resp.Subtype == "error" {
			return nil, fmt.Errorf("the client answered with an error: %s", resp.Error)
		}
		return resp.Response, nil
	case <-ctx.Done():
		_ = c.r.w.write(map[string]string{"type": "control_cancel_request", "request_id": id})
		return nil, context.Cause(ctx)
	}
}

// deliver hands a control_response to the request waiting for it.
func (c *control) deliver(resp ctlResponse) {
	c.mu.Lock()
	ch := c.pending[resp.RequestID]
	delete(c.pending, resp.RequestID)
	c.mu.Unlock()
	if ch == nil {
		c.r.o.Logger.Warn("headless: a control response answers no request", "request_id", resp.RequestID)
		return
	}
	ch <- resp
}

// close fails every waiting request: stdin has ended.
func (c *control) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	for _, t := range c.sdkMCP {
		t.inputClosed()
	}
}

func (c *control) respond(id string, v any, err error) {
	resp := ctlResponse{Subtype: "success", RequestID: id}
	if err != nil {
		resp.Subtype, resp.Error = "error", err.Error()
	} else {
		if v == nil {
			v = struct{}{}
		}
		b, merr := json.Marshal(v)
		if merr != nil {
			resp.Subtype, resp.Error = "error", merr.Error()
		}
		resp.Response = b
	}
	_ = c.r.w.write(ctlResponseLine{Type: "control_response", Response: resp})
}

// serve handles a control request from the client in its own goroutine
// (answering may need the client's answers to requests of ours). done is
// called when the answer has been written.
func (c *control) serve(ctx context.Context, id string, raw json.RawMessage, done func()) {
	hctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	c.handlers[id] = cancel
	c.mu.Unlock()
	go func() {
		defer func() {
			cancel()
			c.mu.Lock()
			delete(c.handlers, id)
			c.mu.Unlock()
			if done != nil {
				done()
			}
		}()
		v, err := c.handle(hctx, raw)
		if hctx.Err() != nil && ctx.Err() == nil {
			return // withdrawn by the client: it wants no answer
		}
		c.respond(id, v, err)
	}()
}

func (c *control) cancelRequest(id string) {
	c.mu.Lock()
	cancel := c.handlers[id]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// handle serves one request from the client.
func (c *control) handle(ctx context.Context, raw json.RawMessage) (any, error) {
	var head struct {
		Subtype string `json:"subtype"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("malformed control request: %v", err)
	}
	r := c.r
	switch head.Subtype {
	case "initialize":
		return c.initialize(ctx, raw)
	case "interrupt":
		r.mu.Lock()
		if r.stats != nil {
			r.interrupted[r.stats.turn] = true
		}
		r.mu.Unlock()
		if ag := r.agent(); ag != nil {
			ag.Cancel("interrupted by the client")
		}
		return map[string]any{"still_queued": []string{}}, nil
	case "set_permission_mode":
		var req struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(raw, &req)
		return nil, r.setMode(req.Mode)
	case "set_model":
		var req struct {
			Model *string `json:"model"`
		}
		_ = json.Unmarshal(raw, &req)
		m := ""
		if req.Model != nil {
			m = *req.Model
		}
		return nil, r.setModel(m)
	case "mcp_message":
		var req struct {
			ServerName string          `json:"server_name"`
			Message    json.RawMessage `json:"message"`
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, err
		}
		c.mu.Lock()
		t := c.sdkMCP[req.ServerName]
		c.mu.Unlock()
		if t == nil {
			return nil, fmt.Errorf("no SDK MCP server %q", req.ServerName)
		}
		t.fromServer(req.Message)
		return map[string]any{"mcp_response": map[string]any{"jsonrpc": "2.0", "result": map[string]any{}, "id": 0}}, nil
	case "mcp_status":
		return map[string]any{"mcpServers": r.initLine().MCPServers}, nil
	case "rewind_files":
		return r.rewindFiles(ctx, raw)
	case "get_binary_version":
		return map[string]any{"version": r.o.Version}, nil
	}
	c.warn("request:"+head.Subtype, "the client's %q control request is not supported; it was answered with an error", head.Subtype)
	return nil, fmt.Errorf("Unsupported control request subtype: %s", head.Subtype)
}

// setMode switches the session's permission mode (Claude Code's names).
func (r *run) setMode(mode string) error {
	if r.a.Permission == nil {
		return errors.New("permission modes are not available")
	}
	if _, err := permission.ParseMode(mode); err != nil || mode == "" {
		return fmt.Errorf("permission mode %q is not supported by dsh (%s)", mode, permission.ModeNames())
	}
	r.mu.Lock()
	sid := r.sid
	if sid == "" {
		r.pendingMode = mode
	}
	r.mu.Unlock()
	if sid == "" {
		return nil
	}
	return r.a.Permission.SetSessionMode(sid, permissionMode(mode))
}

// setModel switches the model of the main agent's next requests ("" goes
// back to the default).
func (r *run) setModel(ref string) error {
	ref = strings.TrimSpace(ref)
	if ref == "" || ref == "default" {
		r.mu.Lock()
		r.model = ""
		r.mu.Unlock()
		return nil
	}
	id, _, ok := r.a.Host.LLM.Resolve(ref)
	if !ok {
		return fmt.Errorf("unknown model %q", ref)
	}
	r.mu.Lock()
	r.model = id
	r.mu.Unlock()
	return nil
}

func (r *run) currentModel() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.model != "" {
		return r.model
	}
	return r.a.Model
}

// streamInput runs a stream-json session: user messages and control
// requests from stdin until it ends, then the queued turns to their end.
func (r *run) streamInput(ctx context.Context, start time.Time) (int, error) {
	c := newControl(r)
	r.ctl = c
	// Work that must happen in order (prompts, after an initialize that
	// came before them) runs on one goroutine.
	work := make(chan func(), 1024)
	workDone := make(chan struct{})
	go func() {
		defer close(workDone)
		for f := range work {
			f()
		}
	}()
	if strings.TrimSpace(r.o.Prompt) != "" {
		prompt := r.o.Prompt
		work <- func() {
			if !r.ensureOpen(ctx) {
				return
			}
			if err := r.send(ctx, prompt); err != nil {
				fmt.Fprintf(r.o.Err, "dsh: the prompt was not sent: %v\n", err)
			}
		}
	}
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(r.o.In)
		sc.Buffer(make([]byte, 0, 64<<10), maxLine)
		for sc.Scan() {
			b := append([]byte(nil), sc.Bytes()...)
			select {
			case lines <- b:
			case <-ctx.Done():
				return
			}
		}
		readErr <- sc.Err()
	}()
	var inErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err := <-readErr:
			inErr = err
			break loop
		case b := <-lines:
			r.line(ctx, c, b, work)
		}
	}
	c.close()
	close(work)
	defer r.dispose(ctx)
	if ctx.Err() != nil {
		if ag := r.agent(); ag != nil {
			ag.Cancel("interrupted")
		}
		<-workDone
		if ag := r.agent(); ag != nil {
			_ = ag.WhenIdle(context.WithoutCancel(ctx))
		}
		return app.ExitAborted, errors.New("interrupted")
	}
	<-workDone
	if r.openErr != nil {
		return r.openCode, r.openErr
	}
	if r.agent() != nil {
		if err := r.waitIdle(ctx); err != nil {
			return app.ExitError, err
		}
	}
	if inErr != nil {
		return app.ExitError, fmt.Errorf("reading stdin: %v", inErr)
	}
	if r.w.err != nil {
		return app.ExitError, fmt.Errorf("writing the output: %v", r.w.err)
	}
	res, ok := r.lastResult()
	if !ok {
		return app.ExitOK, nil // no prompt came: nothing to report
	}
	if res = r.checkSaved(ctx, res); res.code == app.ExitNotSaved {
		return res.code, notSaved(errorText(res))
	}
	if res.code != app.ExitOK {
		return res.code, errors.New(errorText(res))
	}
	return app.ExitOK, nil
}

// line handles one stdin line.
func (r *run) line(ctx context.Context, c *control, b []byte, work chan<- func()) {
	if len(strings.TrimSpace(string(b))) == 0 {
		return
	}
	var in inLine
	if err := json.Unmarshal(b, &in); err != nil {
		fmt.Fprintf(r.o.Err, "dsh: ignoring a stdin line that is not JSON: %v\n", err)
		return
	}
	switch in.Type {
	case "user":
		content, err := userContent(in.Message)
		if err != nil {
			fmt.Fprintf(r.o.Err, "dsh: ignoring a user message: %v\n", err)
			return
		}
		inject := in.ShouldQuery != nil && !*in.ShouldQuery
		uuid := in.UUID
		work <- func() {
			if !r.ensureOpen(ctx) {
				return
			}
			if uuid != "" && !inject {
				r.mu.Lock()
				r.pendingUUIDs = append(r.pendingUUIDs, uuid)
				r.mu.Unlock()
			}
			var err error
			if inject {
				err = r.agent().Inject(ctx, content, llm.Source{})
			} else {
				err = r.sendBlocks(ctx, content)
			}
			if err != nil {
				fmt.Fprintf(r.o.Err, "dsh: a user message was not sent: %v\n", err)
			}
		}
	case "control_request":
		var head struct {
			Subtype string `json:"subtype"`
		}
		_ = json.Unmarshal(in.Request, &head)
		if head.Subtype == "initialize" {
			// Prompts sent after initialize wait until it is applied
			// (hooks, agents, MCP servers must be there for their turn).
			ready := make(chan struct{})
			c.serve(ctx, in.RequestID, in.Request, func() { close(ready) })
			work <- func() { <-ready }
			return
		}
		c.serve(ctx, in.RequestID, in.Request, nil)
	case "control_response":
		if in.Response != nil {
			c.deliver(*in.Response)
		}
	case "control_cancel_request":
		c.cancelRequest(in.RequestID)
	case "keep_alive", "update_environment_variables":
	default:
		c.warn("line:"+in.Type, "ignoring stdin lines of type %q (not supported)", in.Type)
	}
}

// userContent reads an SDK user message's content: a string or
// Anthropic content blocks.
func userContent(raw json.RawMessage) ([]llm.Block, error) {
	var m struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("malformed message: %v", err)
	}
	c := strings.TrimSpace(string(m.Content))
	if c == "" || c == "null" {
		return nil, errors.New("the message has no content")
	}
	if c[0] == '"' {
		var s string
		if err := json.Unmarshal(m.Content, &s); err != nil {
			return nil, err
		}
		return []llm.Block{llm.Text(s)}, nil
	}
	var blocks []claudemsg.Block
	if err := json.Unmarshal(m.Content, &blocks); err != nil {
		return nil, fmt.Errorf("malformed content: %v", err)
	}
	out := claudemsg.ToLLM(blocks)
	if len(out) == 0 {
		return nil, errors.New("the message has no content dsh can read (text or image)")
	}
	return out, nil
}

// ensureOpen opens the session before the first prompt (on the work
// goroutine, after an initialize that came first: SessionStart callbacks
// are registered by then). A failure stops every later prompt.
func (r *run) ensureOpen(ctx context.Context) bool {
	r.openMu.Lock()
	defer r.openMu.Unlock()
	if r.openErr != nil {
		return false
	}
	if r.agent() != nil {
		return true
	}
	if code, err := r.open(ctx); err != nil {
		r.openCode, r.openErr = code, err
		return false
	}
	return true
}
