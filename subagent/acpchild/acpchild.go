// Package acpchild is the out-of-process subagent provider: the child is
// any Agent Client Protocol agent command (dsh acp itself, or another
// agent), started in its own process group with a scrubbed environment,
// driven over stdio, and torn down with its whole group.
package acpchild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/subagent"
)

// Config describes the child command.
type Config struct {
	// Name is the provider name ("acp").
	Name    string
	Command string
	Args    []string
	// Env is added after the scrub; keys named here pass even when they
	// look like secrets (this is how a child gets its own API key).
	Env map[string]string
	// AllowPermissions answers the child's permission requests with its
	// first allow option; by default they are rejected.
	AllowPermissions bool
	// Grace is how long the child has to exit after its stdin closes and
	// after SIGTERM (default 2 s each), and how long a cancelled child has
	// to answer before its run settles as aborted.
	Grace time.Duration
	// Handshake bounds how long Start waits for the child to open its ACP
	// session, so the session id is known when the run is recorded
	// (default 10 s). A slower child still runs; its subagent/start record
	// then lacks the child session.
	Handshake time.Duration
}

// Provider starts ACP children.
type Provider struct{ cfg Config }

// New returns the provider.
func New(cfg Config) *Provider {
	if cfg.Name == "" {
		cfg.Name = "acp"
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 2 * time.Second
	}
	if cfg.Handshake <= 0 {
		cfg.Handshake = 10 * time.Second
	}
	return &Provider{cfg: cfg}
}

// Name implements subagent.Provider.
func (p *Provider) Name() string { return p.cfg.Name }

