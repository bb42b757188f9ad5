// Package wiretest generates random model histories and the ways an agent's
// history changes between requests, for the property tests that hold each
// provider's cached request encoding to a full re-encode, byte for byte.
package wiretest

import (
	"bytes"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/dshq/dsh/llm"
)

// texts are the strings blocks are made of: the blank ones encoders drop,
// characters JSON escapes (HTML ones included), invalid UTF-8, line
// separators, and ordinary words.
var texts = []string{"", " ", "\n\n", "hello", "Fix the bug in main.go", `say "hi"\n`, "<b>&amp;</b>",
	"a\u2028b", "bad \xff utf8", "héllo wörld", "\t tabbed", "line1\nline2", strings.Repeat("0123456789", 200)}

var args = []string{`{}`, `{"path":"a.go"}`, ` { "x" : [1, 2] } `, `{"h":"<&>"}`, `[1,2]`, `not json`, ``, `   `, `{"a":`}

func text(t *rapid.T, label string) string {
	return rapid.SampledFrom(texts).Draw(t, label)
}

func cache(t *rapid.T, label string) string {
	return rapid.SampledFrom([]string{"", "", llm.CacheEphemeral, llm.CacheEphemeral, "other"}).Draw(t, label)
}

func image(t *rapid.T) llm.Block {
	url := rapid.SampledFrom([]string{"data:image/png;base64,iVBOR", "data:;base64,AAAA", "data:image/gif,raw",
		"https://example.org/cat.jpg", ""}).Draw(t, "url")
	return llm.Block{Type: llm.BlockImage, URL: url, MimeType: rapid.SampledFrom([]string{"", "image/jpeg"}).Draw(t, "mime"), Cache: cache(t, "imgcache")}
}

// Block draws one block of any kind, for a message of role.
func Block(t *rapid.T, role llm.Role) llm.Block {
	kinds := []string{"text", "text", "image", "reasoning", "plugin"}
	switch role {
	case llm.RoleUser:
		kinds = append(kinds, "result", "result", "result")
	case llm.RoleAssistant:
		kinds = append(kinds, "call", "call", "reasoning")
	}
	switch rapid.SampledFrom(kinds).Draw(t, "kind") {
	case "text":
		return llm.Block{Type: llm.BlockText, Text: text(t, "text"), Cache: cache(t, "cache")}
	case "image":
		return image(t)
	case "reasoning":
		b := llm.Block{Type: llm.BlockReasoning, Text: text(t, "thought")}
		switch rapid.IntRange(0, 2).Draw(t, "signed") {
		case 1:
			b.Signature = "sig-" + text(t, "sig")
		case 2:
			b.Redacted = "opaque"
		}
		return b
	case "call":
		return llm.ToolCall(llm.CallID(rapid.SampledFrom([]string{"c1", "c2", "toolu_3", ""}).Draw(t, "id")),
			rapid.SampledFrom([]string{"read", "bash", "edit"}).Draw(t, "name"), rapid.SampledFrom(args).Draw(t, "args"))
	case "result":
		var content []llm.Block
		for range rapid.IntRange(0, 3).Draw(t, "parts") {
			if rapid.IntRange(0, 4).Draw(t, "img") == 0 {
				content = append(content, image(t))
			} else {
				content = append(content, llm.Block{Type: llm.BlockText, Text: text(t, "out"), Cache: cache(t, "outcache")})
			}
		}
		if content == nil && rapid.Bool().Draw(t, "nilContent") {
			content = []llm.Block{}
		}
		return llm.Block{Type: llm.BlockToolResult, ToolCallID: llm.CallID(rapid.SampledFrom([]string{"c1", "c2", "toolu_3"}).Draw(t, "for")),
			Content: content, IsError: rapid.Bool().Draw(t, "isError"), Cache: cache(t, "rescache")}
	}
	return llm.Block{Type: "x-plugin", Raw: []byte(`{"type":"x-plugin","v":1}`)}
}

// Message draws one history message.
func Message(t *rapid.T) llm.Message {
	role := rapid.SampledFrom([]llm.Role{llm.RoleUser, llm.RoleUser, llm.RoleAssistant, llm.RoleAssistant, llm.RoleSystem, "tool"}).Draw(t, "role")
	var content []llm.Block
	for range rapid.IntRange(0, 4).Draw(t, "blocks") {
		content = append(content, Block(t, role))
	}
	return llm.Message{Role: role, Content: content}
}

