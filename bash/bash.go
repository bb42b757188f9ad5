package bash

import (
	"context"
	"errors"
	"time"

	"github.com/dshq/dsh/sandbox"
)

// TaskID names a background task. Implementations choose the form (the
// local executor hands out "bash-1", "bash-2", … and never reuses one); to
// callers it is opaque.
type TaskID string

// Owner is an opaque token naming who started a background task (the tool
// layer uses the agent id). The executor stores it and compares it, never
// interprets it. The empty Owner means "unowned": such tasks are open to
// every caller, while an owned task is open only to its owner.
type Owner string

// Errors callers can test with [errors.Is]. Implementations wrap them with
// the task id.
var (
	// ErrUnknownTask reports a task id the executor never handed out.
	ErrUnknownTask = errors.New("bash: unknown task")
	// ErrNotOwner reports a task that belongs to another owner.
	ErrNotOwner = errors.New("bash: task belongs to another owner")
	// ErrClosed reports a call on an executor that has been closed.
	ErrClosed = errors.New("bash: executor is closed")
)

// ExecRequest describes one command.
//
// Stdin and Env exist for trusted callers (hook bridges feed a JSON payload
// on stdin and project variables in the environment). The model-facing tool
// never sets them: a model must not be able to choose a command's
// environment, which is where credentials would be smuggled back in.
type ExecRequest struct {
	// Command is run by a fresh non-interactive shell (`bash -c`); no shell
	// state survives between commands.
	Command string
	// Workdir is the command's working directory; it is required (the tool
	// defaults it to the session's cwd) so no command silently runs in
	// whatever directory the dsh process happens to have.
	Workdir string
	// Timeout bounds a foreground Run; zero means the executor's default, and
	// values above the executor's maximum are capped. Background tasks have
	// no timeout.
	Timeout time.Duration
	// Stdin, when non-nil (even empty), is written to the command's standard
	// input, which is then closed. Nil means standard input is /dev/null.
	Stdin []byte
	// Env entries are added after the credential scrub, so they win over
	// both the inherited environment and the executor's own overrides.
	Env map[string]string
	// Owner is the token stored on a background task (see [Owner]).
	Owner Owner
	// Sandbox is the policy the command runs under, when the executor has
	// a sandbox; nil runs it as it is (trusted callers: hooks, unless
	// sandbox.hooks is set). danger-full-access still contains it: it
	// dies with its command and with dsh.
	Sandbox *sandbox.Policy
	// OnDone, for Start only, is called once, on its own goroutine, with the
	// final task when the task ends by itself (it exited, or died of a
	// signal nobody in dsh sent). It is not called for tasks ended through
	// the executor: after Kill the caller already knows, and after KillOwner
	// or Close nobody is left to tell. It should return promptly; Close waits
	// for running callbacks.
	OnDone func(Task)
	// OnOutput, for Run only, sees the command's output as it arrives
	// (stdout and stderr pieces, as read), for people watching it run. It
	// is called from the reading goroutines, possibly at once for both
	// streams, must not keep p, and should return promptly: the command
	// waits while it runs. What is collected for the result is unchanged.
	OnOutput func(p []byte)
}

// CollectedOutput is what was kept of one output stream.
type CollectedOutput struct {
	// Text is the whole stream, or only its tail when Truncated.
	Text string
	// Truncated reports that the head of the stream was dropped from memory.
	Truncated bool
	// SpillPath names a private file holding the complete stream. It is set
	// only when the stream was truncated (or is binary) and the file was
	// written in full.
	SpillPath string
	// Binary reports a stream that is not text (NUL bytes, mostly invalid
	// UTF-8: an image, an archive, a program printed by mistake). Text is
	// empty then: decoded, it would reach the model as a wall of
	// replacement characters. Size and SpillPath say what there was and
	// where all of it is.
	Binary bool
	// Size is how many bytes the stream produced.
	Size int64
}

