package headless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkTransport reaches an MCP server that lives inside the SDK's process
// (createSdkMcpServer): each JSON-RPC message dsh's MCP client writes
// travels as an mcp_message control request, the answer to a request
// comes back in the control response, and messages the server starts
// (notifications) arrive as mcp_message requests from the client.
type sdkTransport struct {
	c    *control
	name string

	mu   sync.Mutex
	conn *sdkConn
}

// Connect opens a connection; a reconnect replaces the previous one.
func (t *sdkTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	conn := &sdkConn{t: t, in: make(chan jsonrpc.Message, 64), done: make(chan struct{})}
	t.mu.Lock()
	old := t.conn
	t.conn = conn
	t.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	return conn, nil
}

// fromServer delivers a message the server sent on its own.
func (t *sdkTransport) fromServer(raw json.RawMessage) {
	msg, err := jsonrpc.DecodeMessage(raw)
	if err != nil {
		t.c.r.o.Logger.Warn("headless: malformed MCP message from the SDK", "server", t.name, "err", err)
		return
	}
	t.mu.Lock()
	conn := t.conn
	t.mu.Unlock()
	if conn != nil {
		conn.push(msg)
	}
}

// inputClosed ends the connection: no answer can arrive any more.
func (t *sdkTransport) inputClosed() {
	t.mu.Lock()
	conn := t.conn
	t.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}

type sdkConn struct {
	t    *sdkTransport
	in   chan jsonrpc.Message
	once sync.Once
	done chan struct{}
	wg   sync.WaitGroup
}

func (c *sdkConn) push(m jsonrpc.Message) {
	select {
	case c.in <- m:
	case <-c.done:
	}
}

func (c *sdkConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		return nil, errors.New("mcp: SDK server connection closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write sends a message without waiting for its answer, which Read
// delivers when the client has answered the control request.
func (c *sdkConn) Write(ctx context.Context, m jsonrpc.Message) error {
	select {
	case <-c.done:
		return errors.New("mcp: SDK server connection closed")
	default:
	}
	raw, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return err
	}
	req, isCall := m.(*jsonrpc.Request)
	isCall = isCall && req.ID.IsValid()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		go func() {
			select {
			case <-c.done:
				cancel()
			case <-rctx.Done():
			}
		}()
		resp, err := c.t.c.request(rctx, map[string]any{"subtype": "mcp_message", "server_name": c.t.name, "message": json.RawMessage(raw)})
		if !isCall {
			return
		}
		var reply jsonrpc.Message
		if err == nil {
			var body struct {
				MCPResponse json.RawMessage `json:"mcp_response"`
			}
			if err = json.Unmarshal(resp, &body); err == nil {
				reply, err = jsonrpc.DecodeMessage(body.MCPResponse)
			}
		}
		if err != nil {
			// The request failed on the way: answer it with an error so
			// the caller is not left waiting.
			reply = &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("SDK MCP server %q: %v", c.t.name, err)}}
		}
		c.push(reply)
	}()
	return nil
}

func (c *sdkConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return nil
}

func (c *sdkConn) SessionID() string { return "" }
