package local

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/sandbox"
)

// Defaults for [Config].
const (
	DefaultTimeout        = 2 * time.Minute
	DefaultMaxTimeout     = 10 * time.Minute
	DefaultMaxOutputBytes = 64000
	DefaultGrace          = 3 * time.Second
)

// Config tunes an [Executor]. Zero fields take the defaults.
type Config struct {
	// Shell runs each command as `Shell -c command`. Default: bash from PATH,
	// else /bin/sh.
	Shell string
	// Timeout is the foreground default (DefaultTimeout); MaxTimeout caps
	// what a request may ask for (DefaultMaxTimeout).
	Timeout    time.Duration
	MaxTimeout time.Duration
	// MaxOutputBytes is the per-stream tail kept in memory
	// (DefaultMaxOutputBytes). Output beyond it is spilled to a file.
	MaxOutputBytes int
	// Grace is how long a command's processes have between SIGTERM and SIGKILL
	// (DefaultGrace).
	Grace time.Duration
	// SpillDir holds spill files. Default: a private directory (0700)
	// created under the OS temp dir on first use and removed by Close. A
	// configured directory is created 0700 if missing and left in place.
	SpillDir string
	// Logger receives failures nobody else can report (a panicking OnDone
	// callback). Default: slog.Default().
	Logger *slog.Logger
	// ScrubEnv names further variables (exactly as spelled) withheld from
	// commands, beyond the credential-shaped names and URL credentials
	// always dropped: the variables dsh reads its own secrets from under
	// names no heuristic recognizes (a custom provider's apiKeyEnv, the
	// variables its headers expand). An explicit ExecRequest.Env entry
	// still wins.
	ScrubEnv []string
	// Sandbox confines commands whose request carries a policy
	// (ExecRequest.Sandbox). Nil runs every command as it is.
	Sandbox sandbox.Sandbox
}

// Executor runs commands as local processes. Create it with [New] and
// [Executor.Close] it when dsh shuts down: Close kills every process it
// started, so none outlives dsh.
type Executor struct {
	cfg   Config
	shell string
	log   *slog.Logger

	mu     sync.Mutex
	closed bool
	live   map[*proc]bool // running processes; true for background tasks
	tasks  map[bash.TaskID]*task
	order  []*task
	nextID int
	wg     sync.WaitGroup // one per process, released after its completion is fully reported
	start  threadStarter  // forks every shell (spawn_linux.go)

	spillMu     sync.Mutex
	spillDir    string
	ownSpillDir bool
	spillClosed bool
	spillSeq    atomic.Uint64
}

var _ bash.Executor = (*Executor)(nil)

// task is a background task. Fields below p are guarded by Executor.mu.
type task struct {
	id      bash.TaskID
	command string
	workdir string
	owner   bash.Owner
	onDone  func(bash.Task)
	p       *proc

	status         bash.Status
	ended          bool // the process's outcome is final (p's result fields are readable)
	silent         bool // do not call onDone: the owner is going away
	outOff, errOff int64
}

