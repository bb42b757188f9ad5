// Package app composes dsh's terminal and headless application: the core
// spine, the JSONL session store under $DSH_HOME, the model adapters from
// settings (or the offline demo model), the workspace tools and the base
// system prompt. Front-ends (the terminal UI, headless mode, the ACP
// server) drive agents created here.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/bash/local"
	"github.com/dshq/dsh/compact"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/doctor"
	"github.com/dshq/dsh/fs"
	fslocal "github.com/dshq/dsh/fs/local"
	"github.com/dshq/dsh/fs/policy"
	"github.com/dshq/dsh/hooks"
	"github.com/dshq/dsh/hooks/transcript"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/llm/demo"
	"github.com/dshq/dsh/llm/providers"
	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/prompt"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/backends"
	"github.com/dshq/dsh/subagent"
	"github.com/dshq/dsh/tool"
	"github.com/dshq/dsh/tools/bashtool"
	"github.com/dshq/dsh/tools/fstool"
	"github.com/dshq/dsh/tools/searchtool"
	"github.com/dshq/dsh/tools/task"
	"github.com/dshq/dsh/tools/todo"
	"github.com/dshq/dsh/tools/webtool"
	webproviders "github.com/dshq/dsh/web/providers"
)

// Options configure an app.
type Options struct {
	Home     string // $DSH_HOME
	Cwd      string // absolute working directory
	Settings settings.Settings
	Env      func(string) string
	// HTTPClient for model adapters (tests pass a loopback client).
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Model is --model; empty uses settings, $DSH_MODEL, then the first
	// configured provider, then the offline demo.
	Model              string
	AppendSystemPrompt string
	MaxTurns           int
	AddDirs            []string
	Now                func() time.Time
	// Sources are the settings files that were read, by layer (hooks from
	// project layers need trust).
	Sources []settings.Source
	// UserHome is the user's home directory (for ~/.claude and ~/.codex
	// hook files); empty skips user hook files.
	UserHome string
	// TrustProject lets project hooks run (the user trusted the directory).
	TrustProject func(dir string) bool
	// Permission is the permission checker (modes, rules, session rules);
	// nil allows everything the tools allow.
	Permission *permission.Checker
	// NoSync skips fsync (tests, benchmarks).
	NoSync bool
	// Invariants enables the live contract checker.
	Invariants bool
	// WrapFS and WrapExec, when set, wrap the filesystem provider and the
	// bash executor the tools run on (the ACP server delegates edits and
	// commands to the editor through them).
	WrapFS   func(fs.Provider) fs.Provider
	WrapExec func(bash.Executor) bash.Executor
	// Version is dsh's version (written into transcripts).
	Version string
	// Warn receives problems the user must see while the app runs (a hook
	// that timed out, an unsupported hook type): headless runs print them
	// on stderr. Nil: the log only.
	Warn func(msg string)
	// Stopping closes on dsh's first stop signal, Aborting on its second:
	// SessionEnd hooks then get a short grace, or are stopped at once.
	Stopping, Aborting <-chan struct{}
}

// App is a composed application.
type App struct {
	Host        *core.Host
	Coordinator *store.Coordinator
	// Model is the resolved model reference; Demo says it is the offline
	// demo model.
	Model string
	Demo  bool
	// DemoFallback says the demo was picked because nothing else is
	// configured (not chosen by --model, DSH_MODEL or settings).
	DemoFallback bool
	// Compactor keeps sessions inside the context window (and serves
	// /compact).
	Compactor *compact.Compactor
	// Subagents runs child agents.
	Subagents *subagent.Service
	// MCP runs the configured MCP servers (tools mcp__<server>__<tool>);
	// ACP sessions add theirs with MCP.AddSessionServers.
	MCP *mcp.Manager
	// Permission is the installed checker (nil when none).
	Permission *permission.Checker
	// Doctor holds each capability's health checks (`dsh doctor`).
	Doctor *doctor.Registry
	// Transcripts keeps a Claude Code-format transcript of every session
	// (hooks' transcript_path).
	Transcripts *transcript.Writer
	bridges     []*hooks.Bridge
	opts        Options
	exec        *local.Executor
}

// ErrNoModel is returned when a model was named but nothing serves it.
var ErrNoModel = errors.New("app: unknown model")

// ErrStoreOpen is returned when the session store cannot be opened (a full
// disk, a damaged database): nothing could be saved, so nothing runs.
var ErrStoreOpen = errors.New("opening the session store")

