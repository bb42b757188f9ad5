package openai

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/conformance"
	"github.com/dshq/dsh/llm/sse"
)

// streamBlocks serves body from a loopback server and returns the blocks
// the adapter's stream assembles into, checking the stream contract.
func streamBlocks(t *testing.T, body string) ([]llm.Block, llm.FinishReason, error) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(body))
	}))
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	a := mustAdapter(t, Config{Provider: "openai", BaseURL: srv.URL, APIKey: "k",
		HTTPClient: &http.Client{Transport: tr}, Transport: sse.Options{MaxRetries: -1}})
	res := conformance.Collect(context.Background(), a, &llm.Request{Model: "openai/m",
		Messages: []llm.Message{user("go")}})
	if err := conformance.Validate(res.Chunks, res.Err); err != nil {
		t.Errorf("stream contract: %v", err)
	}
	if res.Err != nil {
		return nil, llm.FinishReason{}, res.Err
	}
	var asm llm.Assembler
	for _, c := range res.Chunks {
		if _, _, err := asm.Push(c); err != nil {
			t.Fatal(err)
		}
	}
	blocks, err := asm.Blocks()
	if err != nil {
		t.Fatal(err)
	}
	return blocks, asm.Finish(), nil
}

func sseBody(events ...string) string {
	var sb strings.Builder
	for _, e := range events {
		sb.WriteString("data: " + e + "\n\n")
	}
	return sb.String()
}

// TestToolCallsTellApartByID: servers that put every parallel call at
// index 0, or send no index, separate calls only by their ids. Each call
// must come out whole, not appended to the previous one.
func TestToolCallsTellApartByID(t *testing.T) {
	want := []llm.Block{llm.ToolCall("call_a", "read", `{"path":"a"}`), llm.ToolCall("call_b", "grep", `{"q":"b"}`)}
	for name, body := range map[string]string{
		"same index": sseBody(
			`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_b","type":"function","function":{"name":"grep","arguments":"{\"q\":\"b\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			`[DONE]`),
		"no index": sseBody(
			`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"id":"call_a","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_b","type":"function","function":{"name":"grep","arguments":"{\"q\":\"b\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			`[DONE]`),
		"same index, arguments split": sseBody(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read","arguments":"{\"path\":"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_b","type":"function","function":{"name":"grep","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\":"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_b","function":{"arguments":"\"b\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			`[DONE]`),
		"same index, id after name": sseBody(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a"}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"type":"function","function":{"name":"grep","arguments":"{\"q\":\"b\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_b"}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			`[DONE]`),
		"interleaved, late ids": sseBody(
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"type":"function","function":{"name":"read","arguments":"{\"path\":"}},{"index":1,"type":"function","function":{"name":"grep","arguments":"{\"q\":"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"arguments":"\"b\""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","function":{"arguments":"\"a\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"arguments":"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			`[DONE]`),
	} {
		t.Run(name, func(t *testing.T) {
			blocks, finish, err := streamBlocks(t, body)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(blocks)
			w, _ := json.Marshal(want)
			if string(got) != string(w) {
				t.Errorf("blocks\n got %s\nwant %s", got, w)
			}
			if finish.Kind != llm.FinishToolCalls {
				t.Errorf("finish %+v", finish)
			}
		})
	}
}

// TestBaseURLWithQuery: an API root with a query string (Azure's
// ?api-version=…) gets the endpoint path joined to its path, the query kept.
func TestBaseURLWithQuery(t *testing.T) {
	text, _ := fs.ReadFile(conformance.Transcripts("openai"), "text.sse")
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Path+" ? "+r.URL.RawQuery)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(text)
	}))
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	for base, want := range map[string]string{
		"/openai/deployments/gpt4o?api-version=2024-10-21":  "/openai/deployments/gpt4o/chat/completions ? api-version=2024-10-21",
		"/openai/deployments/gpt4o/?api-version=2024-10-21": "/openai/deployments/gpt4o/chat/completions ? api-version=2024-10-21",
		"/v1/":         "/v1/chat/completions ? ",
		"?a=1&b=x%2Fy": "/chat/completions ? a=1&b=x%2Fy",
	} {
		got = nil
		a := mustAdapter(t, Config{Provider: "azure", BaseURL: srv.URL + base, APIKey: "k",
			HTTPClient: &http.Client{Transport: tr}, Transport: sse.Options{MaxRetries: -1}})
		res := conformance.Collect(context.Background(), a, &llm.Request{Model: "azure/gpt-4o", Messages: []llm.Message{user("hi")}})
		if res.Err != nil {
			t.Fatalf("%s: %v", base, res.Err)
		}
		mu.Lock()
		if len(got) != 1 || got[0] != want {
			t.Errorf("base %q: requests %q, want [%q]", base, got, want)
		}
		mu.Unlock()
	}
	if _, err := New(Config{Provider: "azure", BaseURL: srv.URL + "/v1#frag"}); err == nil || !strings.Contains(err.Error(), "fragment") {
		t.Errorf("fragment: %v", err)
	}
}
