package serve

import (
	"context"
	"sync"
	"time"

	"github.com/dshq/dsh/internal/redact"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/tool"
)

// Live tool output: what a running command prints is tool.Progress, which
// is never recorded (the call's result is what counts), so the log-backed
// stream cannot carry it. Each entry keeps a small ring of recent output
// instead, and every stream forwards what arrives after it opened: SSE as
// "progress" events (no id: they are not part of the log and a reconnect
// does not replay them), a WebSocket as {"progress": ...} messages beside
// the log's events. Both come from forwardProgress, so they carry the same. The ring bounds memory per session, a throttle
// bounds the events per stream, and the session host's secrets are
// removed from it as they are from the log (credential shapes too).

const (
	// liveOutputBytes bounds the output a session keeps for its streams:
	// a stream that falls further behind loses the oldest (it is a live
	// tail; the full output arrives with the call's result).
	liveOutputBytes = 64 << 10
	// progressEvery is the most often a stream sends progress events.
	progressEvery = 100 * time.Millisecond
)

type outChunk struct {
	seq  uint64
	call string
	text []byte
}

// liveOutput is one session's recent tool output.
type liveOutput struct {
	mu      sync.Mutex
	seq     uint64
	chunks  []outChunk
	bytes   int
	changed chan struct{}
}

func (l *liveOutput) add(call string, out []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(out) > liveOutputBytes {
		out = out[len(out)-liveOutputBytes:]
	}
	l.seq++
	l.chunks = append(l.chunks, outChunk{seq: l.seq, call: call, text: append([]byte(nil), out...)})
	l.bytes += len(out)
	for l.bytes > liveOutputBytes && len(l.chunks) > 1 {
		l.bytes -= len(l.chunks[0].text)
		l.chunks[0] = outChunk{}
		l.chunks = l.chunks[1:]
	}
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// since returns the chunks after seq, the newest seq, and a channel
// closed when more arrives.
func (l *liveOutput) since(seq uint64) ([]outChunk, uint64, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	var out []outChunk
	for _, c := range l.chunks {
		if c.seq > seq {
			out = append(out, c)
		}
	}
	return out, l.seq, l.changed
}

// installProgress routes a workspace's tool progress to its sessions'
// entries.
func (s *Server) installProgress(w *wsEntry) error {
	h := w.app.Host
	return h.Scope.Add(h.Tools.Progress.Listen(func(_ context.Context, p tool.Progress) error {
		if p.Call.Host == nil {
			return nil
		}
		if e := s.lookup(p.Call.Host.SessionID()); e != nil {
			e.output.add(string(p.Call.ID), p.Output)
		}
		return nil
	}, kernel.Named("serve.progress")))
}

// forwardProgress sends e's tool output as it arrives, coalesced per call
// and at most once per progressEvery, scrubbed, until ctx ends or send
// fails. Every stream (SSE, WebSocket) gets its progress here, each
// framing it its own way.
func (s *Server) forwardProgress(ctx context.Context, e *entry, send func(api.Progress) error) {
	_, last, changed := e.output.since(^uint64(0))
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		t.Reset(progressEvery)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var chunks []outChunk
		chunks, last, changed = e.output.since(last)
		secrets := e.secrets()
		var order []string
		by := map[string][]byte{}
		for _, c := range chunks {
			if _, ok := by[c.call]; !ok {
				order = append(order, c.call)
			}
			by[c.call] = append(by[c.call], c.text...)
		}
		for _, call := range order {
			if send(api.Progress{Call: call, Output: secrets.String(string(by[call]))}) != nil {
				return
			}
		}
	}
}

// secrets are what the session's host knows to be secret — the
// environment's credentials, the settings' (the "env" setting, the database
// URL), its MCP servers' — the same set its log is scrubbed with, so live
// output hides what the recorded result will. Nil before the session is
// loaded (no call of it runs then): credential shapes are still removed.
func (e *entry) secrets() *redact.Set {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ws == nil || e.ws.app == nil {
		return nil
	}
	return e.ws.app.Host.Secrets
}