// New builds the app.
func New(ctx context.Context, o Options) (*App, error) {
	if o.Env == nil {
		o.Env = os.Getenv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if !filepath.IsAbs(o.Cwd) {
		return nil, fmt.Errorf("app: working directory must be absolute, got %q", o.Cwd)
	}
	h, err := core.New(core.Options{Logger: o.Logger, Clock: o.Now, Invariants: o.Invariants})
	if err != nil {
		return nil, err
	}
	a := &App{Host: h, opts: o, Permission: o.Permission, Doctor: &doctor.Registry{}}
	fail := func(err error) (*App, error) {
		_ = h.Close(ctx)
		return nil, err
	}
	// Sessions.
	storeName, warnings := settings.SessionStore(o.Sources)
	for _, w := range warnings {
		o.Logger.Warn(w)
	}
	backend, err := backends.Open(o.Home, storeName, o.NoSync)
	if err != nil {
		return fail(fmt.Errorf("app: %w: %w", ErrStoreOpen, err))
	}
	coord, err := store.Attach(h.Scope, h.Sessions, backend, store.Options{Logf: func(f string, args ...any) {
		o.Logger.Warn(fmt.Sprintf(f, args...))
	}})
	if err != nil {
		return fail(err)
	}
	a.Coordinator = coord
	_ = h.Scope.Add(h.Agents.SetLoader(coord))
	// A disposed agent's session is written out (its loop flushed at exit)
	// and released: its lock and buffers go, so a long-running server does
	// not accumulate them, and another process may resume it.
	_ = h.Scope.Add(h.Agents.Hub.Disposed.Listen(func(ctx context.Context, ag agent.Agent) error {
		if err := coord.Release(context.WithoutCancel(ctx), ag.Session().ID()); err != nil {
			o.Logger.Warn("releasing a session failed", "session", ag.Session().ID(), "err", err)
		}
		return nil
	}))
	// Models.
	if err := a.installModels(ctx); err != nil {
		return fail(err)
	}
	// Tools.
	if err := a.installTools(); err != nil {
		return fail(err)
	}
	// MCP servers (lazy: nothing starts before the first call).
	if a.enabled("mcp") {
		if err := a.installMCP(ctx); err != nil {
			return fail(err)
		}
	}
	// Compaction before every step (settings compaction.manual turns the
	// automatic part off; /compact always works).
	a.Compactor = compact.New(o.Settings.Compaction, h.LLM, h.Agents.Hub, o.Logger)
	if err := a.Compactor.Install(h.Scope); err != nil {
		return fail(err)
	}
	// A summary can swallow the last todo_write: restate an unfinished list.
	_ = h.Scope.Add(a.Compactor.Done.Listen(func(ctx context.Context, out compact.Outcome) error {
		if out.Err != nil || !out.Summarized || out.Agent == nil {
			return nil
		}
		text := todo.Restate(out.Agent.Session().Events(), out.Shadowed.End)
		if text == "" {
			return nil
		}
		return out.Agent.Inject(ctx, []llm.Block{llm.Text(text)}, llm.PluginSource(todo.Name))
	}, kernel.Named("todo")))
	// Subagents: task (spawn) and fork, with custom agent definitions.
	if a.enabled("subagents") {
		if err := a.installSubagents(); err != nil {
			return fail(err)
		}
	}
	// A Claude Code-format transcript of every session, written as events
	// happen (what hooks read through transcript_path).
	a.Transcripts = transcript.New(filepath.Join(o.Home, transcript.Dir), o.Version, o.Logger)
	if err := a.Transcripts.Install(h.Scope, h.Sessions); err != nil {
		return fail(err)
	}
	// Hooks of both dialects.
	if a.enabled("hooks") {
		if err := a.installHooks(); err != nil {
			return fail(err)
		}
	}
	// Permissions last: their listener is outermost, so hooks may tighten
	// a decision but only an explicit hook "allow" answers an ask.
	if o.Permission != nil {
		if _, err := h.Use(ctx, "permission", o.Permission.Plugin()); err != nil {
			return fail(err)
		}
	}
	// Prompt.
	_ = h.Scope.Add(h.Prompt.Section(prompt.Section{Name: "identity", Order: 0, Text: identity}))
	_ = h.Scope.Add(h.Prompt.Section(prompt.Section{Name: "environment", Order: 10, Dynamic: func(context.Context) string {
		return fmt.Sprintf("Environment: working directory %s; platform %s/%s; today is %s.",
			o.Cwd, runtime.GOOS, runtime.GOARCH, o.Now().Format("2006-01-02"))
	}}))
	return a, nil
}

const identity = `You are dsh, a coding agent working in the user's repository through tools.
Work in small verified steps: read before you edit, run the tests or the command that proves a change, and say plainly what you did not do.
Prefer the dedicated tools (read, edit, write, glob, grep, ls) over shell equivalents; use bash for builds, tests and git.
Keep answers short; use Markdown for code.`

func (a *App) installModels(ctx context.Context) error {
	h, o := a.Host, a.opts
	cfg := o.Settings.ProvidersConfig()
	dispose, err := providers.Install(h.LLM, cfg, o.Env, o.HTTPClient)
	if err != nil {
		return fmt.Errorf("app: model providers: %w", err)
	}
	_ = h.Scope.Add(dispose)
	if d, err := h.LLM.Register(demo.Models(), demo.Adapter{}); err == nil {
		_ = h.Scope.Add(d)
		h.LLM.Alias("demo", demo.ModelID)
	}
	model := o.Model
	if model == "" {
		model = providers.DefaultModel(cfg, o.Env)
	}
	if model == "" {
		a.Model, a.Demo, a.DemoFallback = demo.ModelID, true, true
		return nil
	}
	id, _, ok := h.LLM.Resolve(model)
	if !ok {
		var names []string
		for _, m := range h.LLM.Models() {
			names = append(names, m.ID)
		}
		return fmt.Errorf("%w %q; available: %s (configure providers in settings, or set an API key such as DEEPSEEK_API_KEY)", ErrNoModel, model, strings.Join(names, ", "))
	}
	a.Model = id
	a.Demo = id == demo.ModelID
	return nil
}

func (a *App) installTools() error {
	h, o := a.Host, a.opts
	// Commands never see the variables the model providers take their
	// keys from, whatever settings named them.
	exec, err := local.New(local.Config{Logger: o.Logger, ScrubEnv: providers.SecretEnvNames(o.Settings.ProvidersConfig())})
	if err != nil {
		return fmt.Errorf("app: bash executor: %w", err)
	}
	a.exec = exec
	_ = h.Scope.Defer(exec.Close)
	fsp, err := fslocal.New(fslocal.Options{Cwd: o.Cwd})
	if err != nil {
		return fmt.Errorf("app: filesystem: %w", err)
	}
	tracker := policy.New()
	var runner bash.Executor = exec
	if o.WrapExec != nil {
		runner = o.WrapExec(runner)
	}
	var files fs.Provider = fsp
	if o.WrapFS != nil {
		files = o.WrapFS(files)
	}
	var tools []tool.Tool
	tools = append(tools, bashtool.Tools(runner, bashtool.Options{Logger: o.Logger, Env: o.Settings.Env})...)
	tools = append(tools, fstool.Tools(files, tracker, fstool.Options{})...)
	// Searches are decided by the directory they name; the files in it
	// that permission rules deny reading are left out of their results.
	var searchOpts searchtool.Options
	if o.Permission != nil {
		searchOpts.Denied = o.Permission.SearchFilter
	}
	tools = append(tools, searchtool.Tools(searchOpts)...)
	tools = append(tools, todo.New())
	// Web: web_fetch always; web_search only when a search provider is
	// available. DeepSeek's search costs a model call per search and is only
	// used when settings name it.
	env := func(k string) string {
		if k == "DEEPSEEK_API_KEY" && (o.Settings.Web == nil || o.Settings.Web.SearchProvider != "deepseek") {
			return ""
		}
		if v, ok := o.Settings.Env[k]; ok {
			return v
		}
		return o.Env(k)
	}
	if a.enabled("web") {
		webSvc, err := webproviders.New(webproviders.FromSettings(o.Settings.Web), env, o.HTTPClient)
		if err != nil {
			return fmt.Errorf("app: web: %w", err)
		}
		_ = h.Scope.Defer(webSvc.Close)
		tools = append(tools, webtool.Tools(webSvc, webtool.Options{})...)
	}
	return h.Tools.RegisterAll(h.Scope, tools...)
}

// AgentOptions are the per-agent options from flags and settings.
func (a *App) AgentOptions(approver tool.Approver) agent.Options {
	o := a.opts
	// PermissionRequest hooks (Claude Code's, then Codex's) see every
	// question first.
	for i := len(a.bridges) - 1; i >= 0; i-- {
		approver = a.bridges[i].Approver(approver)
	}
	opts := agent.Options{
		Model:        a.Model,
		SystemPrompt: joinNonEmpty(o.Settings.SystemPrompt, o.AppendSystemPrompt),
		Approver:     approver,
		MaxSteps:     o.Settings.MaxSteps,
	}
	if o.MaxTurns > 0 {
		opts.MaxSteps = o.MaxTurns
	}
	return opts
}

func joinNonEmpty(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "\n\n")
}

