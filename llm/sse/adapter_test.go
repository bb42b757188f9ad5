package sse

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dshq/dsh/llm"
)

// chunkDecoder emits one text chunk per event until "END".
type chunkDecoder struct {
	Emitter
	n int
}

func (d *chunkDecoder) Reset() { d.ResetEmitted(); d.n = 0 }
func (d *chunkDecoder) Event(ev *Event) (bool, error) {
	if string(ev.Data) == "END" {
		return true, nil
	}
	d.n++
	return false, d.Emit(llm.TextChunk(0, string(ev.Data)))
}

// Stream posts the JSON body with the shared headers (configured ones win,
// whatever their case), yields what the decoder emits, and ends quietly
// when the consumer stops.
func TestStreamPostsAndStopsQuietly(t *testing.T) {
	var got http.Header
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: a\n\ndata: b\n\ndata: c\n\ndata: END\n\n"))
	}))
	defer srv.Close()
	c := &Client{Provider: "p"}
	p := Post{URL: srv.URL, Body: []byte(`{"x":1}`), AuthHeader: "X-Api-Key", AuthValue: "k",
		Headers: map[string]string{"x-extra": "1", "Accept": "text/event-stream; q=1"}}
	var texts []string
	for ch, err := range c.Stream(context.Background(), p, func(e Emitter) Decoder { return &chunkDecoder{Emitter: e} }) {
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, ch.Text)
	}
	if strings.Join(texts, "") != "abc" || body != `{"x":1}` {
		t.Fatalf("texts %v body %q", texts, body)
	}
	if got.Get("Content-Type") != "application/json" || got.Get("User-Agent") != "dsh" || got.Get("X-Api-Key") != "k" ||
		got.Get("X-Extra") != "1" || got.Get("Accept") != "text/event-stream; q=1" {
		t.Fatalf("headers %v", got)
	}
	n := 0
	for _, err := range c.Stream(context.Background(), p, func(e Emitter) Decoder { return &chunkDecoder{Emitter: e} }) {
		if err != nil {
			t.Fatalf("a consumer that stopped got %v", err)
		}
		n++
		break
	}
	if n != 1 {
		t.Fatalf("%d chunks before the break", n)
	}
	p.AuthValue, p.UserAgent = "", "custom"
	for range c.Stream(context.Background(), p, func(e Emitter) Decoder { return &chunkDecoder{Emitter: e} }) {
	}
	if got.Get("X-Api-Key") != "" || got.Get("User-Agent") != "custom" {
		t.Fatalf("without a key: %v", got)
	}
}

// Prepare fails before any I/O; EventData skips empty events and tells a
// cut-off event (retryable) from malformed JSON; StreamError classifies.
func TestAdapterHelpers(t *testing.T) {
	c := &Client{Provider: "p"}
	if _, err := c.Prepare("", "P_KEY", nil); !isCode(err, llm.CodeAuth) || !strings.Contains(err.Error(), "P_KEY") {
		t.Fatalf("missing key: %v", err)
	}
	if _, err := c.Prepare("k", "P_KEY", func() ([]byte, error) { return nil, errors.New("boom") }); !isCode(err, llm.CodeBadRequest) {
		t.Fatalf("encoding failure: %v", err)
	}
	own := &llm.Error{Code: "OWN"}
	if _, err := c.Prepare("k", "", func() ([]byte, error) { return nil, own }); err != own {
		t.Fatalf("an llm.Error from encode must pass unchanged: %v", err)
	}
	fail := func([]byte) error { return errors.New("bad") }
	if skip, err := c.EventData(&Event{Data: []byte("  ")}, fail); !skip || err != nil {
		t.Fatalf("empty event: %v %v", skip, err)
	}
	_, err := c.EventData(&Event{Data: []byte(`{"a":`), Partial: true}, fail)
	var re *RetryableError
	if !errors.As(err, &re) || re.Err.Code != llm.CodeStreamClosed {
		t.Fatalf("cut-off event: %v", err)
	}
	if _, err := c.EventData(&Event{Data: []byte(`{"a":`)}, fail); !isCode(err, llm.CodeProtocol) || !strings.Contains(err.Error(), `{"a":`) {
		t.Fatalf("malformed event: %v", err)
	}
	if err := c.StreamError(ErrorEvent{Type: "overloaded_error", Message: "busy"}); !errors.As(err, &re) || !strings.Contains(err.Error(), "error in stream (overloaded_error): busy") {
		t.Fatalf("overloaded: %v", err)
	}
	if err := c.StreamError(ErrorEvent{}); !strings.Contains(err.Error(), "error in stream (-): (no message)") {
		t.Fatalf("bare error: %v", err)
	}
}

func isCode(err error, code string) bool {
	var le *llm.Error
	return errors.As(err, &le) && le.Code == code
}