// New returns an executor for cfg.
func New(cfg Config) (*Executor, error) {
	if cfg.Timeout < 0 || cfg.MaxTimeout < 0 || cfg.Grace < 0 || cfg.MaxOutputBytes < 0 {
		return nil, errors.New("bash/local: Timeout, MaxTimeout, Grace and MaxOutputBytes must not be negative")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxTimeout == 0 {
		cfg.MaxTimeout = max(DefaultMaxTimeout, cfg.Timeout)
	}
	if cfg.Timeout > cfg.MaxTimeout {
		return nil, fmt.Errorf("bash/local: Timeout %v exceeds MaxTimeout %v", cfg.Timeout, cfg.MaxTimeout)
	}
	if cfg.MaxOutputBytes == 0 {
		cfg.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	shell := cfg.Shell
	if shell == "" {
		shell = "bash"
		if _, err := exec.LookPath(shell); err != nil {
			shell = "/bin/sh"
		}
	}
	path, err := exec.LookPath(shell)
	if err != nil {
		return nil, fmt.Errorf("bash/local: shell: %w", err)
	}
	cfg.ScrubEnv = slices.Clone(cfg.ScrubEnv)
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Executor{
		cfg:   cfg,
		shell: path,
		log:   log,
		live:  map[*proc]bool{},
		tasks: map[bash.TaskID]*task{},
	}, nil
}

// Run executes a command in the foreground.
func (e *Executor) Run(ctx context.Context, req bash.ExecRequest) (bash.RunResult, error) {
	timeout, err := e.timeout(req.Timeout)
	if err != nil {
		return bash.RunResult{}, err
	}
	if ctx.Err() != nil {
		return bash.RunResult{}, fmt.Errorf("bash: aborted before start: %w", context.Cause(ctx))
	}
	p, err := e.launch(req, false)
	if err != nil {
		return bash.RunResult{}, err
	}
	p.begin(e.procExited(p, nil))
	timer := time.AfterFunc(timeout, func() { p.kill(reasonTimeout) })
	stop := context.AfterFunc(ctx, func() { p.kill(reasonAbort) })
	<-p.done
	timer.Stop()
	stop()
	res := p.result()
	res.Timeout = timeout
	return res, nil
}

// Start launches a background task. Task ids are assigned only to tasks that
// started, so a failed start consumes none.
func (e *Executor) Start(ctx context.Context, req bash.ExecRequest) (bash.Task, error) {
	if ctx.Err() != nil {
		return bash.Task{}, fmt.Errorf("bash: aborted before start: %w", context.Cause(ctx))
	}
	if req.Timeout < 0 {
		return bash.Task{}, fmt.Errorf("bash: timeout must be positive, got %v", req.Timeout)
	}
	req.OnOutput = nil // a task's output is read with Read
	p, err := e.launch(req, true)
	if err != nil {
		return bash.Task{}, err
	}
	t := &task{
		command: req.Command,
		workdir: req.Workdir,
		owner:   req.Owner,
		onDone:  req.OnDone,
		p:       p,
		status:  bash.StatusRunning,
	}
	e.mu.Lock()
	if e.closed { // closed while we were spawning; launch has killed it
		e.mu.Unlock()
		p.begin(e.procExited(p, nil))
		return bash.Task{}, bash.ErrClosed
	}
	e.nextID++
	t.id = bash.TaskID(fmt.Sprintf("bash-%d", e.nextID))
	e.tasks[t.id] = t
	e.order = append(e.order, t)
	snap := e.snapshotLocked(t)
	e.mu.Unlock()
	p.begin(e.procExited(p, t))
	return snap, nil
}

// Read returns the task's output since the previous Read.
func (e *Executor) Read(_ context.Context, owner bash.Owner, id bash.TaskID) (bash.TaskRead, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.lookupLocked(owner, id)
	if err != nil {
		return bash.TaskRead{}, err
	}
	// Snapshot first: if it says the task ended, the output read below is
	// already complete.
	r := bash.TaskRead{Task: e.snapshotLocked(t)}
	var lossyOut, lossyErr bool
	r.Stdout, t.outOff, lossyOut, r.StdoutSpill, r.StdoutBinary = t.p.stdout.readFrom(t.outOff)
	r.Stderr, t.errOff, lossyErr, r.StderrSpill, r.StderrBinary = t.p.stderr.readFrom(t.errOff)
	r.Lossy = lossyOut || lossyErr
	return r, nil
}

// Kill ends a task's processes (SIGTERM, then SIGKILL after the grace
// period) and waits until it is gone or ctx is done. The task's status is
// Killed from the moment Kill returns true.
func (e *Executor) Kill(ctx context.Context, owner bash.Owner, id bash.TaskID) (bool, error) {
	e.mu.Lock()
	t, err := e.lookupLocked(owner, id)
	if err != nil {
		e.mu.Unlock()
		return false, err
	}
	if t.status != bash.StatusRunning || !t.p.kill(reasonKill) {
		e.mu.Unlock()
		return false, nil
	}
	t.status = bash.StatusKilled
	t.silent = true // the caller is told by our return value; no notice
	done := t.p.done
	e.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return true, nil
}

// List returns owner's tasks, oldest first.
func (e *Executor) List(_ context.Context, owner bash.Owner) []bash.Task {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []bash.Task
	for _, t := range e.order {
		if t.owner == owner {
			out = append(out, e.snapshotLocked(t))
		}
	}
	return out
}

// KillOwner kills owner's running tasks without notifying their OnDone
// callbacks, waits for them to exit (until ctx is done), and then forgets
// the owner's ended tasks so a long session does not accumulate them.
func (e *Executor) KillOwner(ctx context.Context, owner bash.Owner) error {
	e.mu.Lock()
	var waits []<-chan struct{}
	for _, t := range e.order {
		if t.owner != owner {
			continue
		}
		t.silent = true
		if t.status == bash.StatusRunning && t.p.kill(reasonKill) {
			t.status = bash.StatusKilled
		}
		if !t.ended {
			waits = append(waits, t.p.done)
		}
	}
	e.mu.Unlock()
	for _, done := range waits {
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("bash: waiting for tasks of %q to exit: %w", owner, ctx.Err())
		}
	}
	e.mu.Lock()
	kept := e.order[:0]
	for _, t := range e.order {
		if t.owner == owner && t.ended {
			delete(e.tasks, t.id)
			continue
		}
		kept = append(kept, t)
	}
	clear(e.order[len(kept):])
	e.order = kept
	e.mu.Unlock()
	return nil
}

// Close kills every process the executor started — background tasks and
// foreground commands alike — waits for all of them to be gone, and removes
// the executor's private spill directory. OnDone callbacks are not called
// for tasks Close ends. Later calls fail with bash.ErrClosed; Close itself
// is idempotent.
func (e *Executor) Close() error {
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		for p, isTask := range e.live {
			if isTask {
				p.kill(reasonKill)
			} else {
				p.kill(reasonAbort) // a foreground caller sees its command aborted
			}
		}
		for _, t := range e.order {
			t.silent = true
			if t.status == bash.StatusRunning {
				t.status = bash.StatusKilled
			}
		}
	}
	e.mu.Unlock()
	e.wg.Wait()
	e.start.stop() // every shell has been reaped

	e.mu.Lock()
	e.tasks, e.order = map[bash.TaskID]*task{}, nil
	e.mu.Unlock()

	e.spillMu.Lock()
	defer e.spillMu.Unlock()
	e.spillClosed = true
	if e.ownSpillDir && e.spillDir != "" {
		dir := e.spillDir
		e.spillDir = ""
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("bash/local: removing spill directory: %w", err)
		}
	}
	return nil
}

