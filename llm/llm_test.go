package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dshq/dsh/llm"
)

func push(t *testing.T, a *llm.Assembler, cs ...llm.Chunk) {
	t.Helper()
	for _, c := range cs {
		if _, _, err := a.Push(c); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAssemblerRules(t *testing.T) {
	var a llm.Assembler
	push(t, &a,
		llm.StartChunk(0, llm.BlockReasoning),
		llm.ReasoningChunk(0, "think"),
		llm.TextChunk(1, "hel"), // implicit block
		llm.StartChunk(0, llm.BlockReasoning),
		llm.ReasoningChunk(0, "ing"),
		llm.TextChunk(1, "lo"),
		llm.EndChunk(0, llm.Reasoning("AUTHORITATIVE")),
		llm.ReasoningChunk(0, "ignored after close"),
		llm.ToolDeltaChunk(2, "c1", "echo", `{"a"`),
		llm.ToolDeltaChunk(2, "c1", "", `:1}`),
		llm.UsageChunk(llm.Usage{InputTokens: 1}),
		llm.UsageChunk(llm.Usage{InputTokens: 2}),
	)
	blocks, err := a.Blocks()
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 3 || blocks[0].Text != "AUTHORITATIVE" || blocks[1].Text != "hello" ||
		blocks[2].ID != "c1" || blocks[2].Name != "echo" || blocks[2].Arguments != `{"a":1}` {
		t.Fatalf("blocks %+v", blocks)
	}
	if a.Usage().InputTokens != 2 || a.Finish().Kind != llm.FinishStop || a.Finished() {
		t.Fatal("usage last-wins and finish defaults to stop")
	}
	// first close wins
	b, ok, _ := a.Push(llm.EndChunk(0, llm.Reasoning("second")))
	if ok || b.Text != "" {
		t.Fatal("a second block-end must be ignored")
	}
	// an unnamed open tool call gets a synthetic id
	var c llm.Assembler
	push(t, &c, llm.StartChunk(4, llm.BlockToolCall))
	bs, _ := c.Blocks()
	if bs[0].ID != "call-4" {
		t.Fatalf("%+v", bs)
	}
	// an incomplete image block cannot be assembled
	var d llm.Assembler
	push(t, &d, llm.StartChunk(0, llm.BlockImage))
	if _, err := d.Blocks(); err == nil {
		t.Fatal("want an error for an incomplete image")
	}
	if _, _, err := d.Push(llm.Chunk{Type: "bogus"}); err == nil {
		t.Fatal("unknown chunk types are an error")
	}
}

func TestBlockJSONRoundTrip(t *testing.T) {
	in := []llm.Block{
		llm.Text(""), llm.Reasoning("r"), {Type: llm.BlockReasoning, Text: "s", Signature: "sig"},
		llm.ToolCall("c", "n", `{"x":1}`),
		{Type: llm.BlockToolResult, ToolCallID: "c", Content: []llm.Block{llm.Text("out")}, IsError: true},
		{Type: llm.BlockImage, URL: "data:image/png;base64,AA", MimeType: "image/png"},
		{Type: "plugin-thing", Raw: json.RawMessage(`{"type":"plugin-thing","payload":[1,2]}`)},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `{"type":"text","text":""}`) || !strings.Contains(string(b), `"payload":[1,2]`) {
		t.Fatalf("%s", b)
	}
	var out []llm.Block
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(out)
	if string(b) != string(b2) {
		t.Fatalf("round trip changed:\n%s\n%s", b, b2)
	}
	if err := json.Unmarshal([]byte(`[{"text":"no type"}]`), &out); err == nil {
		t.Fatal("a block without a type must be rejected")
	}
}

// The reflection-free chunk encoder writes exactly what encoding/json would.
func FuzzChunkJSON(f *testing.F) {
	for _, s := range []string{"plain", "quote\" back\\ slash", "nl\n\t\r", "<html>&", "\x00\x1f", "ünïcödé ✓", "\u2028\u2029", string([]byte{0xff, 0xfe, 'a'})} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, idx int) {
		for _, c := range []llm.Chunk{llm.TextChunk(idx, s), llm.ReasoningChunk(idx, s), llm.ToolDeltaChunk(idx, llm.CallID(s), s, s), llm.StartChunk(idx, llm.BlockType(s)),
			llm.UsageChunk(llm.Usage{InputTokens: idx, OutputTokens: len(s), CacheReadTokens: idx % 3, ReasoningTokens: idx % 2}),
			llm.FinishChunk(s), llm.ErrorFinish(s, s), llm.EndChunk(idx, llm.Text(s)), llm.EndChunk(idx, llm.ToolCall(llm.CallID(s), s, s)),
			llm.EndChunk(idx, llm.Block{Type: llm.BlockReasoning, Text: s, Signature: s, Redacted: s}), llm.EndChunk(idx, llm.Block{Type: llm.BlockText, Text: s, Cache: s})} {
			fast := c.AppendJSON(nil)
			slow, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			if string(fast) != string(slow) {
				t.Fatalf("chunk %+v\nfast %s\nslow %s", c, fast, slow)
			}
		}
	})
}

func TestServiceRegistry(t *testing.T) {
	svc := llm.NewService()
	var seen string
	a := llm.AdapterFunc(func(_ context.Context, r *llm.Request) (llm.Stream, error) {
		seen = r.Model
		return func(func(llm.Chunk, error) bool) {}, nil
	})
	dispose, err := svc.RegisterModels([]string{"p/m1", "p/m2"}, a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RegisterModels([]string{"q/x", "p/m2"}, a); llm.CodeOf(err) != llm.CodeDuplicateAdapter {
		t.Fatalf("duplicate: %v", err)
	}
	if _, _, ok := svc.Resolve("q/x"); ok {
		t.Fatal("a failed registration must register nothing")
	}
	undo := svc.Alias("fast", "p/m1")
	if _, err := svc.Stream(context.Background(), &llm.Request{Model: "fast"}); err != nil || seen != "p/m1" {
		t.Fatalf("alias: %v %q", err, seen)
	}
	if _, err := svc.Stream(context.Background(), &llm.Request{Model: "m2"}); err != nil || seen != "p/m2" {
		t.Fatalf("bare name: %v %q", err, seen)
	}
	undo()
	if _, _, ok := svc.Resolve("fast"); ok {
		t.Fatal("alias not removed")
	}
	dispose()
	if _, err := svc.Stream(context.Background(), &llm.Request{Model: "p/m1"}); llm.CodeOf(err) != llm.CodeNoAdapter {
		t.Fatalf("after dispose: %v", err)
	}
	if len(svc.Models()) != 0 {
		t.Fatal("models remain")
	}
}

// The no-HTML variant writes what an encoding/json Encoder with
// SetEscapeHTML(false) writes.
func FuzzJSONStringNoHTML(f *testing.F) {
	for _, s := range []string{"<a href='x'>&amp;</a>", "\x00\b\f\n", "\u2028 ✓", string([]byte{0xff})} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSuffix(b.String(), "\n")
		if got := string(llm.AppendJSONStringNoHTML(nil, s)); got != want {
			t.Fatalf("got %s want %s", got, want)
		}
	})
}
