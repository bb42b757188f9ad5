// Package scripted is a model adapter that plays a fixed script: each model
// call consumes the next entry. Tests drive the loop with it, benchmarks use
// it as a zero-latency model, and it records every request it saw.
package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/dshq/dsh/llm"
)

// Entry is one model call's behaviour.
type Entry struct {
	Chunks []llm.Chunk
	// Fn computes the chunks from the request instead.
	Fn func(req *llm.Request) []llm.Chunk
	// Hang streams Chunks, then blocks until the call is cancelled.
	Hang bool
	// Err fails the call after streaming Chunks.
	Err error
}

// ErrExhausted is returned when a call arrives after the last entry.
var ErrExhausted = errors.New("scripted: script exhausted")

// Adapter plays a script.
type Adapter struct {
	mu       sync.Mutex
	script   []Entry
	pos      int
	calls    int
	requests []llm.Request
	// Loop, when set, replays the script from the start once exhausted
	// (benchmarks use it).
	Loop bool
	// NoRecord skips recording requests (benchmarks use it).
	NoRecord bool
}

// New returns an adapter playing entries.
func New(entries ...Entry) *Adapter { return &Adapter{script: entries} }

// Push appends entries to the script.
func (a *Adapter) Push(entries ...Entry) {
	a.mu.Lock()
	a.script = append(a.script, entries...)
	a.mu.Unlock()
}

// Requests returns copies of the requests seen so far.
func (a *Adapter) Requests() []llm.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]llm.Request(nil), a.requests...)
}

// Calls is how many calls were made.
func (a *Adapter) Calls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

// Stream implements llm.Adapter.
func (a *Adapter) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	a.mu.Lock()
	if !a.NoRecord {
		r := *req
		r.Messages = append([]llm.Message(nil), req.Messages...)
		r.Tools = append([]llm.ToolSchema(nil), req.Tools...)
		a.requests = append(a.requests, r)
	}
	a.calls++
	if a.pos >= len(a.script) {
		if !a.Loop || len(a.script) == 0 {
			a.mu.Unlock()
			return nil, ErrExhausted
		}
		a.pos = 0
	}
	e := a.script[a.pos]
	a.pos++
	a.mu.Unlock()
	chunks := e.Chunks
	if e.Fn != nil {
		chunks = e.Fn(req)
	}
	return func(yield func(llm.Chunk, error) bool) {
		for _, c := range chunks {
			if ctx.Err() != nil {
				yield(llm.Chunk{}, context.Cause(ctx))
				return
			}
			if !yield(c, nil) {
				return
			}
		}
		if e.Hang {
			<-ctx.Done()
			yield(llm.Chunk{}, context.Cause(ctx))
			return
		}
		if e.Err != nil {
			yield(llm.Chunk{}, e.Err)
		}
	}, nil
}

// Text streams s one character per delta, then usage {10, len(s)} and stop.
func Text(s string) Entry { return Entry{Chunks: TextChunks(s, llm.FinishStop)} }

// MaxTokens is Text ending with max-tokens.
func MaxTokens(s string) Entry { return Entry{Chunks: TextChunks(s, llm.FinishMaxTokens)} }

// TextChunks builds a text stream.
func TextChunks(s, finish string) []llm.Chunk {
	out := []llm.Chunk{llm.StartChunk(0, llm.BlockText)}
	for _, r := range s {
		out = append(out, llm.TextChunk(0, string(r)))
	}
	return append(out, llm.EndChunk(0, llm.Text(s)), llm.UsageChunk(llm.Usage{InputTokens: 10, OutputTokens: len(s)}), llm.FinishChunk(finish))
}

// Call streams an optional text prefix and one tool call whose arguments
// arrive in two deltas, then usage and tool-calls.
func Call(id, name string, args any, prefix string) Entry {
	return Entry{Chunks: CallChunks(prefix, ToolCall{ID: id, Name: name, Args: args})}
}

// ToolCall describes one scripted call.
type ToolCall struct {
	ID, Name string
	Args     any // marshalled unless it is a string (sent verbatim)
}

// Calls streams several tool calls in one message.
func Calls(prefix string, calls ...ToolCall) Entry {
	return Entry{Chunks: CallChunks(prefix, calls...)}
}

// CallChunks builds a tool-call stream.
func CallChunks(prefix string, calls ...ToolCall) []llm.Chunk {
	var out []llm.Chunk
	idx := 0
	if prefix != "" {
		out = append(out, llm.StartChunk(0, llm.BlockText), llm.TextChunk(0, prefix), llm.EndChunk(0, llm.Text(prefix)))
		idx = 1
	}
	for _, c := range calls {
		var args string
		if s, ok := c.Args.(string); ok {
			args = s
		} else {
			b, _ := json.Marshal(c.Args)
			args = string(b)
		}
		cut := min(5, len(args))
		id := llm.CallID(c.ID)
		out = append(out,
			llm.StartChunk(idx, llm.BlockToolCall),
			llm.ToolDeltaChunk(idx, id, c.Name, args[:cut]),
			llm.ToolDeltaChunk(idx, id, "", args[cut:]),
			llm.EndChunk(idx, llm.ToolCall(id, c.Name, args)))
		idx++
	}
	return append(out, llm.UsageChunk(llm.Usage{InputTokens: 10, OutputTokens: 5}), llm.FinishChunk(llm.FinishToolCalls))
}

// Hang streams a partial text block and blocks until cancelled.
func Hang() Entry {
	return Entry{Chunks: []llm.Chunk{llm.StartChunk(0, llm.BlockText), llm.TextChunk(0, "partial")}, Hang: true}
}
