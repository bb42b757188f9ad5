package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/dshq/dsh/llm"
)

// benchChunks is the number of text deltas the benchmark streams per call.
const benchChunks = 10_000

func benchBody() []byte {
	var sb strings.Builder
	ev := func(delta, finish string) {
		fmt.Fprintf(&sb, `data: {"id":"chatcmpl-BxQ3mJ8Ef0a1Kz9TqR2dW7nLpYvUc","object":"chat.completion.chunk","created":1750000000,"model":"gpt-4.1-mini-2025-04-14","service_tier":"default","system_fingerprint":"fp_6f2eabb9a5","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}],"usage":null}`+"\n\n", delta, finish)
	}
	ev(`{"role":"assistant","content":"","refusal":null}`, "null")
	for i := 0; i < benchChunks; i++ {
		ev(fmt.Sprintf(`{"content":" tok%d"}`, i%100), "null")
	}
	ev(`{}`, `"stop"`)
	sb.WriteString(`data: {"id":"chatcmpl-x","object":"chat.completion.chunk","created":1750000000,"model":"gpt-4.1-mini","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":10000,"total_tokens":10019,"prompt_tokens_details":{"cached_tokens":0}}}` + "\n\ndata: [DONE]\n\n")
	return []byte(sb.String())
}

// BenchmarkStream streams 10,000 chunks per call from a loopback server
// through the adapter (HTTP, SSE parsing, JSON decoding, chunk emission)
// and folds them with llm.Assembler.
func BenchmarkStream(b *testing.B) {
	body := benchBody()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(body)
	}))
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	a, err := New(Config{Provider: "openai", BaseURL: srv.URL, APIKey: "k", HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		b.Fatal(err)
	}
	req := &llm.Request{Model: "openai/gpt-4.1-mini", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.Text("go")}}}}
	var ms0, ms1 runtime.MemStats
	chunks := 0
	b.ReportAllocs()
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	for b.Loop() {
		stream, err := a.Stream(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		var asm llm.Assembler
		for c, err := range stream {
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := asm.Push(c); err != nil {
				b.Fatal(err)
			}
			chunks++
		}
		if msg, _ := asm.Message(); len(llm.TextOf(msg.Content)) == 0 {
			b.Fatal("empty reply")
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(chunks)/b.Elapsed().Seconds(), "chunks/s")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(chunks), "allocs/chunk")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(chunks), "B/chunk")
}
