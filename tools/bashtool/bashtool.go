package bashtool

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/sandbox"
	"github.com/dshq/dsh/tool"
)

// Tool names; the order of [Tools] is bash, bash_output, bash_kill.
const (
	NameBash   = "bash"
	NameOutput = "bash_output"
	NameKill   = "bash_kill"
)

// PluginName is the source completion notices are injected under.
const PluginName = "bash"

var (
	//go:embed bash.md
	bashDescription string
	//go:embed bash_output.md
	outputDescription string
	//go:embed bash_kill.md
	killDescription string
)

// Timeouts for work done on the agent's behalf outside any call: delivering
// a completion notice, and killing the agent's tasks when it is disposed
// (the executor's SIGKILL escalation ends well before).
const (
	noticeTimeout    = 10 * time.Second
	killOwnerTimeout = 30 * time.Second
)

// Options configures the tools.
type Options struct {
	// Logger receives failures that reach no caller: a completion notice
	// that could not be delivered to a live agent, tasks that would not die
	// at disposal. Default: slog.Default().
	Logger *slog.Logger
	// Env is added to every command's environment (the settings' "env"):
	// the user's own choices, so they win over the credential scrub.
	Env map[string]string
	// Sandbox, when set, confines the commands (see [Sandbox]).
	Sandbox *Sandbox
}

// Sandbox is how the bash tool confines commands: the sandbox the executor
// wraps them in is the executor's business; Policy compiles, per call, what
// the command may do (unsandboxed: the model asked to run outside the
// sandbox, which the permission layer has had the user approve). A nil
// policy runs the command as it is.
type Sandbox struct {
	Sandbox sandbox.Sandbox
	Policy  func(ctx context.Context, call tool.Call, dir string, unsandboxed bool) (*sandbox.Policy, error)
}

// Tools returns bash, bash_output and bash_kill over exec, in that order.
// They share the bookkeeping that ties each agent's background tasks to the
// agent's lifetime, so register all three together.
func Tools(exec bash.Executor, opts Options) []tool.Tool {
	s := &state{exec: exec, log: opts.Logger, env: opts.Env, sandbox: opts.Sandbox, scopes: map[*kernel.Scope]bool{}}
	if s.log == nil {
		s.log = slog.Default()
	}
	return []tool.Tool{&bashTool{s}, &outputTool{s}, &killTool{s}}
}

// state is shared by the three tools of one Tools call.
type state struct {
	exec    bash.Executor
	sandbox *Sandbox
	env     map[string]string
	log     *slog.Logger

	mu     sync.Mutex
	scopes map[*kernel.Scope]bool // agent scopes that already kill their tasks on close
}

// owner is the token a call's background tasks are stored under: the
// calling agent's id, or no owner for calls made outside an agent.
func owner(h tool.Host) bash.Owner {
	if h == nil {
		return ""
	}
	return bash.Owner(h.AgentID())
}

// bindLifetime makes sure the agent's background tasks die with it, by
// adding one disposer per agent scope. It fails when the agent is already
// disposed: a task started now would have nobody to report to.
func (s *state) bindLifetime(h tool.Host) error {
	if h == nil || h.Scope() == nil {
		return nil
	}
	scope := h.Scope()
	s.mu.Lock()
	if s.scopes[scope] {
		s.mu.Unlock()
		return nil
	}
	s.scopes[scope] = true
	s.mu.Unlock()
	own := owner(h)
	err := scope.Add(func() {
		ctx, cancel := context.WithTimeout(context.Background(), killOwnerTimeout)
		defer cancel()
		if err := s.exec.KillOwner(ctx, own); err != nil {
			s.log.Warn("bash: killing a disposed agent's background tasks", "agent", own, "err", err)
		}
		s.mu.Lock()
		delete(s.scopes, scope)
		s.mu.Unlock()
	})
	if err != nil {
		return fmt.Errorf("agent %s is disposed; not starting a background task", h.AgentID())
	}
	return nil
}

// notifier returns the OnDone callback announcing a finished task to the
// agent that started it. The notice is context for the agent's next model
// request; it does not wake an idle agent. It runs on the executor's
// goroutine, so it may arrive while the agent's tools are running: the
// agent loop then holds it until the step's tool results are recorded, so
// it never lands between a tool call and its result.
func (s *state) notifier(h tool.Host) func(bash.Task) {
	if h == nil {
		return nil
	}
	return func(t bash.Task) {
		if h.Scope() != nil && h.Scope().Closed() {
			return // the agent is gone; nobody to tell
		}
		text := fmt.Sprintf("background bash task %s finished %s. Read its output with bash_output.", t.ID, statusLine(t))
		ctx, cancel := context.WithTimeout(context.Background(), noticeTimeout)
		defer cancel()
		if err := h.Inject(ctx, []llm.Block{llm.Text(text)}, llm.PluginSource(PluginName)); err != nil {
			if h.Scope() != nil && h.Scope().Closed() {
				return // disposed meanwhile
			}
			s.log.Warn("bash: completion notice not delivered", "task", t.ID, "agent", h.AgentID(), "err", err)
		}
	}
}

// taskError turns the executor's refusals into messages the model can act
// on.
func taskError(id bash.TaskID, err error) error {
	switch {
	case errors.Is(err, bash.ErrNotOwner):
		return fmt.Errorf("no background task %s for this agent: it was started by another agent", id)
	case errors.Is(err, bash.ErrUnknownTask):
		return fmt.Errorf("unknown bash task %q", string(id))
	}
	return err
}

func description(md string) string { return strings.TrimSpace(md) }

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("bashtool: encoding meta: %v", err)) // only plain structs are encoded
	}
	return b
}
