// Package fakeanthropic is a loopback server speaking Anthropic's Messages
// API (POST /v1/messages, streaming SSE or one JSON body) with replies a
// test or benchmark computes from each request. dsh's anthropic adapter
// and Claude Code itself (through ANTHROPIC_BASE_URL) both talk to it, so
// the Claude Agent SDK can drive either offline.
package fakeanthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// Request is the part of a Messages request replies are computed from.
type Request struct {
	Model     string          `json:"model"`
	System    json.RawMessage `json:"system"`
	Messages  []Message       `json:"messages"`
	Tools     []Tool          `json:"tools"`
	Stream    bool            `json:"stream"`
	MaxTokens int             `json:"max_tokens"`
}

// Message is one message of the conversation.
type Message struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// Content is a message's content: a string or blocks, read as blocks.
type Content []Block

// UnmarshalJSON reads both forms.
func (c *Content) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '"' {
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return err
		}
		*c = Content{{Type: "text", Text: s}}
		return nil
	}
	var bs []Block
	if err := json.Unmarshal(b, &bs); err != nil {
		return err
	}
	*c = bs
	return nil
}

// Block is a content block of a request.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   Content         `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// Tool is one tool the request offers.
type Tool struct {
	Name string `json:"name"`
}

// HasTool reports whether the request offers a tool of one of these names.
func (r Request) HasTool(names ...string) (string, bool) {
	for _, t := range r.Tools {
		for _, n := range names {
			if t.Name == n {
				return n, true
			}
		}
	}
	return "", false
}

// SystemText is the system prompt's text (a string or text blocks).
func (r Request) SystemText() string {
	var s string
	if json.Unmarshal(r.System, &s) == nil {
		return s
	}
	var blocks []Block
	_ = json.Unmarshal(r.System, &blocks)
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// ToolResults returns the tool_result blocks of the conversation, in order.
func (r Request) ToolResults() []Block {
	var out []Block
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_result" {
				out = append(out, b)
			}
		}
	}
	return out
}

// Text returns all text of the conversation's user messages (tool
// results included), for matching.
func (r Request) Text() string {
	var b strings.Builder
	var walk func(Content)
	walk = func(c Content) {
		for _, bl := range c {
			b.WriteString(bl.Text)
			b.WriteByte('\n')
			walk(bl.Content)
		}
	}
	for _, m := range r.Messages {
		if m.Role == "user" {
			walk(m.Content)
		}
	}
	return b.String()
}

// LastUserText is the text of the last user message (tool results
// included).
func (r Request) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return Request{Messages: r.Messages[i : i+1]}.Text()
		}
	}
	return ""
}

// Reply is one model answer.
type Reply struct {
	Thinking string
	Text     string
	ToolUses []ToolUse
	// StopReason defaults to tool_use with tool uses, else end_turn.
	StopReason string
	// Status and ErrorType answer with an API error instead.
	Status    int
	ErrorType string
	ErrorMsg  string
	// InputTokens and OutputTokens are the usage reported (defaults 100, 10).
	InputTokens, OutputTokens int
	// Chunks splits text into this many deltas (default 2).
	Chunks int
	// CacheReadTokens is reported as cache_read_input_tokens.
	CacheReadTokens int
	// Hold, when set, pauses a streamed reply after the first half of its
	// text deltas until Hold is closed (or the client goes away): a test
	// sees the answer part-streamed while the request is still open.
	Hold <-chan struct{}
}

// ToolUse is a tool call of a reply.
type ToolUse struct {
	ID    string
	Name  string
	Input any
}

// Server is the fake API.
type Server struct {
	URL string
	// reply computes the answer to a request; it is called concurrently.
	reply func(Request) Reply

	ln  net.Listener
	srv *http.Server
	mu  sync.Mutex
	log []Request
	n   int
}

// Start serves on a loopback port until Close.
func Start(reply func(Request) Reply) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), reply: reply, ln: ln}
	s.srv = &http.Server{Handler: s}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// SetReply replaces the reply function (a test that needs values made