// launch validates req and spawns its process, registered but not begun.
func (e *Executor) launch(req bash.ExecRequest, isTask bool) (*proc, error) {
	if strings.TrimSpace(req.Command) == "" {
		return nil, errors.New("bash: empty command")
	}
	if req.Workdir == "" {
		return nil, errors.New("bash: workdir is required")
	}
	if !filepath.IsAbs(req.Workdir) {
		// A relative path would silently depend on dsh's own cwd.
		return nil, fmt.Errorf("bash: workdir %q is not absolute", req.Workdir)
	}
	for name, value := range req.Env {
		if name == "" || strings.ContainsAny(name, "=\x00") || strings.ContainsRune(value, 0) {
			return nil, fmt.Errorf("bash: invalid environment entry %q", name)
		}
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, bash.ErrClosed
	}
	e.wg.Add(1)
	e.mu.Unlock()

	p, err := spawn(spawnSpec{
		shell:    e.shell,
		command:  req.Command,
		workdir:  req.Workdir,
		env:      childEnv(os.Environ(), e.cfg.ScrubEnv, req.Env),
		stdin:    req.Stdin,
		grace:    e.cfg.Grace,
		maxBytes: e.cfg.MaxOutputBytes,
		spill:    e.spillOpener,
		starter:  &e.start,
		sandbox:  e.sandboxFor(req),
		policy:   req.Sandbox,
		onOutput: req.OnOutput,
	})
	if err != nil {
		e.wg.Done()
		return nil, err
	}
	e.mu.Lock()
	e.live[p] = isTask
	closed := e.closed
	e.mu.Unlock()
	if closed {
		p.kill(reasonAbort)
	}
	return p, nil
}