// History is a session's history as an agent changes it: it grows by
// appending, and between requests compaction prunes a result or summarizes
// a span, a rewritten tool call replaces a message, a message is cloned
// into new memory, and (breaking the read-only rule, which the cache must
// survive) a caller edits a message in place.
type History struct {
	Msgs []llm.Message
}

// Change applies one random change (appending most often).
func (h *History) Change(t *rapid.T) {
	n := len(h.Msgs)
	op := rapid.IntRange(0, 9).Draw(t, "op")
	if n == 0 {
		op = 0
	}
	switch op {
	case 0, 1, 2, 3:
		for range rapid.IntRange(1, 3).Draw(t, "appended") {
			h.Msgs = append(h.Msgs, Message(t))
		}
	case 4: // prune: one message replaced by another
		i := rapid.IntRange(0, n-1).Draw(t, "pruned")
		h.Msgs = replace(h.Msgs, i, i, Message(t))
	case 5: // summary: a span replaced by one message
		i := rapid.IntRange(0, n-1).Draw(t, "from")
		j := rapid.IntRange(i, n-1).Draw(t, "to")
		h.Msgs = replace(h.Msgs, i, j, llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.Text("summary " + text(t, "summary"))}})
	case 6: // the same message in new memory
		i := rapid.IntRange(0, n-1).Draw(t, "cloned")
		h.Msgs = replace(h.Msgs, i, i, h.Msgs[i].Clone())
	case 7: // edited in place
		i := rapid.IntRange(0, n-1).Draw(t, "edited")
		if m := h.Msgs[i]; len(m.Content) > 0 {
			k := rapid.IntRange(0, len(m.Content)-1).Draw(t, "block")
			m.Content[k].Text += "!"
			m.Content[k].Arguments = rapid.SampledFrom(args).Draw(t, "newargs")
			if len(m.Content[k].Content) > 0 {
				m.Content[k].Content[0].Text += "?"
			}
		}
	case 8: // a rewritten tool call: a copy with other arguments
		i := rapid.IntRange(0, n-1).Draw(t, "rewritten")
		m := h.Msgs[i]
		content := append([]llm.Block(nil), m.Content...)
		for k := range content {
			if content[k].Type == llm.BlockToolCall {
				content[k].Arguments = rapid.SampledFrom(args).Draw(t, "rewrite")
			}
		}
		h.Msgs = replace(h.Msgs, i, i, llm.Message{Role: m.Role, Content: content})
	case 9: // dropped from the tail (a rewind)
		h.Msgs = h.Msgs[:rapid.IntRange(0, n-1).Draw(t, "kept")]
	}
}

func replace(msgs []llm.Message, i, j int, m llm.Message) []llm.Message {
	out := make([]llm.Message, 0, len(msgs)-(j-i))
	out = append(out, msgs[:i]...)
	out = append(out, m)
	return append(out, msgs[j+1:]...)
}

// Request draws the rest of a request around msgs.
func Request(t *rapid.T, session string, msgs []llm.Message) *llm.Request {
	req := &llm.Request{Model: rapid.SampledFrom([]string{"p/model-a", "model-b"}).Draw(t, "model"), Messages: msgs, SessionID: session,
		System:    rapid.SampledFrom([]string{"", " ", "You are terse.", "<rules>&</rules>"}).Draw(t, "system"),
		MaxTokens: rapid.SampledFrom([]int{0, 0, 100, 64000}).Draw(t, "maxTokens")}
	if rapid.Bool().Draw(t, "temp") {
		v := 0.5
		req.Temperature = &v
	}
	if rapid.Bool().Draw(t, "stop") {
		req.Stop = []string{"\n\nHuman:"}
	}
	for range rapid.IntRange(0, 2).Draw(t, "tools") {
		req.Tools = append(req.Tools, llm.ToolSchema{Name: rapid.SampledFrom([]string{"read", "bash"}).Draw(t, "tool"),
			Description: text(t, "desc"), Parameters: []byte(rapid.SampledFrom([]string{"", "null", ` {"type":"object"} `}).Draw(t, "params"))})
	}
	req.ToolChoice = rapid.SampledFrom([]string{"", "", "auto", "none", "required", "read"}).Draw(t, "choice")
	return req
}

// Steps returns an agent's history of n tool steps after one prompt: each
// an assistant message with text and a tool call, then its result of
// output bytes of text.
func Steps(n, output int) []llm.Message {
	out := []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.Text("Refactor the parser and run the tests.")}}}
	for i := range n {
		out = append(out, Step(i, output)...)
	}
	return out
}

