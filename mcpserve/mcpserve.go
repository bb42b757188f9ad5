// Package mcpserve is dsh as a Model Context Protocol server (`dsh mcp
// serve`), so other agents and MCP clients can delegate work to it: its
// one tool, dsh, runs a prompt as a dsh agent in a given directory and
// returns the answer with the session's id, which a later call passes to
// continue the same session. While the agent works the server sends
// progress notifications; cancelling the call (notifications/cancelled)
// stops the agent. Permission questions go to the calling client through
// MCP elicitation when it supports it; otherwise the permission mode and
// rules decide, as in dsh -p (asks fail closed).
//
// Each call is a headless run (package headless, its json result) inside
// this process; the apps of the directories calls name are built once and
// kept until the server stops.
package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dshq/dsh/app"
	"github.com/dshq/dsh/headless"
	"github.com/dshq/dsh/internal/claudemsg"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/tool"
)

// ToolName is the server's tool.
const ToolName = "dsh"

// Options configure a server.
type Options struct {
	// App builds the composed app for a working directory (absolute). It
	// is called once per directory; the caller closes the apps after the
	// server has stopped.
	App func(ctx context.Context, cwd string) (*app.App, error)
	// Cwd is where calls that name no directory run.
	Cwd     string
	Version string
	Logger  *slog.Logger
}

// Server is dsh's MCP server.
type Server struct {
	o   Options
	srv *sdk.Server

	mu     sync.Mutex
	apps   map[string]*appEntry
	closed bool
	// running holds a channel per session a call works on; a later call
	// for it waits (a cancelled call still winds its agent down).
	running map[session.ID]chan struct{}
}

// claim waits until no other call works on id, then takes it.
func (s *Server) claim(ctx context.Context, id session.ID) (release func(), err error) {
	for {
		s.mu.Lock()
		busy := s.running[id]
		if busy == nil {
			ch := make(chan struct{})
			s.running[id] = ch
			s.mu.Unlock()
			return func() {
				s.mu.Lock()
				delete(s.running, id)
				s.mu.Unlock()
				close(ch)
			}, nil
		}
		s.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

type appEntry struct {
	once sync.Once
	a    *app.App
	err  error
}

// Input is the dsh tool's arguments.
type Input struct {
	Prompt    string `json:"prompt" jsonschema:"the task for the agent, as you would type it to a coding agent"`
	Cwd       string `json:"cwd,omitempty" jsonschema:"absolute directory the agent works in; default: where dsh mcp serve runs"`
	SessionID string `json:"session_id,omitempty" jsonschema:"continue this session: the session_id of an earlier answer (a unique prefix is enough)"`
}

// Output is the dsh tool's structured result.
type Output struct {
	SessionID    string  `json:"session_id"`
	Result       string  `json:"result"`
	IsError      bool    `json:"is_error"`
	Subtype      string  `json:"subtype"`
	NumTurns     int     `json:"num_turns"`
	TotalCostUSD float64 `json:"total_cost_usd"`
}

const toolDescription = `Run a task with dsh, a coding agent, in a directory, and get its final answer.
dsh reads, searches and edits files and runs commands there, within its permission settings.
The answer comes with a session_id: pass it back as session_id to continue the same conversation
(follow-up questions, corrections) with everything the agent saw and did so far.`

// New returns a server.
func New(o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{o: o, apps: map[string]*appEntry{}, running: map[session.ID]chan struct{}{}}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: "dsh", Title: "dsh coding agent", Version: o.Version},
		&sdk.ServerOptions{Logger: o.Logger, Instructions: "Use the dsh tool to delegate a coding task to an agent working in a directory; continue with the session_id it returns."})
	sdk.AddTool(s.srv, &sdk.Tool{Name: ToolName, Title: "Run dsh", Description: toolDescription}, s.call)
	return s
}

// MCP returns the protocol server.
func (s *Server) MCP() *sdk.Server { return s.srv }

// ServeStdio serves one client over in and out (the process's stdin and
// stdout) until it leaves.
func (s *Server) ServeStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	return s.srv.Run(ctx, &sdk.IOTransport{Reader: in, Writer: out})
}