// after Start, such as directories, sets it then).
func (s *Server) SetReply(f func(Request) Reply) {
	s.mu.Lock()
	s.reply = f
	s.mu.Unlock()
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Requests returns the requests served so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// ServeHTTP answers /v1/messages; other paths (token counting, telemetry)
// get a small JSON answer so a client that probes them goes on.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		if strings.HasSuffix(r.URL.Path, "/count_tokens") {
			writeAll(w, "application/json", []byte(`{"input_tokens":100}`))
			return
		}
		writeAll(w, "application/json", []byte(`{}`))
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		writeAll(w, "application/json", []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"bad JSON"}}`))
		return
	}
	s.mu.Lock()
	s.log = append(s.log, req)
	s.n++
	n := s.n
	reply := s.reply
	s.mu.Unlock()
	rep := Reply{Text: "ok"}
	if reply != nil {
		rep = reply(req)
	}
	if rep.Status != 0 {
		typ := rep.ErrorType
		if typ == "" {
			typ = "api_error"
		}
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": rep.ErrorMsg}})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		w.WriteHeader(rep.Status)
		_, _ = w.Write(b)
		return
	}
	id := fmt.Sprintf("msg_fake%06d", n)
	if req.Stream {
		b, cut := sse(id, req.Model, rep)
		if rep.Hold == nil || cut == 0 {
			writeAll(w, "text/event-stream", b)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(b[:cut])
		http.NewResponseController(w).Flush()
		select {
		case <-rep.Hold:
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write(b[cut:])
		return
	}
	writeAll(w, "application/json", whole(id, req.Model, rep))
}

// writeAll sends headers and body in one write (no Nagle delay).
func writeAll(w http.ResponseWriter, ctype string, b []byte) {
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	_, _ = w.Write(b)
}

func (rep Reply) stop() string {
	if rep.StopReason != "" {
		return rep.StopReason
	}
	if len(rep.ToolUses) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func (rep Reply) usage() (int, int) {
	in, out := rep.InputTokens, rep.OutputTokens
	if in == 0 {
		in = 100
	}
	if out == 0 {
		out = 10
	}
	return in, out
}

// sse is the streamed reply, and the offset after the first half of its
// text deltas (0 without text).
func sse(id, model string, rep Reply) ([]byte, int) {
	var b bytes.Buffer
	cut := 0
	ev := func(name string, v any) {
		j, _ := json.Marshal(v)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, j)
	}
	in, out := rep.usage()
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": in, "output_tokens": 1, "cache_read_input_tokens": rep.CacheReadTokens}}})
	i := 0
	if rep.Thinking != "" {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]string{"type": "thinking", "thinking": ""}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]string{"type": "thinking_delta", "thinking": rep.Thinking}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]string{"type": "signature_delta", "signature": "sig-" + id}})
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	if rep.Text != "" {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]string{"type": "text", "text": ""}})
		parts := split(rep.Text, rep.Chunks)
		for k, part := range parts {
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]string{"type": "text_delta", "text": part}})
			if k == (len(parts)-1)/2 {
				cut = b.Len()
			}
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	for _, tu := range rep.ToolUses {
		args, _ := json.Marshal(tu.Input)
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": tu.ID, "name": tu.Name, "input": map[string]any{}}})
		for _, part := range split(string(args), 2) {
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]string{"type": "input_json_delta", "partial_json": part}})
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": rep.stop(), "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": out}})
	ev("message_stop", map[string]any{"type": "message_stop"})
	return b.Bytes(), cut
}

func whole(id, model string, rep Reply) []byte {
	var content []any
	if rep.Thinking != "" {
		content = append(content, map[string]string{"type": "thinking", "thinking": rep.Thinking, "signature": "sig-" + id})
	}
	if rep.Text != "" {
		content = append(content, map[string]string{"type": "text", "text": rep.Text})
	}
	for _, tu := range rep.ToolUses {
		content = append(content, map[string]any{"type": "tool_use", "id": tu.ID, "name": tu.Name, "input": tu.Input})
	}
	in, out := rep.usage()
	b, _ := json.Marshal(map[string]any{"id": id, "type": "message", "role": "assistant", "model": model, "content": content,
		"stop_reason": rep.stop(), "stop_sequence": nil, "usage": map[string]int{"input_tokens": in, "output_tokens": out}})
	return b
}

// split cuts s into n pieces (on rune boundaries).
func split(s string, n int) []string {
	if n <= 1 {
		n = 2
	}
	r := []rune(s)
	if len(r) < n {
		return []string{s}
	}
	var out []string
	size := (len(r) + n - 1) / n
	for i := 0; i < len(r); i += size {
		out = append(out, string(r[i:min(i+size, len(r))]))
	}
	return out
}
