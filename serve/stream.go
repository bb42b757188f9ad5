package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
)

// follow calls fn with every event of e's log from seq from on, until ctx
// ends or fn fails. While the session is live in this process events come
// from memory as they are appended (streamed chunks included, before the
// step commits); otherwise from the store as they commit, in this process
// or in any other worker sharing it (PostgreSQL rings a bell at every
// commit). It switches between the two as the session is loaded and
// evicted, and never skips or repeats a seq. The log is the only buffer: a
// slow consumer reads it at its own pace and never holds up the agent.
//
// caughtUp, if not nil, is called whenever fn has had every event there is
// for now (before follow waits for more): a stream that buffers what fn
// writes sends it then, one write for all the events a step appended while
// the stream waited for a CPU instead of one per event.
func (s *Server) follow(ctx context.Context, e *entry, from int64, fn func(session.Event) error, caughtUp func() error) error {
	next := from
	emit := func(ev session.Event) error {
		if ev.Seq < next {
			return nil
		}
		if err := fn(ev); err != nil {
			return err
		}
		next = ev.Seq + 1
		return nil
	}
	if caughtUp == nil {
		caughtUp = func() error { return nil }
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		sess, changed := e.watch()
		if sess != nil {
			if err := followMemory(ctx, sess, &next, changed, emit, caughtUp); err != nil {
				return err
			}
			continue
		}
		fctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-changed:
				cancel()
			case <-fctx.Done():
			}
		}()
		// The store's follower does not say when it has caught up: each
		// event is sent as it comes.
		err := s.o.Catalog.Follow(fctx, e.id, next, func(ev session.Event) error {
			if err := emit(ev); err != nil {
				return err
			}
			return caughtUp()
		}, store.FollowOptions{})
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			if errors.Is(err, store.ErrNotFound) {
				// Not stored yet (created, nothing flushed): wait for it to
				// go live or commit.
				select {
				case <-changed:
				case <-time.After(200 * time.Millisecond):
				case <-ctx.Done():
					return ctx.Err()
				}
				continue
			}
			return err
		}
	}
}

// followMemory follows a live session until gone is closed (its agent was
// disposed: every event is stored by then), calling caughtUp after each
// run of events it had.
func followMemory(ctx context.Context, sess *session.Session, next *int64, gone <-chan struct{}, emit func(session.Event) error, caughtUp func() error) error {
	for {
		if err := sess.Range(ctx, *next, int64(sess.Len()), emit); err != nil {
			return err
		}
		if err := caughtUp(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-sess.WhenLonger(int(*next)):
		case <-gone:
			if err := sess.Range(ctx, *next, int64(sess.Len()), emit); err != nil {
				return err
			}
			return caughtUp()
		}
	}
}

// startSeq is where a stream starts: after Last-Event-ID (a reconnecting
// EventSource sends it), else at ?from (default 0, the whole log).
func startSeq(r *http.Request) (int64, error) {
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(id), 10, 64)
		if err != nil || n < -1 {
			return 0, badRequest("Last-Event-ID %q is not a seq", id)
		}
		return n + 1, nil
	}
	if f := r.URL.Query().Get("from"); f != "" {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 0 {
			return 0, badRequest("from %q is not a seq", f)
		}
		return n, nil
	}
	return 0, nil
}