// Handler serves streamable HTTP. Every request must carry the bearer
// token.
func (s *Server) Handler(token string) http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv }, &sdk.StreamableHTTPOptions{Logger: s.o.Logger})
	want := "Bearer " + token
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token == "" || !constantTimeEqual(r.Header.Get("Authorization"), want) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="dsh"`)
			http.Error(w, "unauthorized: send Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func constantTimeEqual(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	var v byte
	for i := range len(a) {
		v |= a[i] ^ b[i]
	}
	return v == 0
}

// Close stops taking calls; the apps belong to whoever built them
// (Options.App).
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

func (s *Server) app(ctx context.Context, cwd string) (*app.App, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("the server is stopping")
	}
	e := s.apps[cwd]
	if e == nil {
		e = &appEntry{}
		s.apps[cwd] = e
	}
	s.mu.Unlock()
	e.once.Do(func() { e.a, e.err = s.o.App(context.WithoutCancel(ctx), cwd) })
	return e.a, e.err
}

// call runs one prompt.
func (s *Server) call(ctx context.Context, req *sdk.CallToolRequest, in Input) (*sdk.CallToolResult, Output, error) {
	if strings.TrimSpace(in.Prompt) == "" {
		return nil, Output{}, errors.New("prompt is empty")
	}
	cwd := in.Cwd
	if cwd == "" {
		cwd = s.o.Cwd
	}
	if !filepath.IsAbs(cwd) {
		return nil, Output{}, fmt.Errorf("cwd %q is not an absolute path", cwd)
	}
	cwd = filepath.Clean(cwd)
	if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
		return nil, Output{}, fmt.Errorf("cwd %s is not a directory", cwd)
	}
	a, err := s.app(ctx, cwd)
	if err != nil {
		return nil, Output{}, fmt.Errorf("cannot start dsh in %s: %v", cwd, err)
	}
	var resume session.ID
	if in.SessionID != "" {
		if resume, err = store.Resolve(ctx, a.Coordinator, in.SessionID); err != nil {
			return nil, Output{}, sessionError(in.SessionID, err)
		}
		release, err := s.claim(ctx, resume)
		if err != nil {
			return nil, Output{}, err
		}
		defer release()
	}
	open := app.OpenOptions{Resume: resume}
	if caps := req.Session.InitializeParams().Capabilities; caps != nil && caps.Elicitation != nil {
		open.Approver = elicitor{ss: req.Session}
	}
	var progressed atomic.Int64
	token := req.Params.GetProgressToken()
	var out bytes.Buffer
	code, runErr := headless.Run(ctx, headless.Options{
		App: a, Prompt: in.Prompt, OutputFormat: headless.FormatJSON, Out: &out, Open: open,
		Version: s.o.Version, Logger: s.o.Logger,
		Progress: func(_ int, msg string) {
			if token == nil {
				return
			}
			n := progressed.Add(1)
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: msg})
		},
	})
	var res headless.Result
	if out.Len() == 0 || json.Unmarshal(out.Bytes(), &res) != nil {
		if runErr == nil {
			runErr = fmt.Errorf("dsh ended with exit status %d and no result", code)
		}
		return nil, Output{}, runErr
	}
	o := Output{SessionID: res.SessionID, IsError: res.IsError, Subtype: res.Subtype, NumTurns: res.NumTurns, TotalCostUSD: res.TotalCostUSD}
	switch {
	case res.Result != nil:
		o.Result = *res.Result
	case len(res.Errors) > 0:
		o.Result = strings.Join(res.Errors, "; ")
	}
	text := o.Result
	if text == "" {
		text = "(the agent finished without a written answer)"
	}
	text += "\n\n[session_id: " + o.SessionID + "]"
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, IsError: res.IsError}, o, nil
}

func sessionError(typed string, err error) error {
	var amb *store.AmbiguousError
	switch {
	case errors.As(err, &amb):
		return amb
	case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidID):
		return fmt.Errorf("no session %q to continue", typed)
	}
	return fmt.Errorf("looking up session %q: %v", typed, err)
}

// elicitor asks the calling client's user through MCP elicitation.
type elicitor struct{ ss *sdk.ServerSession }

func (e elicitor) Approve(ctx context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
	name := claudemsg.ToolName(req.Call.Name)
	args := req.Call.Raw
	if r := []rune(args); len(r) > 400 {
		args = string(r[:400]) + "…"
	}
	msg := fmt.Sprintf("dsh asks to use %s:\n%s", name, args)
	if req.Reason != "" {
		msg += "\n(" + req.Reason + ")"
	}
	choices, help := []string{"allow", "deny"}, "allow this call once, or deny it"
	if len(req.Suggestions) > 0 {
		choices = []string{"allow", "allow_session", "deny"}
		help = "allow once, allow calls like this for the rest of the session (" + strings.Join(req.Suggestions, ", ") + "), or deny"
	}
	res, err := e.ss.Elicit(ctx, &sdk.ElicitParams{Message: msg, RequestedSchema: map[string]any{
		"type":       "object",
		"properties": map[string]any{"decision": map[string]any{"type": "string", "enum": choices, "description": help}},
		"required":   []string{"decision"},
	}})
	if err != nil {
		return tool.Approval{Allow: false, By: "elicitation", Reason: fmt.Sprintf("asking the client failed: %v", err)}, nil
	}
	if res.Action != "accept" {
		return tool.Approval{Allow: false, By: "elicitation", Reason: "the user " + res.Action + "d the " + name + " call"}, nil
	}
	switch res.Content["decision"] {
	case "allow":
		return tool.Approval{Allow: true, By: "elicitation"}, nil
	case "allow_session":
		return tool.Approval{Allow: true, Rules: req.Suggestions, By: "elicitation"}, nil
	}
	return tool.Approval{Allow: false, By: "elicitation", Reason: "the user denied the " + name + " call"}, nil
}