// RunResult is the outcome of a foreground command. The outcome fields are
// independent: a command that traps SIGTERM and exits 0 after a timeout has
// TimedOut true, ExitCode 0 and no Signal.
type RunResult struct {
	// ExitCode is the shell's exit status; nil when a signal ended it.
	ExitCode *int
	// Signal names the signal that ended the shell ("SIGTERM", "SIGKILL").
	Signal string
	// TimedOut reports that the timeout fired and the process group was
	// killed.
	TimedOut bool
	// Aborted reports that the caller's context ended the command.
	Aborted bool
	// Timeout is the effective timeout after defaults and caps.
	Timeout time.Duration
	// Duration is the wall time from spawn to completion.
	Duration time.Duration
	// Stdout and Stderr are the collected output streams.
	Stdout, Stderr CollectedOutput
	// Sandbox reports how the command was confined; nil when it ran
	// without the sandbox.
	Sandbox *sandbox.Report
}

// Status is a background task's state.
type Status string

// Task states. A task is Killed only when the executor ended it (Kill,
// KillOwner, Close); a task whose process died of an outside signal is
// Completed with that Signal.
const (
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed"
	StatusKilled    Status = "killed"
)

// Task is a snapshot of a background task.
type Task struct {
	ID      TaskID
	Command string
	Workdir string
	Owner   Owner
	Status  Status
	// ExitCode and Signal are set once the task has ended (see RunResult).
	ExitCode *int
	Signal   string
	Started  time.Time
	// Ended is zero while the task runs.
	Ended time.Time
	// Sandbox reports how the task was confined (what the proxy refused so
	// far); nil when it ran without the sandbox.
	Sandbox *sandbox.Report
	// Done is closed when the task has ended and its output is final; take a
	// new snapshot (Read, List) afterwards for the final state.
	Done <-chan struct{}
}

// TaskRead is the result of an incremental read of a task's output.
type TaskRead struct {
	Task Task
	// Stdout and Stderr hold the output produced since the previous Read.
	Stdout, Stderr string
	// Lossy reports that part of the output since the previous Read was
	// dropped from memory before it could be read; the whole retained tail
	// is returned instead and the spill files hold everything.
	Lossy bool
	// StdoutSpill and StderrSpill name the spill files holding the complete
	// streams, once a stream has outgrown memory (or turned out binary).
	StdoutSpill, StderrSpill string
	// StdoutBinary and StderrBinary, when not zero, are how many bytes of
	// binary output the stream produced since the previous Read: the text
	// is empty then, and the spill file holds the stream.
	StdoutBinary, StderrBinary int64
}

// Executor runs shell commands. Implementations are safe for concurrent use.
//
// Read and Kill take the caller's owner token and refuse (ErrNotOwner) a task
// owned by someone else; unowned tasks are open to all.
type Executor interface {
	// Run executes a command in the foreground and waits for it. Cancelling
	// ctx kills the process group and returns a result with Aborted set; an
	// error means the command could not be run at all.
	Run(ctx context.Context, req ExecRequest) (RunResult, error)
	// Start launches a background task and returns at once. ctx bounds only
	// the start itself: the task runs until it exits or is killed.
	Start(ctx context.Context, req ExecRequest) (Task, error)
	// Read returns the output produced since the previous Read of the task.
	Read(ctx context.Context, owner Owner, id TaskID) (TaskRead, error)
	// Kill ends a task's whole process group and waits, until ctx is done,
	// for it to exit. It reports false when the task had already ended.
	Kill(ctx context.Context, owner Owner, id TaskID) (killed bool, err error)
	// List returns the tasks of owner, oldest first.
	List(ctx context.Context, owner Owner) []Task
	// KillOwner kills every running task of owner and waits, until ctx is
	// done, for them to exit. Used when an owner goes away.
	KillOwner(ctx context.Context, owner Owner) error
}