// Start creates an agent on a new session in the app's working directory.
func (a *App) Start(ctx context.Context, approver tool.Approver) (*agent.Handle, error) {
	return a.Host.Agents.Create(ctx, agent.CreateOptions{
		AgentID: agent.ID("main-" + fmt.Sprint(a.opts.Now().UnixNano())),
		Header:  session.Header{Cwd: a.opts.Cwd},
		Options: a.AgentOptions(approver),
	})
}

// Resume continues a stored session.
func (a *App) Resume(ctx context.Context, id session.ID, approver tool.Approver) (*agent.Handle, error) {
	return a.Host.Agents.Resume(ctx, agent.ResumeOptions{
		AgentID:   agent.ID("main-" + fmt.Sprint(a.opts.Now().UnixNano())),
		SessionID: id,
		Options:   a.AgentOptions(approver),
	})
}

// Latest returns the most recently active session of the working directory.
func (a *App) Latest(ctx context.Context) (session.ID, error) {
	infos, err := a.Coordinator.List(ctx, store.Query{Cwd: a.opts.Cwd})
	if err != nil {
		return "", err
	}
	if len(infos) == 0 {
		return "", fmt.Errorf("app: no session to continue in %s", a.opts.Cwd)
	}
	best := infos[0]
	for _, in := range infos[1:] {
		if in.LastActivity > best.LastActivity {
			best = in
		}
	}
	return best.Header.ID, nil
}

