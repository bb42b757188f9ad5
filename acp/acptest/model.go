// Package acptest provides what dsh's ACP tests share: a loopback model
// server speaking DeepSeek's Chat Completions SSE, scripted turn by turn.
package acptest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// APIKey is the key the server accepts.
const APIKey = "test-key"

// Model is the model every reply claims to be.
const Model = "deepseek/deepseek-chat"

// Step is one server-sent event of a reply, or a pause.
type Step struct {
	Event map[string]any
	// Hold, when set, blocks the stream until the channel is closed or the
	// client hangs up (a model that stalls mid-answer).
	Hold <-chan struct{}
	// Sleep pauses before the event.
	Sleep time.Duration
	// Sent, when set, is called with the time the event is written to the
	// socket (just before the write).
	Sent func(time.Time)
}

// Reply is one scripted response.
type Reply []Step

// Server is a loopback DeepSeek-format server. Each request takes the next
// scripted reply; requests are recorded.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []Reply
	requests []map[string]any
	// dflt, when set, answers requests once the script is exhausted.
	dflt func(req map[string]any) Reply
}

// SetDefault answers requests with f once the script is exhausted.
func (s *Server) SetDefault(f func(req map[string]any) Reply) {
	s.mu.Lock()
	s.dflt = f
	s.mu.Unlock()
}

// New starts a server with a script.
func New(replies ...Reply) *Server {
	s := &Server{replies: replies}
	s.Server = httptest.NewServer(s)
	return s
}

// Push appends replies to the script.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	s.replies = append(s.replies, replies...)
	s.mu.Unlock()
}

// Requests returns the recorded request bodies.
func (s *Server) Requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.requests...)
}

// Env is the environment that points dsh's DeepSeek provider here.
func (s *Server) Env() map[string]string {
	return map[string]string{
		"DEEPSEEK_API_KEY": APIKey, "DEEPSEEK_BASE_URL": s.URL, "DSH_MODEL": Model,
		"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "",
	}
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") || r.Header.Get("Authorization") != "Bearer "+APIKey {
		http.Error(w, `{"error":{"message":"bad path or key","type":"invalid_request_error"}}`, http.StatusUnauthorized)
		return
	}
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	s.mu.Lock()
	s.requests = append(s.requests, body)
	var reply Reply
	ok := false
	if len(s.replies) > 0 {
		reply, s.replies, ok = s.replies[0], s.replies[1:], true
	} else if s.dflt != nil {
		reply, ok = s.dflt(body), true
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, `{"error":{"message":"script exhausted"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	for _, st := range reply {
		if st.Sleep > 0 {
			select {
			case <-time.After(st.Sleep):
			case <-r.Context().Done():
				return
			}
		}
		if st.Hold != nil {
			select {
			case <-st.Hold:
			case <-r.Context().Done():
				return
			}
		}
		if st.Event == nil {
			continue
		}
		ev := st.Event
		ev["id"], ev["object"], ev["model"] = "chatcmpl-1", "chat.completion.chunk", "deepseek-chat"
		b, _ := json.Marshal(ev)
		frame := "data: " + string(b) + "\n\n"
		if st.Sent != nil {
			st.Sent(time.Now())
		}
		if _, err := io.WriteString(w, frame); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

func delta(d map[string]any) map[string]any {
	return map[string]any{"choices": []any{map[string]any{"index": 0, "delta": d}}}
}

func finish(reason string, prompt, completion int) map[string]any {
	return map[string]any{
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": reason}},
		"usage":   map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
	}
}

// TextDelta is one content event.
func TextDelta(s string) Step { return Step{Event: delta(map[string]any{"content": s})} }

// ReasoningDelta is one reasoning event.
func ReasoningDelta(s string) Step {
	return Step{Event: delta(map[string]any{"reasoning_content": s})}
}

// Finish ends a reply with a finish reason ("stop", "tool_calls",
// "length") and usage.
func Finish(reason string) Step { return Step{Event: finish(reason, 100, 10)} }

// Text is a reply streaming each piece as its own chunk, then stop.
func Text(pieces ...string) Reply {
	r := Reply{{Event: delta(map[string]any{"role": "assistant", "content": ""})}}
	for _, p := range pieces {
		r = append(r, TextDelta(p))
	}
	return append(r, Finish("stop"))
}

// Tool is a reply calling one tool.
func Tool(id, name string, args any) Reply {
	a, _ := json.Marshal(args)
	return Reply{
		{Event: delta(map[string]any{"role": "assistant", "content": ""})},
		{Event: delta(map[string]any{"tool_calls": []any{map[string]any{
			"index": 0, "id": id, "type": "function", "function": map[string]any{"name": name, "arguments": string(a)}}}})},
		Finish("tool_calls"),
	}
}

// Stall streams first, then holds until release is closed or the client
// hangs up, then finishes.
func Stall(first string, release <-chan struct{}) Reply {
	return Reply{
		{Event: delta(map[string]any{"role": "assistant", "content": ""})},
		TextDelta(first),
		{Hold: release},
		TextDelta(" and the rest"),
		Finish("stop"),
	}
}

// String describes a reply (for failures).
func (r Reply) String() string {
	var b strings.Builder
	for _, st := range r {
		if st.Event != nil {
			j, _ := json.Marshal(st.Event)
			fmt.Fprintf(&b, "%s\n", j)
		}
	}
	return b.String()
}
