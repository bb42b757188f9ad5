package anthropic

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

const benchChunks = 10_000

func benchBody() []byte {
	var sb strings.Builder
	sb.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01XFDUDYJgAACzvnptvVoYEL\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5-20250929\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1}}}\n\n")
	sb.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := 0; i < benchChunks; i++ {
		fmt.Fprintf(&sb, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" tok%d\"}}\n\n", i%100)
	}
	sb.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	sb.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":10000}}\n\n")
	sb.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return []byte(sb.String())
}

// BenchmarkStream streams 10,000 text deltas per call from a loopback
// server through the adapter and llm.Assembler.
func BenchmarkStream(b *testing.B) {
	body := benchBody()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(body)
	}))
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	a, err := New(Config{Provider: "anthropic", BaseURL: srv.URL, APIKey: "k", HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		b.Fatal(err)
	}
	req := &llm.Request{Model: "anthropic/claude-sonnet-4-5", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.Text("go")}}}}
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