// Hooks returns the hook bridges (Claude Code's, then Codex's), for
// `dsh hooks test` and `replay`; none when the hooks plugin is off.
func (a *App) Hooks() []*hooks.Bridge { return a.bridges }

// SetEndReason records why an agent's session ends (clear, resume,
// logout, prompt_input_exit) for its SessionEnd hooks; call it before
// disposing the agent. Without it the reason is "other".
func (a *App) SetEndReason(id agent.ID, reason string) {
	for _, b := range a.bridges {
		b.SetEndReason(id, reason)
	}
}

// Diagnose collects every capability's findings for `dsh doctor`, after
// starting every MCP server that may run and giving each up to wait to
// connect (so a server that cannot start is reported as failed, with its
// stderr, rather than as not started).
func (a *App) Diagnose(ctx context.Context, wait time.Duration) []doctor.Finding {
	if a.MCP != nil && wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		var wg sync.WaitGroup
		for _, s := range a.MCP.Servers() {
			if s.State == mcp.StateUntrusted || s.State == mcp.StateDisabled {
				continue
			}
			wg.Go(func() { _ = a.MCP.Connect(wctx, s.Name) })
		}
		wg.Wait()
		cancel()
	}
	return a.Doctor.Run(ctx)
}

// Close disposes agents, drains the store and stops background processes.
func (a *App) Close(ctx context.Context) error { return a.Host.Close(ctx) }

// installHooks runs Claude Code and Codex hook files (and dsh's own
// settings "hooks") on the agent points. Configuration is read per working
// directory, so ACP sessions in different projects get their own hooks.
// hookMode is the permission_mode hook payloads carry: the session's mode
// (Claude Code's names are dsh's), "default" without a permission layer.
func (a *App) hookMode(id session.ID) string {
	if a.Permission == nil {
		return string(permission.ModeDefault)
	}
	return string(a.Permission.SessionMode(string(id)))
}

