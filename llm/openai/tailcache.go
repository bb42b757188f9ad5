package openai

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"

	"github.com/dshq/dsh/llm"
)

// tailCache keeps the encoded fields after the messages (the options and
// the tools) of the last few distinct requests. Every step of every
// session sends the same tool list, and marshalling it — encoding/json
// validating and compacting each tool's parameter schema, then escaping
// every description — was most of a request body's cost in dsh serve's
// load test (4 % of the server's CPU), more than the messages, which the
// wire cache already reuses. An entry is found by comparing the request's
// fields with the copy it was built from, byte for byte, so a caller that
// changes a tool (or edits one in place) gets a fresh encoding.
type tailCache struct {
	mu      sync.Mutex
	entries [4]*tailEntry
	next    int // the entry replaced next
}

// tailEntry is one request's fields after its messages and their JSON
// (`{"stream":...}`, never modified once stored: bodies copy it).
type tailEntry struct {
	temperature *float64
	maxTokens   int
	stop        []string
	tools       []llm.ToolSchema
	toolChoice  string
	json        []byte
}

func (e *tailEntry) matches(req *llm.Request) bool {
	if e.maxTokens != req.MaxTokens || e.toolChoice != req.ToolChoice || !slices.Equal(e.stop, req.Stop) ||
		!sameFloat(e.temperature, req.Temperature) || len(e.tools) != len(req.Tools) {
		return false
	}
	for i, t := range req.Tools {
		c := e.tools[i]
		if c.Name != t.Name || c.Description != t.Description || !bytes.Equal(c.Parameters, t.Parameters) ||
			!sameBool(c.Strict, t.Strict) {
			return false
		}
	}
	return true
}

func sameFloat(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
func sameBool(a, b *bool) bool     { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// tail returns the JSON of req's fields after its messages, from the cache
// when an entry matches, else encoded (and kept, unless it failed).
func (a *Adapter) tail(req *llm.Request) ([]byte, error) {
	c := &a.tails
	c.mu.Lock()
	for _, e := range c.entries {
		if e != nil && e.matches(req) {
			c.mu.Unlock()
			return e.json, nil
		}
	}
	c.mu.Unlock()
	w, err := a.fields(req)
	if err != nil {
		return nil, err
	}
	tj, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	e := &tailEntry{maxTokens: req.MaxTokens, toolChoice: req.ToolChoice, stop: slices.Clone(req.Stop), json: tj}
	if req.Temperature != nil {
		v := *req.Temperature
		e.temperature = &v
	}
	e.tools = make([]llm.ToolSchema, len(req.Tools))
	for i, t := range req.Tools {
		e.tools[i] = t.Clone()
	}
	c.mu.Lock()
	c.entries[c.next] = e
	c.next = (c.next + 1) % len(c.entries)
	c.mu.Unlock()
	return tj, nil
}
