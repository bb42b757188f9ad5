package acp

import (
	"context"
	"fmt"
	"runtime/debug"

	sdk "github.com/coder/acp-go-sdk"
)

// adapter is the server as the JSON-RPC library sees it. Every handler is
// tracked (teardown waits for it) and recovers panics into internal errors:
// one bad request must never take the connection down.
type adapter struct{ s *Server }

var (
	_ sdk.Agent       = adapter{}
	_ sdk.AgentLoader = adapter{}
)

func call[Req, Resp any](a adapter, method string, fn func(context.Context, Req) (Resp, error), ctx context.Context, req Req) (resp Resp, err error) {
	a.s.jobs.add()
	defer a.s.jobs.finish()
	defer func() {
		if v := recover(); v != nil {
			a.s.log.Error("acp: handler panicked", "method", method, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = internalError("%s failed: %v", method, v)
		}
	}()
	return fn(ctx, req)
}

func (a adapter) Initialize(ctx context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	return call(a, "initialize", a.s.initialize, ctx, p)
}

func (a adapter) Authenticate(ctx context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return call(a, "authenticate", a.s.authenticate, ctx, p)
}

func (a adapter) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	return call(a, "session/new", a.s.newSession, ctx, p)
}

func (a adapter) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	return call(a, "session/load", a.s.loadSession, ctx, p)
}

func (a adapter) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	return call(a, "session/resume", a.s.resumeSession, ctx, p)
}

func (a adapter) CloseSession(ctx context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	return call(a, "session/close", a.s.closeSession, ctx, p)
}

func (a adapter) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	return call(a, "session/list", a.s.listSessions, ctx, p)
}

func (a adapter) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	return call(a, "session/prompt", a.s.promptSession, ctx, p)
}

func (a adapter) Cancel(ctx context.Context, p sdk.CancelNotification) error {
	_, err := call(a, "session/cancel", func(ctx context.Context, p sdk.CancelNotification) (struct{}, error) {
		return struct{}{}, a.s.cancelSession(ctx, p)
	}, ctx, p)
	return err
}

func (a adapter) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	return call(a, "session/set_mode", a.s.setMode, ctx, p)
}

func (a adapter) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	return call(a, "session/set_config_option", a.s.setConfigOption, ctx, p)
}

// UnstableSetSessionModel serves session/set_model (the library dispatches
// it only to agents that implement it).
func (a adapter) UnstableSetSessionModel(ctx context.Context, p sdk.UnstableSetSessionModelRequest) (sdk.UnstableSetSessionModelResponse, error) {
	return call(a, "session/set_model", a.s.setModel, ctx, p)
}