var secret = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL`) })

// Env returns the child's environment: the parent's minus secret-looking
// names, plus cfg.Env.
func Env(parent []string, extra map[string]string) []string {
	var out []string
	for _, kv := range parent {
		k, _, _ := strings.Cut(kv, "=")
		if _, explicit := extra[k]; explicit || secret().MatchString(k) {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	return out
}

// Start implements subagent.Provider. It returns once the child has opened
// its session (or failed, exited, or taken longer than cfg.Handshake), so
// ChildSession names the child's session from the start.
//
// The child's session header does not name the parent's session: dsh acp
// has no way to be told its parent yet (no environment variable or
// session/new field sets Header.ParentSession), so the link is only in the
// parent's subagent/start and subagent/end records.
func (p *Provider) Start(ctx context.Context, req subagent.Request, depth int) (subagent.Run, error) {
	cwd := ""
	if req.Parent != nil {
		cwd = req.Parent.Session().Cwd()
	}
	if cwd == "" {
		var err error
		if cwd, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(p.cfg.Command, p.cfg.Args...)
	cmd.Dir = cwd
	cmd.Env = Env(os.Environ(), p.cfg.Env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = nil
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("acpchild: starting %s: %w", p.cfg.Command, err)
	}
	r := &run{p: p, cmd: cmd, stdin: stdin, exited: make(chan struct{}), done: make(chan struct{}), ready: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(r.exited)
	}()
	r.conn = sdk.NewClientSideConnection(&client{r: r}, stdin, stdout)
	go r.drive(cwd, req.Prompt)
	t := time.NewTimer(p.cfg.Handshake)
	defer t.Stop()
	select {
	case <-r.ready:
	case <-r.done:
	case <-r.exited:
	case <-ctx.Done(): // the caller cancels the run
	case <-t.C:
	}
	return r, nil
}

type run struct {
	p      *Provider
	cmd    *exec.Cmd
	stdin  interface{ Close() error }
	conn   *sdk.ClientSideConnection
	exited chan struct{}
	done   chan struct{}
	ready  chan struct{} // closed once sessionID is known

	mu        sync.Mutex
	text      strings.Builder
	sessionID sdk.SessionId
	result    subagent.Result
	cancelled bool
	cancel    sync.Once
	disposed  sync.Once
	settle    sync.Once
}

func (r *run) finish(res subagent.Result) {
	r.settle.Do(func() {
		r.mu.Lock()
		if res.ChildSession == "" {
			res.ChildSession = session.ID(r.sessionID)
		}
		r.result = res
		r.mu.Unlock()
		close(r.done)
	})
}

func (r *run) drive(cwd string, prompt []llm.Block) {
	ctx := context.Background()
	fail := func(err error) {
		r.mu.Lock()
		out := r.output()
		r.mu.Unlock()
		_ = err
		r.finish(subagent.Result{Output: out, StopReason: subagent.Failed})
	}
	if _, err := r.conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		fail(err)
		return
	}
	s, err := r.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		fail(err)
		return
	}
	r.mu.Lock()
	r.sessionID = s.SessionId
	cancelled := r.cancelled
	r.mu.Unlock()
	close(r.ready)
	if cancelled {
		r.finish(subagent.Result{StopReason: subagent.Aborted})
		return
	}
	var blocks []sdk.ContentBlock
	for _, b := range prompt {
		if b.Type == llm.BlockText {
			blocks = append(blocks, sdk.TextBlock(b.Text))
		}
	}
	resp, err := r.conn.Prompt(ctx, sdk.PromptRequest{SessionId: s.SessionId, Prompt: blocks})
	if err != nil {
		fail(err)
		return
	}
	stop := subagent.Failed
	switch resp.StopReason {
	case sdk.StopReasonEndTurn:
		stop = subagent.Completed
	case sdk.StopReasonMaxTokens:
		stop = subagent.MaxTokens
	case sdk.StopReasonRefusal:
		stop = subagent.Refusal
	case sdk.StopReasonCancelled:
		stop = subagent.Aborted
	}
	r.mu.Lock()
	out := r.output()
	r.mu.Unlock()
	r.finish(subagent.Result{Output: out, StopReason: stop})
}

func (r *run) output() []llm.Block {
	if r.text.Len() == 0 {
		return nil
	}
	return []llm.Block{llm.Text(r.text.String())}
}

func (r *run) ID() string { return fmt.Sprintf("acp-%d", r.cmd.Process.Pid) }

// ChildSession is the child's session id (a dsh child's ids are dsh session
// ids, so the lineage shows up in `dsh sessions`).
func (r *run) ChildSession() session.ID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return session.ID(r.sessionID)
}

func (r *run) Wait(ctx context.Context) (subagent.Result, error) {
	select {
	case <-r.done:
	case <-r.exited:
		// The child died before answering.
		r.mu.Lock()
		out := r.output()
		cancelled := r.cancelled
		r.mu.Unlock()
		stop := subagent.Failed
		if cancelled {
			stop = subagent.Aborted
		}
		r.finish(subagent.Result{Output: out, StopReason: stop})
		<-r.done
	case <-ctx.Done():
		return subagent.Result{}, ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.result, nil
}

// Cancel asks the child to stop and never blocks. The grace starts at
// once: a child that ignores the cancel, or that stopped reading its stdin
// (so that the cancel cannot even be written), settles as aborted when it
// runs out, and Wait returns; Dispose then kills the process group, which
// also unblocks any write still pending on the pipe.
func (r *run) Cancel(reason string) {
	r.cancel.Do(func() {
		r.mu.Lock()
		r.cancelled = true
		sid := r.sessionID
		r.mu.Unlock()
		go func() {
			t := time.NewTimer(r.p.cfg.Grace)
			defer t.Stop()
			select {
			case <-r.done:
			case <-t.C:
				r.mu.Lock()
				out := r.output()
				r.mu.Unlock()
				r.finish(subagent.Result{Output: out, StopReason: subagent.Aborted})
			}
		}()
		if sid != "" {
			// The write takes the connection's write lock and can block for
			// as long as the child does not read; it ends when the child
			// reads or dies.
			go func() { _ = r.conn.Cancel(context.Background(), sdk.CancelNotification{SessionId: sid}) }()
		}
	})
}

// Dispose closes stdin, then signals the whole process group: TERM, then
// KILL, and waits for the child to be reaped.
func (r *run) Dispose(ctx context.Context) error {
	r.disposed.Do(func() {
		_ = r.stdin.Close()
		select {
		case <-r.exited:
		case <-time.After(r.p.cfg.Grace):
			_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-r.exited:
			case <-time.After(r.p.cfg.Grace):
				_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
				<-r.exited
			}
		}
		// Anything the child left in its group goes too.
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		r.finish(subagent.Result{StopReason: subagent.Aborted})
	})
	return nil
}

// client is the ACP client side the child talks to.
type client struct{ r *run }

var errUnsupported = errors.New("acpchild: not supported by this client")

func (c *client) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	if m := n.Update.AgentMessageChunk; m != nil && m.Content.Text != nil {
		c.r.mu.Lock()
		c.r.text.WriteString(m.Content.Text.Text)
		c.r.mu.Unlock()
	}
	return nil
}

func (c *client) RequestPermission(_ context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	if c.r.p.cfg.AllowPermissions {
		for _, o := range p.Options {
			if o.Kind == sdk.PermissionOptionKindAllowOnce || o.Kind == sdk.PermissionOptionKindAllowAlways {
				return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Selected: &sdk.RequestPermissionOutcomeSelected{OptionId: o.OptionId}}}, nil
			}
		}
	}
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{}}}, nil
}

func (c *client) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, errUnsupported
}
func (c *client) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, errUnsupported
}
func (c *client) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, errUnsupported
}
func (c *client) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, errUnsupported
}
func (c *client) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, errUnsupported
}
func (c *client) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, errUnsupported
}
func (c *client) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, errUnsupported
}
