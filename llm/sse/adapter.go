package sse

import (
	"bytes"
	"context"
	"errors"
	"net/http"

	"github.com/dshq/dsh/llm"
)

// This file is the request and stream plumbing the model adapters share:
// the streaming POST of a JSON body, the yield-to-the-consumer half of a
// decoder, the first steps of decoding an event, and in-stream errors. Each
// adapter keeps only what its wire format makes different.

// Post is one streaming POST of an encoded JSON request.
type Post struct {
	URL  string
	Body []byte
	// Auth is the credential header ("Authorization" with "Bearer KEY",
	// "X-Api-Key" with the key); an empty value sends none.
	AuthHeader, AuthValue string
	// Headers are set after the defaults, so they may override them.
	Headers map[string]string
	// UserAgent replaces the default "dsh".
	UserAgent string
}

// request builds the attempt's HTTP request: JSON in, an event stream out.
func (p *Post) request(ctx context.Context) (*http.Request, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(p.Body))
	if err != nil {
		return nil, err
	}
	h := r.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	ua := p.UserAgent
	if ua == "" {
		ua = "dsh"
	}
	h.Set("User-Agent", ua)
	if p.AuthValue != "" {
		h.Set(p.AuthHeader, p.AuthValue)
	}
	for k, v := range p.Headers {
		h.Set(k, v)
	}
	return r, nil
}

// Prepare is the part of a call that needs no I/O: a key that should come
// from environment variable keyEnv but is empty fails with CodeAuth naming
// it, and encode's failure is a bad request (unless it is an llm.Error
// already, such as an unusable tool schema).
func (c *Client) Prepare(key, keyEnv string, encode func() ([]byte, error)) ([]byte, error) {
	if key == "" && keyEnv != "" {
		return nil, c.Errorf(llm.CodeAuth, "no API key: set %s", keyEnv)
	}
	body, err := encode()
	if err != nil {
		if _, ok := llm.AsError(err); ok {
			return nil, err
		}
		return nil, c.Errorf(llm.CodeBadRequest, "encoding the request: %v", err)
	}
	return body, nil
}

// Stream sends p and returns the chunks of the response: newDecoder makes
// the decoder for one call, given the Emitter it embeds to reach the
// consumer. A consumer that stops iterating ends the request quietly; any
// other failure is the stream's last element.
func (c *Client) Stream(ctx context.Context, p Post, newDecoder func(Emitter) Decoder) llm.Stream {
	return func(yield func(llm.Chunk, error) bool) {
		err := c.Do(ctx, p.request, newDecoder(Emitter{yield: yield}))
		if err == nil || errors.Is(err, ErrStopped) {
			return
		}
		yield(llm.Chunk{}, err)
	}
}

// ErrStopped is what Emitter.Emit returns when the consumer stopped
// iterating; decoders return it unchanged, and Stream ends quietly.
var ErrStopped = errors.New("sse: consumer stopped")

// Emitter is the half of a [Decoder] that hands chunks to the consumer and
// remembers whether any went out (after which a failed attempt is not
// retried). Adapters embed it in their decoders.
type Emitter struct {
	yield   func(llm.Chunk, error) bool
	emitted bool
}

// Emit yields c to the consumer, or returns ErrStopped when it stopped.
func (e *Emitter) Emit(c llm.Chunk) error {
	e.emitted = true
	if !e.yield(c, nil) {
		return ErrStopped
	}
	return nil
}

// Emitted implements part of [Decoder].
func (e *Emitter) Emitted() bool { return e.emitted }

// ResetEmitted starts a new attempt; a decoder's Reset calls it.
func (e *Emitter) ResetEmitted() { e.emitted = false }

// EventData returns an event's data for parse, which decodes it into the
// adapter's wire struct: skip is true for an event without data. A parse
// error is a protocol error quoting the data, unless the stream was cut off
// inside the event, which is worth a retry.
func (c *Client) EventData(ev *Event, parse func([]byte) error) (skip bool, err error) {
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 {
		return true, nil
	}
	if err := parse(data); err != nil {
		if ev.Partial {
			return false, Retryable(c.Errorf(llm.CodeStreamClosed, "stream cut off in the middle of an event"), 0)
		}
		return false, c.Errorf(llm.CodeProtocol, "malformed JSON in stream event (%v): %s", err, clip(data))
	}
	return false, nil
}

// ErrorEvent is an error object inside a stream: {"type", "message",
// "code"} (a numeric code is kept as its text), or a bare message string.
type ErrorEvent struct {
	Type, Message, Code string
}

// ParseErrorEvent reads an ErrorEvent from s.
func ParseErrorEvent(s *JSONScanner, e *ErrorEvent) error {
	if s.Peek() == '"' {
		var err error
		e.Message, err = s.String()
		return err
	}
	return s.Object(func(key []byte) (err error) {
		switch string(key) {
		case "message":
			e.Message, err = s.OptString()
		case "type":
			e.Type, err = s.OptString()
		case "code":
			switch s.Peek() {
			case '"', 'n':
				e.Code, err = s.OptString()
			default:
				var raw []byte
				raw, err = s.Raw()
				e.Code = string(raw)
			}
		default:
			err = s.Skip()
		}
		return err
	})
}

// StreamError is the error for an error event inside a stream: classified
// from the provider's type, code and message, and worth a retry when the
// provider is overloaded or rate limiting (and nothing was streamed yet).
func (c *Client) StreamError(e ErrorEvent) error {
	message := e.Message
	class := ClassifyError(e.Type, e.Code, message)
	detail := e.Type
	if detail == "" {
		detail = e.Code
	}
	if detail == "" {
		detail = "-"
	}
	if message == "" {
		message = "(no message)"
	}
	err := c.Errorf(class, "error in stream (%s): %s", detail, message)
	if class == llm.CodeServer || class == llm.CodeRateLimit {
		return Retryable(err, 0)
	}
	return err
}

// clip shortens quoted data to what an error message can carry.
func clip(b []byte) string {
	if len(b) > 240 {
		return string(b[:240]) + "…"
	}
	return string(b)
}
