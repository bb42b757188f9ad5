package replay

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
)

// ErrExhausted is wrapped by the error of a call past the end of its
// session's script: the agent made more model calls than were recorded.
var ErrExhausted = errors.New("replay: script exhausted")

// ErrUnrecordedSession is wrapped by the error of a call from a session
// beyond the recorded ones: more sessions called the model than the
// fixture has scripts for.
var ErrUnrecordedSession = errors.New("replay: unrecorded session")

// Install answers every model call of svc from scripts until dispose is
// called. The listener never calls next: no adapter is resolved, so the
// request's model only has to be non-empty. Listeners registered before it
// (logging, request capture) still run around it.
//
// The scripts are bound to sessions in first-call order; see the package
// documentation. A call the recording cannot answer (its session's script
// is exhausted, or its session is one more than were recorded) fails with
// an error wrapping [ErrExhausted] or [ErrUnrecordedSession]: the agent has
// diverged from the recording, and the turn fails visibly. Do not modify
// the scripts' entries after Install.
func Install(svc *llm.Service, scripts ...Script) (dispose func()) {
	p := &player{scripts: scripts, bound: map[string]*cursor{}}
	return svc.StreamPoint.Use(p.stream, kernel.Named("replay"))
}

// player holds the binding of sessions to scripts and their cursors.
type player struct {
	mu      sync.Mutex
	scripts []Script
	bound   map[string]*cursor
}

// cursor is one session's position in its script.
type cursor struct {
	ordinal int     // 1-based, in first-call order
	script  *Script // nil when the session came after the last script
	calls   int     // calls made so far
}

func (p *player) stream(ctx context.Context, req *llm.Request, _ kernel.Next[*llm.Request, llm.Stream]) (llm.Stream, error) {
	e, err := p.next(req.SessionID)
	if err != nil {
		return nil, err
	}
	return play(ctx, e), nil
}

// next binds the session on its first call and advances its cursor. The
// cursor moves when the call arrives, not when its stream is consumed, so
// a stream that is abandoned still counts as the call it was.
func (p *player) next(sessionID string) (Entry, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.bound[sessionID]
	if !ok {
		c = &cursor{ordinal: len(p.bound) + 1}
		if c.ordinal <= len(p.scripts) {
			c.script = &p.scripts[c.ordinal-1]
		}
		p.bound[sessionID] = c
	}
	c.calls++
	if c.script == nil {
		return Entry{}, fmt.Errorf("replay: a model call arrived from an unrecorded session (#%d, %q); the fixture records %d session(s): %w",
			c.ordinal, sessionID, len(p.scripts), ErrUnrecordedSession)
	}
	if c.calls > len(c.script.Entries) {
		return Entry{}, fmt.Errorf("replay: script exhausted — session %q requested model call #%d but its script has only %d; the agent diverged from the recording: %w",
			sessionID, c.calls, len(c.script.Entries), ErrExhausted)
	}
	return c.script.Entries[c.calls-1], nil
}

// partial is what a hanging call streams before it blocks.
var partial = []llm.Chunk{llm.StartChunk(0, llm.BlockText), llm.TextChunk(0, "partial")}

// play streams one entry. Cancellation is checked before every chunk, as a
// provider's stream would notice a closed connection.
func play(ctx context.Context, e Entry) llm.Stream {
	return func(yield func(llm.Chunk, error) bool) {
		chunks := e.Chunks
		if e.Kind == KindHang {
			chunks = partial
		}
		for _, c := range chunks {
			if ctx.Err() != nil {
				yield(llm.Chunk{}, aborted(ctx))
				return
			}
			if !yield(c, nil) {
				return
			}
		}
		switch e.Kind {
		case KindThrow:
			yield(llm.Chunk{}, &llm.Error{Name: "LlmError", Code: e.Code, Message: e.Message, Status: e.Status})
		case KindHang:
			<-ctx.Done()
			yield(llm.Chunk{}, aborted(ctx))
		}
	}
}

func aborted(ctx context.Context) error {
	return &llm.Error{Name: "LlmError", Code: llm.CodeAborted, Message: "aborted", Cause: context.Cause(ctx)}
}