func (a *App) installHooks() error {
	h, o := a.Host, a.opts
	trusted := o.TrustProject
	if trusted == nil {
		trusted = func(string) bool { return false }
	}
	for _, dialect := range []string{hooks.Claude, hooks.Codex} {
		var mu sync.Mutex
		cache := map[string]*hooks.Config{}
		load := func(cwd string) *hooks.Config {
			mu.Lock()
			defer mu.Unlock()
			if c, ok := cache[cwd]; ok {
				return c
			}
			user, proj := hooks.Files(dialect, o.UserHome, cwd)
			c := hooks.Load(dialect, user, proj)
			if dialect == hooks.Claude {
				for _, src := range o.Sources {
					if len(src.Settings.Hooks) == 0 {
						continue
					}
					project := src.Layer == settings.LayerProject || src.Layer == settings.LayerLocal
					if project && cwd != o.Cwd {
						continue // another project's settings do not apply here
					}
					c.AddRaw(src.Path, src.Settings.Hooks, project)
				}
			}
			cache[cwd] = &c
			return &c
		}
		b := hooks.New(hooks.Options{
			Dialect: dialect, Config: load, Runner: hooks.Runner{Exec: a.exec, Prompt: hooks.ModelPrompter(h.LLM)},
			Trusted: trusted, Logger: o.Logger, Model: a.Model, Mode: a.hookMode, Env: o.Settings.Env,
			TranscriptPath: a.Transcripts.Path, Warn: o.Warn, Stopping: o.Stopping, Aborting: o.Aborting,
		}, h.Agents)
		if err := b.Install(h.Scope, h.Tools, h.Sessions, a.Compactor); err != nil {
			return err
		}
		a.bridges = append(a.bridges, b)
		// Problems with this directory's hook files (an unsupported hook
		// type, a file that is not JSON) are reported now, not when the
		// event first fires.
		b.Check(o.Cwd)
		_ = h.Scope.Add(a.Doctor.Add("hooks", func(context.Context) []doctor.Finding {
			return load(o.Cwd).Findings(trusted(o.Cwd))
		}))
		if a.Subagents != nil {
			if err := b.InstallSubagents(h.Scope, a.Subagents.Started, a.Subagents.Ended); err != nil {
				return err
			}
		}
	}
	return nil
}

func (a *App) installSubagents() error {
	h, o := a.Host, a.opts
	svc := subagent.NewService(subagent.Options{Logger: o.Logger})
	a.Subagents = svc
	for _, p := range []subagent.Provider{subagent.Spawn(svc, h.Agents), subagent.Fork(svc, h.Agents)} {
		d, err := svc.Register(p)
		if err != nil {
			return err
		}
		_ = h.Scope.Add(d)
	}
	defs, err := subagent.LoadDefinitions(filepath.Join(o.Home, "agents"), filepath.Join(o.Cwd, ".dsh", "agents"))
	if err != nil {
		o.Logger.Warn("some custom agent definitions could not be read", "err", err)
	}
	return h.Tools.RegisterAll(h.Scope,
		task.Tool("task", "spawn", svc, h.Agents, defs),
		task.Tool("fork", "fork", svc, h.Agents, nil))
}

// installMCP starts the manager of the configured MCP servers.
func (a *App) installMCP(ctx context.Context) error {
	h, o := a.Host, a.opts
	trusted := o.TrustProject
	if trusted == nil {
		trusted = func(string) bool { return false }
	}
	environ := os.Environ()
	for k, v := range o.Settings.Env {
		environ = append(environ, k+"="+v)
	}
	m, err := mcp.New(mcp.Options{
		Tools: h.Tools, Prompt: h.Prompt, Home: o.Home, Cwd: o.Cwd, Trusted: trusted,
		Env:     func(k string) (string, bool) { v := o.Env(k); return v, v != "" },
		Environ: environ,
		Logger:  o.Logger.With("component", "mcp"),
	})
	if err != nil {
		return fmt.Errorf("app: mcp: %w", err)
	}
	a.MCP = m
	_ = h.Scope.Defer(m.Close)
	_ = h.Scope.Add(a.Doctor.Add("mcp", func(context.Context) []doctor.Finding { return m.Findings() }))
	servers, err := mcp.Configured(o.Sources, o.Cwd)
	if err != nil {
		o.Logger.Warn("some MCP servers are misconfigured and were skipped", "err", err)
	}
	if err := m.Start(ctx, servers); err != nil {
		o.Logger.Warn("some MCP servers could not be added", "err", err)
	}
	return nil
}

// enabled reports whether an optional plugin (settings.Plugins) is on:
// settings "enabledPlugins" can switch one off; the default is on.
func (a *App) enabled(name string) bool {
	on, set := a.opts.Settings.EnabledPlugins[name]
	return !set || on
}