// streamSSE is GET /v1/sessions/{id}/stream: the log as Server-Sent
// Events, one event per log entry, its seq as the SSE id, resumable with
// Last-Event-ID, and a running tool's output as id-less "progress" events. A client that takes no data for StreamWriteTimeout is
// dropped (it resumes where it was).
func (s *Server) streamSSE(w http.ResponseWriter, r *http.Request, c *call) {
	ctx := r.Context()
	s.openStreams.Add(1)
	defer s.openStreams.Add(-1)
	e, err := s.find(ctx, c.tok, r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	from, err := startSeq(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	var mu sync.Mutex
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// put buffers b in the response (net/http's buffer goes to the socket
	// when full); flush sends what is buffered. Events are put as they are
	// framed and flushed once the follower has caught up: a step's events
	// that piled up while this goroutine waited for a CPU leave in one
	// write, not one write each (the writes were 6 % of dsh serve's CPU in
	// the 50-stream load test).
	put := func(b []byte) error {
		_ = rc.SetWriteDeadline(time.Now().Add(s.o.StreamWriteTimeout))
		if _, err := w.Write(b); err != nil {
			cancel()
			return err
		}
		return nil
	}
	flush := func() error {
		_ = rc.SetWriteDeadline(time.Now().Add(s.o.StreamWriteTimeout))
		if err := rc.Flush(); err != nil {
			cancel()
			return err
		}
		return nil
	}
	write := func(b []byte) error {
		mu.Lock()
		defer mu.Unlock()
		if err := put(b); err != nil {
			return err
		}
		return flush()
	}
	if err := write([]byte(": dsh session " + string(e.id) + "\n\n")); err != nil {
		return
	}
	buf := make([]byte, 0, 512)
	beside(ctx, func(ctx context.Context) {
		_ = s.follow(ctx, e, from, func(ev session.Event) error {
			// Framed in place, without reflection: encoding/json spent more
			// on validating each event's RawMessage than on everything else
			// the stream does per chunk.
			buf = append(buf[:0], "id: "...)
			buf = strconv.AppendInt(buf, ev.Seq, 10)
			buf = append(buf, "\ndata: "...)
			var err error
			if buf, err = ev.AppendJSON(buf); err != nil {
				return err
			}
			buf = append(buf, "\n\n"...)
			mu.Lock()
			defer mu.Unlock()
			return put(buf)
		}, func() error {
			mu.Lock()
			defer mu.Unlock()
			return flush()
		})
	}, func(ctx context.Context) { s.heartbeat(ctx, func() error { return write([]byte(": ping\n\n")) }) },
		func(ctx context.Context) {
			s.forwardProgress(ctx, e, func(p api.Progress) error {
				b, err := json.Marshal(p)
				if err != nil {
					return err
				}
				msg := append([]byte("event: progress\ndata: "), b...)
				return write(append(msg, "\n\n"...))
			})
		})
}

// beside runs a stream's main loop with its helpers (heartbeats, progress)
// in goroutines of their own, and returns only once every helper is done:
// a handler that returned while a helper still wrote would write to a
// ResponseWriter (or a WebSocket) net/http has already reused.
func beside(ctx context.Context, main func(context.Context), helpers ...func(context.Context)) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, h := range helpers {
		wg.Go(func() { h(ctx) })
	}
	defer func() {
		cancel()
		wg.Wait()
	}()
	main(ctx)
}

func (s *Server) heartbeat(ctx context.Context, ping func() error) {
	t := time.NewTicker(s.o.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if ping() != nil {
				return
			}
		}
	}
}

// streamWS is GET /v1/sessions/{id}/ws: the same stream over a WebSocket,
// one text message per event (the event's JSON), from ?from (or after
// Last-Event-ID), and a running tool's output as {"progress": ...}
// messages between them, as the SSE stream's "progress" events.
func (s *Server) streamWS(w http.ResponseWriter, r *http.Request, c *call) {
	s.openStreams.Add(1)
	defer s.openStreams.Add(-1)
	e, err := s.find(r.Context(), c.tok, r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	from, err := startSeq(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	var patterns []string
	for _, o := range s.o.CORSOrigins {
		if u, err := url.Parse(o); err == nil && u.Host != "" {
			patterns = append(patterns, u.Host)
		}
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: patterns})
	if err != nil {
		return // Accept has answered
	}
	defer conn.CloseNow()
	ctx := conn.CloseRead(r.Context())
	beside(ctx, func(ctx context.Context) {
		var b []byte
		err = s.follow(ctx, e, from, func(ev session.Event) error {
			var err error
			if b, err = ev.AppendJSON(b[:0]); err != nil {
				return err
			}
			wctx, cancel := context.WithTimeout(ctx, s.o.StreamWriteTimeout)
			defer cancel()
			return conn.Write(wctx, websocket.MessageText, b)
		}, nil)
	}, func(ctx context.Context) {
		s.heartbeat(ctx, func() error {
			pctx, cancel := context.WithTimeout(ctx, s.o.StreamWriteTimeout)
			defer cancel()
			return conn.Ping(pctx)
		})
	}, func(ctx context.Context) {
		s.forwardProgress(ctx, e, func(p api.Progress) error {
			b, err := json.Marshal(api.ProgressMessage{Progress: p})
			if err != nil {
				return err
			}
			wctx, cancel := context.WithTimeout(ctx, s.o.StreamWriteTimeout)
			defer cancel()
			return conn.Write(wctx, websocket.MessageText, b)
		})
	})
	if err != nil && ctx.Err() == nil {
		_ = conn.Close(websocket.StatusInternalError, trimReason(err.Error()))
		return
	}
	_ = conn.Close(websocket.StatusNormalClosure, "")
}

// trimReason fits a close reason into a control frame.
func trimReason(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}