// sandboxFor returns the sandbox a request runs in: the executor's, when
// the request carries a policy.
func (e *Executor) sandboxFor(req bash.ExecRequest) sandbox.Sandbox {
	if req.Sandbox == nil {
		return nil
	}
	return e.cfg.Sandbox
}

// procExited is the completion hook of p (and of its task t, if any): it
// publishes the outcome before p.done closes, then notifies and releases
// the executor's hold after.
func (e *Executor) procExited(p *proc, t *task) func(*proc) func() {
	return func(*proc) func() {
		var notify func(bash.Task)
		var snap bash.Task
		e.mu.Lock()
		delete(e.live, p)
		if t != nil {
			t.ended = true
			if t.status == bash.StatusRunning {
				t.status = bash.StatusCompleted
			}
			snap = e.snapshotLocked(t)
			if !t.silent && !e.closed {
				notify = t.onDone
			}
		}
		e.mu.Unlock()
		return func() {
			defer e.wg.Done()
			if notify != nil {
				e.notify(notify, snap)
			}
		}
	}
}

func (e *Executor) notify(fn func(bash.Task), t bash.Task) {
	defer func() {
		if r := recover(); r != nil {
			e.log.Error("bash: OnDone callback panicked", "task", t.ID, "panic", r)
		}
	}()
	fn(t)
}

func (e *Executor) lookupLocked(owner bash.Owner, id bash.TaskID) (*task, error) {
	if e.closed {
		return nil, bash.ErrClosed
	}
	t, ok := e.tasks[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", bash.ErrUnknownTask, id)
	}
	if t.owner != "" && t.owner != owner {
		return nil, fmt.Errorf("%w: %s", bash.ErrNotOwner, id)
	}
	return t, nil
}

func (e *Executor) snapshotLocked(t *task) bash.Task {
	s := bash.Task{
		ID:      t.id,
		Command: t.command,
		Workdir: t.workdir,
		Owner:   t.owner,
		Status:  t.status,
		Started: t.p.started,
		Done:    t.p.done,
	}
	if t.ended {
		s.ExitCode, s.Signal, s.Ended = t.p.exitCode, t.p.signal, t.p.ended
	}
	s.Sandbox = t.p.sandboxReport()
	return s
}

func (e *Executor) timeout(d time.Duration) (time.Duration, error) {
	switch {
	case d < 0:
		return 0, fmt.Errorf("bash: timeout must be positive, got %v", d)
	case d == 0:
		return e.cfg.Timeout, nil
	default:
		return min(d, e.cfg.MaxTimeout), nil
	}
}

// spillOpener returns the function a stream's collector calls the first
// time it overflows.
func (e *Executor) spillOpener(stream string) func() (*os.File, error) {
	return func() (*os.File, error) {
		dir, err := e.spillDirectory()
		if err != nil {
			return nil, err
		}
		var rnd [6]byte
		_, _ = rand.Read(rnd[:]) // never fails (crypto/rand panics instead)
		// Unpredictable and exclusively created: another local user cannot
		// pre-create or symlink the file we are about to fill.
		name := fmt.Sprintf("dsh-bash-%d-%d-%x-%s.log", os.Getpid(), e.spillSeq.Add(1), rnd, stream)
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("bash: creating spill file: %w", err)
		}
		return f, nil
	}
}

func (e *Executor) spillDirectory() (string, error) {
	e.spillMu.Lock()
	defer e.spillMu.Unlock()
	if e.spillClosed {
		return "", bash.ErrClosed
	}
	if e.spillDir != "" {
		return e.spillDir, nil
	}
	if e.cfg.SpillDir != "" {
		if err := os.MkdirAll(e.cfg.SpillDir, 0o700); err != nil {
			return "", fmt.Errorf("bash: creating spill directory: %w", err)
		}
		e.spillDir = e.cfg.SpillDir
		return e.spillDir, nil
	}
	dir, err := os.MkdirTemp("", "dsh-bash-") // 0700
	if err != nil {
		return "", fmt.Errorf("bash: creating spill directory: %w", err)
	}
	e.spillDir, e.ownSpillDir = dir, true
	return dir, nil
}