// Step is one tool step of Steps.
func Step(i, output int) []llm.Message {
	id := llm.CallID("call_" + strings.Repeat("x", 4) + string(rune('a'+i%26)))
	body := strings.Repeat("line of tool output with \"quotes\" and <tags>\n", output/45+1)[:output]
	return []llm.Message{
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("Reading the next file."), llm.ToolCall(id, "read", `{"path":"src/parser.go","offset":120}`)}},
		{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockToolResult, ToolCallID: id, Content: []llm.Block{llm.Text(body)}}}},
	}
}

// Encoder builds a request body.
type Encoder func(*llm.Request) ([]byte, error)

// Bodies runs random requests of two interleaved sessions whose histories
// change as an agent's do, and fails when the cached encoder's body differs
// from the whole one's by a byte (or only one of them fails). decorate, if
// not nil, adds what only one provider supports to each request.
func Bodies(t *rapid.T, cached, whole Encoder, decorate func(*rapid.T, *llm.Request)) {
	sessions := []*History{{}, {}}
	var prev *llm.Request
	for range rapid.IntRange(1, 16).Draw(t, "requests") {
		s := rapid.IntRange(0, 1).Draw(t, "session")
		h := sessions[s]
		h.Change(t)
		req := Request(t, []string{"s1", "s2"}[s], h.Msgs)
		// An agent sends the same options and tool list at every step, so
		// encoders may keep their encoding: they are reused as they were,
		// or with a tool edited in place (which such a cache must notice),
		// or drawn afresh.
		if prev != nil && len(prev.Tools) > 0 {
			tools := prev.Tools
			switch rapid.IntRange(0, 3).Draw(t, "toolsReused") {
			case 1:
				req.Tools, req.Temperature, req.MaxTokens, req.Stop, req.ToolChoice = tools, prev.Temperature, prev.MaxTokens, prev.Stop, prev.ToolChoice
			case 2:
				k := rapid.IntRange(0, len(tools)-1).Draw(t, "toolEdited")
				switch rapid.IntRange(0, 3).Draw(t, "toolEdit") {
				case 0:
					tools[k].Description += "!"
				case 1:
					tools[k].Name += "x"
				case 2:
					strict := rapid.Bool().Draw(t, "strict")
					tools[k].Strict = &strict
				case 3:
					p := tools[k].Parameters
					if i := bytes.IndexByte(p, 'o'); i >= 0 {
						p[i] = 'O' // "object" becomes "Object", in the same memory
					} else {
						tools[k].Parameters = []byte(`{"type":"string"}`)
					}
				}
				req.Tools, req.Temperature, req.MaxTokens, req.Stop, req.ToolChoice = tools, prev.Temperature, prev.MaxTokens, prev.Stop, prev.ToolChoice
			}
		}
		prev = req
		if decorate != nil {
			decorate(t, req)
		}
		want, werr := whole(req)
		got, gerr := cached(req)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("errors differ: whole %v, cached %v", werr, gerr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("cached body differs from a whole re-encode\n got: %s\nwant: %s", got, want)
		}
	}
}

// Bench measures building the request of the next step of a session whose
// history holds depth tool steps of 1 KB outputs, for each depth and each
// encoder newEncoders returns (fresh per sub-benchmark, so caches start
// empty): each op first drops the oldest step and adds a new one, as a
// pruning agent's history moves, so the depth stays constant.
func Bench(b *testing.B, model string, newEncoders func() map[string]Encoder) {
	for _, depth := range []int{10, 200, 2000} {
		for _, mode := range []string{"whole", "cached"} {
			b.Run(fmt.Sprintf("depth=%d/%s", depth, mode), func(b *testing.B) {
				build := newEncoders()[mode]
				base := Steps(depth, 1024)
				req := &llm.Request{Model: model, System: "You are a coding agent.", SessionID: "s", Messages: base,
					Tools: []llm.ToolSchema{{Name: "read", Description: "Read a file", Parameters: []byte(`{"type":"object"}`)}}}
				if _, err := build(req); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu := cpuTime()
				for i := 0; b.Loop(); i++ {
					b.StopTimer()
					base = append(append([]llm.Message{base[0]}, base[3:]...), Step(depth+i, 1024)...)
					req.Messages = base
					b.StartTimer()
					if _, err := build(req); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// cpuTime is the process's user+system CPU time: per op beside wall time,
// it stays meaningful on a machine busy with other work.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
