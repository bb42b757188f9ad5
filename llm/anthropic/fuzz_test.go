package anthropic

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/conformance"
	"github.com/dshq/dsh/llm/sse"
)

// bodyTransport answers every request with a fixed 200 event-stream body.
type bodyTransport []byte

func (b bodyTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(b))}, nil
}

// FuzzDecode feeds arbitrary bodies through the whole adapter: it must
// never panic or hang, and whatever it streams must honour the contract.
func FuzzDecode(f *testing.F) {
	tr := conformance.Transcripts("anthropic")
	names, _ := fs.Glob(tr, "*.sse")
	for _, n := range names {
		b, _ := fs.ReadFile(tr, n)
		f.Add(b)
	}
	f.Add([]byte("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":-1,\"content_block\":{\"type\":\"tool_use\"}}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := New(Config{Provider: "fuzz", BaseURL: "http://fuzz.invalid", HTTPClient: &http.Client{Transport: bodyTransport(body)},
			Transport: sse.Options{MaxRetries: -1, IdleTimeout: time.Second, MaxEventSize: 1 << 16}})
		if err != nil {
			t.Fatal(err)
		}
		res := conformance.Collect(context.Background(), a, &llm.Request{Model: "fuzz/m"})
		if err := conformance.Validate(res.Chunks, res.Err); err != nil {
			t.Fatalf("contract: %v", err)
		}
		if res.Err != nil && !strings.HasPrefix(res.Err.Error(), "fuzz: ") {
			t.Fatalf("error does not name the provider: %v", res.Err)
		}
	})
}
