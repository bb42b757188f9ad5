// Package client is a Go client of dsh serve's HTTP API (package
// serve/api has the types): sessions, messages, approvals, runs, and a
// session's live event stream, resumed where it broke off.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dshq/dsh/serve/api"
	"github.com/dshq/dsh/session"
)

// Client talks to one server with one token.
type Client struct {
	// Base is the server's URL ("http://127.0.0.1:7878").
	Base  string
	Token string
	// HTTP is the client used for every request (nil: a default one).
	HTTP *http.Client
}

// New returns a client of the server at base.
func New(base, token string) *Client {
	return &Client{Base: strings.TrimRight(base, "/"), Token: token}
}

// Error is an error answer of the server.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("dsh serve: %d %s: %s", e.Status, e.Code, e.Message)
}

// StatusOf returns the HTTP status of an [*Error] (0 for other errors).
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

func (c *Client) request(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	return req, nil
}

// Do sends a request and decodes a JSON answer into out (nil: discard).
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	req, err := c.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return readError(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func readError(resp *http.Response) error {
	e := &Error{Status: resp.StatusCode}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body api.Error
	if json.Unmarshal(b, &body) != nil || body.Code == "" {
		body = api.Error{Code: "http", Error: strings.TrimSpace(string(b))}
	}
	e.Code, e.Message = body.Code, body.Error
	return e
}

func esc(id session.ID) string { return url.PathEscape(string(id)) }

// Health is GET /healthz.
func (c *Client) Health(ctx context.Context) (api.Health, error) {
	var out api.Health
	return out, c.Do(ctx, "GET", "/healthz", nil, &out)
}

// Whoami describes the client's token.
func (c *Client) Whoami(ctx context.Context) (api.Whoami, error) {
	var out api.Whoami
	return out, c.Do(ctx, "GET", "/v1/whoami", nil, &out)
}

// Workspaces lists where the token may create sessions.
func (c *Client) Workspaces(ctx context.Context) (api.Workspaces, error) {
	var out api.Workspaces
	return out, c.Do(ctx, "GET", "/v1/workspaces", nil, &out)
}

// CreateSession starts a session.
func (c *Client) CreateSession(ctx context.Context, req api.CreateSession) (api.Session, error) {
	var out api.Session
	return out, c.Do(ctx, "POST", "/v1/sessions", req, &out)
}

// ListSessions lists sessions; query is added to the URL (workspace,
// status, limit).
func (c *Client) ListSessions(ctx context.Context, query url.Values) ([]api.Session, error) {
	var out api.SessionList
	p := "/v1/sessions"
	if len(query) > 0 {
		p += "?" + query.Encode()
	}
	return out.Sessions, c.Do(ctx, "GET", p, nil, &out)
}

// Session gets one session.
func (c *Client) Session(ctx context.Context, id session.ID) (api.Session, error) {
	var out api.Session
	return out, c.Do(ctx, "GET", "/v1/sessions/"+esc(id), nil, &out)
}

// DeleteSession deletes a session.
func (c *Client) DeleteSession(ctx context.Context, id session.ID) error {
	return c.Do(ctx, "DELETE", "/v1/sessions/"+esc(id), nil, nil)
}

// Send queues a message.
func (c *Client) Send(ctx context.Context, id session.ID, text string) (api.Accepted, error) {
	var out api.Accepted
	return out, c.Do(ctx, "POST", "/v1/sessions/"+esc(id)+"/messages", api.Message{Text: text}, &out)
}

// Steer steers the running turn.
func (c *Client) Steer(ctx context.Context, id session.ID, text string) (api.Accepted, error) {
	var out api.Accepted
	return out, c.Do(ctx, "POST", "/v1/sessions/"+esc(id)+"/steer", api.Message{Text: text}, &out)
}

// Cancel cancels the running turn.
func (c *Client) Cancel(ctx context.Context, id session.ID, reason string) (api.Accepted, error) {
	var out api.Accepted
	return out, c.Do(ctx, "POST", "/v1/sessions/"+esc(id)+"/cancel", api.Cancel{Reason: reason}, &out)
}

// Fork starts a session from this one's completed turns (turns 0: all).
func (c *Client) Fork(ctx context.Context, id session.ID, turns int) (api.Session, error) {
	var out api.Session
	return out, c.Do(ctx, "POST", "/v1/sessions/"+esc(id)+"/fork", api.Fork{Turns: turns}, &out)
}

// Rewind takes the session back to before an earlier turn. A rewind
// refused because files someone else changed would be overwritten answers
// the result (its Conflicts) with an *Error of status 409.
func (c *Client) Rewind(ctx context.Context, id session.ID, r api.Rewind) (api.RewindResult, error) {
	var out api.RewindResult
	req, err := c.request(ctx, "POST", "/v1/sessions/"+esc(id)+"/rewind", r)
	if err != nil {
		return out, err
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusConflict {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		if json.Unmarshal(b, &out) == nil && out.Refused != "" {
			return out, &Error{Status: resp.StatusCode, Code: api.CodeConflict, Message: "rewind refused (" + out.Refused + "): " + strings.TrimSpace(out.Text)}
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
	}
	if resp.StatusCode >= 400 {
		return api.RewindResult{}, readError(resp)
	}
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

// RewindPoints lists the turns the session can be rewound to.
func (c *Client) RewindPoints(ctx context.Context, id session.ID) (api.RewindPoints, error) {
	var out api.RewindPoints
	return out, c.Do(ctx, "GET", "/v1/sessions/"+esc(id)+"/rewind", nil, &out)
}

// SetMode switches the session's permission mode.
func (c *Client) SetMode(ctx context.Context, id session.ID, mode string) error {
	return c.Do(ctx, "POST", "/v1/sessions/"+esc(id)+"/mode", api.SetMode{PermissionMode: mode}, nil)
}

// Events reads a page of the session's stored history from seq from.
func (c *Client) Events(ctx context.Context, id session.ID, from int64, limit int) (api.EventPage, error) {
	var out api.EventPage
	p := fmt.Sprintf("/v1/sessions/%s/events?from=%d", esc(id), from)
	if limit > 0 {
		p += "&limit=" + strconv.Itoa(limit)
	}
	return out, c.Do(ctx, "GET", p, nil, &out)
}

// Approvals lists a session's pending questions ("" : every session's).
func (c *Client) Approvals(ctx context.Context, id session.ID) ([]api.Approval, error) {
	var out api.ApprovalList
	p := "/v1/approvals"
	if id != "" {
		p = "/v1/sessions/" + esc(id) + "/approvals"
	}
	return out.Approvals, c.Do(ctx, "GET", p, nil, &out)
}

// Answer answers a pending question.
func (c *Client) Answer(ctx context.Context, id session.ID, call string, a api.Answer) (api.Approval, error) {
	var out api.Approval
	return out, c.Do(ctx, "POST", "/v1/sessions/"+esc(id)+"/approvals/"+url.PathEscape(call), a, &out)
}

// CreateRun queues a background run.
func (c *Client) CreateRun(ctx context.Context, req api.CreateRun) (api.Run, error) {
	var out api.Run
	return out, c.Do(ctx, "POST", "/v1/runs", req, &out)
}

// Run gets a run.
func (c *Client) Run(ctx context.Context, id int64) (api.Run, error) {
	var out api.Run
	return out, c.Do(ctx, "GET", "/v1/runs/"+strconv.FormatInt(id, 10), nil, &out)
}

// Runs lists runs, newest first.
func (c *Client) Runs(ctx context.Context, limit int) ([]api.Run, error) {
	var out api.RunList
	return out.Runs, c.Do(ctx, "GET", "/v1/runs?limit="+strconv.Itoa(limit), nil, &out)
}

// CancelRun cancels a run.
func (c *Client) CancelRun(ctx context.Context, id int64) (api.Run, error) {
	var out api.Run
	return out, c.Do(ctx, "POST", "/v1/runs/"+strconv.FormatInt(id, 10)+"/cancel", nil, &out)
}

// StreamOptions tune [Client.Stream].
type StreamOptions struct {
	// Reconnect, when positive, reconnects a broken stream after this
	// wait, from the seq after the last event it yielded (Last-Event-ID),
	// so nothing is lost or repeated; zero ends the iteration with the
	// error instead.
	Reconnect time.Duration
	// Reconnected, when set, hears each reconnection and its cause.
	Reconnected func(err error)
	// Progress, when set, hears a running tool call's output as the
	// server forwards it (not part of the log: never replayed on a
	// reconnect); without it such output is skipped.
	Progress func(api.Progress)
}

// Stream yields the session's events from seq from on, live, over SSE,
// until ctx ends (then with ctx's error) or, without Reconnect, the
// connection fails. Breaking out of the loop closes the stream.
func (c *Client) Stream(ctx context.Context, id session.ID, from int64, o StreamOptions) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		next := from
		for {
			err := c.streamOnce(ctx, id, next, o.Progress, func(ev session.Event) bool {
				if ev.Seq < next {
					return true
				}
				next = ev.Seq + 1
				return yield(ev, nil)
			})
			if errors.Is(err, errStop) {
				return
			}
			if ctx.Err() != nil {
				yield(session.Event{}, ctx.Err())
				return
			}
			var apiErr *Error
			if o.Reconnect <= 0 || errors.As(err, &apiErr) {
				if err == nil {
					err = io.ErrUnexpectedEOF
				}
				yield(session.Event{}, err)
				return
			}
			if o.Reconnected != nil {
				o.Reconnected(err)
			}
			select {
			case <-time.After(o.Reconnect):
			case <-ctx.Done():
				yield(session.Event{}, ctx.Err())
				return
			}
		}
	}
}

var errStop = errors.New("stop")

// streamOnce reads one SSE connection; it returns errStop when fn said
// stop, else why the stream ended.
func (c *Client) streamOnce(ctx context.Context, id session.ID, from int64, progress func(api.Progress), fn func(session.Event) bool) error {
	req, err := c.request(ctx, "GET", "/v1/sessions/"+esc(id)+"/stream", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	if from > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(from-1, 10))
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return readError(resp)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var data []byte
	var name string // the SSE event's name: "" for a log event
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				if err := dispatch(name, data, progress, fn); err != nil {
					return err
				}
			}
			data, name = data[:0], ""
		case bytes.HasPrefix(line, []byte("data: ")):
			data = append(data, line[6:]...)
		case bytes.HasPrefix(line, []byte("event: ")):
			name = string(line[7:])
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.ErrUnexpectedEOF
}

// dispatch hands one SSE event to fn (a log event) or progress (a tool's
// live output); it returns errStop when fn said stop. Events of names it
// does not know are skipped: a newer server may send more.
func dispatch(name string, data []byte, progress func(api.Progress), fn func(session.Event) bool) error {
	switch name {
	case "", "message":
		var ev session.Event
		if err := json.Unmarshal(data, &ev); err != nil {
			return fmt.Errorf("dsh serve: a stream event is not JSON: %w", err)
		}
		if !fn(ev) {
			return errStop
		}
	case "progress":
		if progress == nil {
			return nil
		}
		var p api.Progress
		if err := json.Unmarshal(data, &p); err != nil {
			return fmt.Errorf("dsh serve: a progress event is not JSON: %w", err)
		}
		progress(p)
	}
	return nil
}
