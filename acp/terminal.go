package acp

import (
	"context"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/bash"
)

type bashExecutor = bash.Executor

// Limits of commands run in a client terminal (the local executor's
// defaults).
const (
	terminalTimeout    = 120 * time.Second
	terminalMaxTimeout = 600 * time.Second
	terminalOutputMax  = 64000
)

// clientExec runs foreground bash commands in the editor's terminal
// (terminal/create) when the client offers terminals, so the user watches
// them live in the tool card; background tasks, commands with stdin or
// extra environment (hooks), calls outside an ACP session, and any failure
// to create the terminal run locally.
type clientExec struct {
	inner bash.Executor
	srv   *Server
}

var _ bash.Executor = (*clientExec)(nil)

func (c *clientExec) Start(ctx context.Context, req bash.ExecRequest) (bash.Task, error) {
	return c.inner.Start(ctx, req)
}

func (c *clientExec) Read(ctx context.Context, o bash.Owner, id bash.TaskID) (bash.TaskRead, error) {
	return c.inner.Read(ctx, o, id)
}

func (c *clientExec) Kill(ctx context.Context, o bash.Owner, id bash.TaskID) (bool, error) {
	return c.inner.Kill(ctx, o, id)
}

func (c *clientExec) List(ctx context.Context, o bash.Owner) []bash.Task { return c.inner.List(ctx, o) }

func (c *clientExec) KillOwner(ctx context.Context, o bash.Owner) error {
	return c.inner.KillOwner(ctx, o)
}

func (c *clientExec) Run(ctx context.Context, req bash.ExecRequest) (bash.RunResult, error) {
	cc := callFrom(ctx)
	caps, _ := c.srv.clientCaps()
	if cc == nil || !caps.Terminal || req.Stdin != nil || len(req.Env) > 0 {
		return c.inner.Run(ctx, req)
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = terminalTimeout
	}
	timeout = min(timeout, terminalMaxTimeout)
	sid := sdk.SessionId(cc.rec.id)
	limit := terminalOutputMax
	cwd := req.Workdir
	start := time.Now()
	created, err := c.srv.peer.CreateTerminal(ctx, sdk.CreateTerminalRequest{
		SessionId: sid, Command: "bash", Args: []string{"-c", req.Command}, Cwd: &cwd, OutputByteLimit: &limit,
	})
	if err != nil {
		c.srv.log.Debug("acp: terminal/create failed; running locally", "err", err)
		return c.inner.Run(ctx, req)
	}
	tid := created.TerminalId
	// The release must happen even when the turn is cancelled.
	bg := context.WithoutCancel(ctx)
	defer func() {
		if _, err := c.srv.peer.ReleaseTerminal(bg, sdk.ReleaseTerminalRequest{SessionId: sid, TerminalId: tid}); err != nil {
			c.srv.log.Debug("acp: terminal/release failed", "err", err)
		}
	}()
	cc.rec.terminalAttached(cc.id, tid)

	res := bash.RunResult{Timeout: timeout}
	waitCtx, stop := context.WithTimeout(ctx, timeout)
	defer stop()
	exit, werr := c.srv.peer.WaitForTerminalExit(waitCtx, sdk.WaitForTerminalExitRequest{SessionId: sid, TerminalId: tid})
	if werr != nil {
		// Timed out, cancelled, or the client failed: stop the command.
		switch {
		case ctx.Err() != nil:
			res.Aborted = true
		case waitCtx.Err() != nil:
			res.TimedOut = true
		}
		if _, err := c.srv.peer.KillTerminal(bg, sdk.KillTerminalRequest{SessionId: sid, TerminalId: tid}); err != nil {
			c.srv.log.Debug("acp: terminal/kill failed", "err", err)
		}
		if !res.Aborted && !res.TimedOut {
			res.Signal = "SIGKILL"
		}
	} else {
		res.ExitCode, res.Signal = exit.ExitCode, deref(exit.Signal)
	}
	out, err := c.srv.peer.TerminalOutput(bg, sdk.TerminalOutputRequest{SessionId: sid, TerminalId: tid})
	if err == nil {
		res.Stdout = bash.CollectedOutput{Text: out.Output, Truncated: out.Truncated}
		if out.ExitStatus != nil && res.ExitCode == nil && res.Signal == "" {
			res.ExitCode, res.Signal = out.ExitStatus.ExitCode, deref(out.ExitStatus.Signal)
		}
	}
	if res.TimedOut && res.ExitCode == nil && res.Signal == "" {
		res.Signal = "SIGKILL"
	}
	res.Duration = time.Since(start)
	return res, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
