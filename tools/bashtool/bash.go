package bashtool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/sandbox"
	"github.com/dshq/dsh/tool"
)

var bashSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The command to run with bash -c."},
    "description": {"type": "string", "description": "What the command does, in 5-10 words of active voice (e.g. \"Run the unit tests\"). Shown to the user; never executed."},
    "timeoutMs": {"type": "number", "description": "Timeout in milliseconds for a foreground command. The executor applies its default (normally 120000) when absent and caps it at its maximum (normally 600000). On expiry the whole process group is killed."},
    "workdir": {"type": "string", "description": "Directory to run in. Defaults to the session's working directory; a relative path is resolved against it."},
    "run_in_background": {"type": "boolean", "description": "Start the command as a background task and return its id at once, with no timeout. Read its output with bash_output, stop it with bash_kill."},
    "dangerouslyDisableSandbox": {"type": "boolean", "description": "Run outside the kernel sandbox. Use it only to re-run a command whose result said the sandbox refused it, and only when the work needs that access; the user is always asked, and it is never allowed in plan mode."}
  },
  "required": ["command", "description"]
}`)

// bashArgs are the named fields a request is built from; anything else the
// model sends (env, stdin, …) is ignored, never forwarded.
type bashArgs struct {
	Command         string   `json:"command"`
	Description     string   `json:"description"`
	TimeoutMs       *float64 `json:"timeoutMs"`
	Workdir         *string  `json:"workdir"`
	RunInBackground bool     `json:"run_in_background"`
	// Unsandboxed asks to run outside the sandbox (the permission layer
	// always asks the user for it).
	Unsandboxed bool `json:"dangerouslyDisableSandbox"`
}

// maxTimeoutMs bounds the conversion to time.Duration; the executor caps far
// lower anyway.
const maxTimeoutMs = float64(24 * time.Hour / time.Millisecond)

type bashTool struct{ s *state }

func (t *bashTool) Info() tool.Info {
	return tool.Info{
		Name:        NameBash,
		Description: description(bashDescription),
		Parameters:  bashSchema,
		Kind:        tool.KindExecute,
	}
}

func (t *bashTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	a, err := tool.DecodeArgs[bashArgs](call)
	if err != nil {
		return tool.Result{}, err
	}
	if strings.TrimSpace(a.Command) == "" {
		return tool.Result{}, errors.New("invalid command: expected a non-empty string")
	}
	if strings.TrimSpace(a.Description) == "" {
		return tool.Result{}, errors.New("invalid description: expected a non-empty string")
	}
	var timeout time.Duration
	if a.TimeoutMs != nil {
		ms := *a.TimeoutMs
		if !(ms > 0) || math.IsInf(ms, 0) {
			return tool.Result{}, fmt.Errorf("invalid timeoutMs: expected a positive number, got %s", formatNumber(ms))
		}
		timeout = time.Duration(min(ms, maxTimeoutMs) * float64(time.Millisecond))
		timeout = max(timeout, time.Millisecond)
	}
	dir, err := workdir(call.Host, a.Workdir)
	if err != nil {
		return tool.Result{}, err
	}
	policy, err := t.s.policy(ctx, call, dir, a.Unsandboxed)
	if err != nil {
		return tool.Result{}, err
	}
	if a.RunInBackground {
		return t.start(ctx, call.Host, a.Command, dir, policy)
	}
	watch := func(p []byte) { tool.ReportOutput(ctx, p) }
	res, err := t.s.exec.Run(ctx, bash.ExecRequest{Command: a.Command, Workdir: dir, Timeout: timeout, Env: t.s.env, Sandbox: policy, OnOutput: watch})
	if err != nil {
		return tool.Result{}, err
	}
	if res.Aborted {
		return tool.Result{}, errors.New("command aborted")
	}
	meta := runMetaOf(res, dir)
	text := renderResult(res)
	home, _ := os.UserHomeDir()
	if note := sandboxNote(res, policy, a.Command, dir, home); note != "" {
		text = withNewline(text) + note
		meta.SandboxDenied = strings.Contains(note, "dangerouslyDisableSandbox")
	}
	return tool.Result{Content: textContent(text), Meta: mustJSON(meta)}, nil
}

func (t *bashTool) start(ctx context.Context, h tool.Host, command, dir string, policy *sandbox.Policy) (tool.Result, error) {
	if err := t.s.bindLifetime(h); err != nil {
		return tool.Result{}, err
	}
	task, err := t.s.exec.Start(ctx, bash.ExecRequest{
		Command: command,
		Workdir: dir,
		Env:     t.s.env,
		Owner:   owner(h),
		OnDone:  t.s.notifier(h),
		Sandbox: policy,
	})
	if err != nil {
		return tool.Result{}, err
	}
	if h != nil && h.Scope() != nil && h.Scope().Closed() {
		// Disposed while we were starting: its disposer may have run before
		// the task existed, so kill it here.
		_, _ = t.s.exec.Kill(ctx, owner(h), task.ID)
		return tool.Result{}, fmt.Errorf("agent %s is disposed; background task %s was stopped", h.AgentID(), task.ID)
	}
	meta := runMeta{Background: true, TaskID: string(task.ID), Cwd: dir}
	return tool.Result{Content: textContent("started background task " + string(task.ID)), Meta: mustJSON(meta)}, nil
}

// workdir resolves the model's workdir against the session's cwd (or, for
// calls outside an agent, the process's).
func workdir(h tool.Host, given *string) (string, error) {
	if given != nil && filepath.IsAbs(*given) {
		return filepath.Clean(*given), nil
	}
	base := ""
	if h != nil {
		base = h.Cwd()
	}
	if base == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("no working directory: %w", err)
		}
		base = wd
	}
	if given == nil || *given == "" {
		return base, nil
	}
	return filepath.Join(base, *given), nil
}

// formatNumber renders a number the way it appeared in the JSON arguments.
func formatNumber(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprint(f)
	}
	b, _ := json.Marshal(f)
	return string(b)
}

// runMeta is the presentation data recorded with a bash result: the exact
// outcome, so front-ends and replays need not parse the text.
type runMeta struct {
	Background  bool   `json:"background,omitempty"`
	TaskID      string `json:"taskId,omitempty"`
	Cwd         string `json:"cwd,omitempty"`
	ExitCode    *int   `json:"exitCode,omitempty"`
	Signal      string `json:"signal,omitempty"`
	TimedOut    bool   `json:"timedOut,omitempty"`
	TimeoutMs   int64  `json:"timeoutMs,omitempty"`
	StdoutSpill string `json:"stdoutSpill,omitempty"`
	StderrSpill string `json:"stderrSpill,omitempty"`
	Truncated   bool   `json:"truncated,omitempty"`
	// Binary: a stream was not text; the result names its size and file.
	Binary bool `json:"binary,omitempty"`
	// Sandbox is the mode the command ran in; SandboxDenied marks a
	// failure that looks like the sandbox's refusal.
	Sandbox       string `json:"sandbox,omitempty"`
	SandboxDenied bool   `json:"sandboxDenied,omitempty"`
}

func runMetaOf(r bash.RunResult, dir string) runMeta {
	return runMeta{
		Cwd:         dir,
		ExitCode:    r.ExitCode,
		Signal:      r.Signal,
		TimedOut:    r.TimedOut,
		TimeoutMs:   r.Timeout.Milliseconds(),
		StdoutSpill: r.Stdout.SpillPath,
		StderrSpill: r.Stderr.SpillPath,
		Truncated:   r.Stdout.Truncated || r.Stderr.Truncated,
		Binary:      r.Stdout.Binary || r.Stderr.Binary,
		Sandbox:     sandboxMode(r),
	}
}

func sandboxMode(r bash.RunResult) string {
	if r.Sandbox == nil {
		return ""
	}
	return string(r.Sandbox.Mode)
}
