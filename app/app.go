// Package app composes dsh's application: the ordered plugin list
// ([Plugins], in plugins.go) installed on a core host for one working
// directory, from the configuration the settings pipeline built. Front
// doors (the terminal UI, headless mode, the ACP server) drive agents
// created here.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/checkpoint"
	"github.com/dshq/dsh/commands"
	"github.com/dshq/dsh/compact"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/doctor"
	"github.com/dshq/dsh/hooks"
	"github.com/dshq/dsh/hooks/transcript"
	"github.com/dshq/dsh/internal/redact"
	"github.com/dshq/dsh/llm/pricing"
	"github.com/dshq/dsh/llm/providers"
	"github.com/dshq/dsh/mcp"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/skills"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/backends"
	"github.com/dshq/dsh/store/postgres"
	"github.com/dshq/dsh/subagent"
	"github.com/dshq/dsh/tool"
)

// Options configure an app.
type Options struct {
	// Config is the configuration the settings pipeline built
	// ([settings.Load] with [Schema]); nil is [settings.Empty]: every
	// capability with its defaults.
	Config *settings.Config
	// Site is where the app runs: $DSH_HOME, the working directory
	// (absolute), the environment, the HTTP client, trust, and the file
	// and shell wrappers of a front door (the ACP server's editor).
	Site   core.Site
	Logger *slog.Logger
	Now    func() time.Time
	// Invariants enables the live contract checker.
	Invariants bool
}

// App is a composed application: a host with the plugins of [Plugins]
// installed, and what they provide, for front doors.
type App struct {
	Host *core.Host
	// Config is the configuration the app was built from.
	Config *settings.Config
	// Coordinator persists sessions (the store plugin).
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
	// Subagents runs child agents (nil when the plugin is off).
	Subagents *subagent.Service
	// MCP runs the configured MCP servers (tools mcp__<server>__<tool>);
	// ACP sessions add theirs with MCP.AddSessionServers. Nil when off.
	MCP *mcp.Manager
	// Permission is the installed checker.
	Permission *permission.Checker
	// Doctor holds each capability's health checks (`dsh doctor`).
	Doctor *doctor.Registry
	// Commands are the custom slash commands (nil when the plugin is off).
	Commands *commands.Commands
	// Skills are the skills of working directories (nil when off).
	Skills *skills.Skills
	// Transcripts keeps a Claude Code-format transcript of every session
	// (hooks' transcript_path).
	Transcripts *transcript.Writer
	// Prices is the price table every front door reads cost from (the
	// models plugin's: list prices under the "pricing" settings).
	Prices *pricing.Table
	// Checkpoints records the workspace per turn and step and rewinds
	// sessions (nil when the plugin is off).
	Checkpoints *checkpoint.Checkpoints
	hooks       *hooks.Bridges
	opts        Options
}

// ErrNoModel is returned when a model was named but nothing serves it.
var ErrNoModel = providers.ErrUnknownModel

// ErrStoreOpen is returned when the session store cannot be opened (a full
// disk, a damaged database): nothing could be saved, so nothing runs.
var ErrStoreOpen = backends.ErrOpen

// New builds the app: a host for the site, with every plugin of [Plugins]
// that the configuration leaves on, installed in order. A configuration
// error (a rule that does not parse, a model nothing serves) is marked
// [core.ErrConfig].
func New(ctx context.Context, o Options) (*App, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Config == nil {
		o.Config = settings.Empty()
	}
	if !filepath.IsAbs(o.Site.Cwd) {
		return nil, fmt.Errorf("app: working directory must be absolute, got %q", o.Site.Cwd)
	}
	h, err := core.New(core.Options{Logger: o.Logger, Clock: o.Now, Invariants: o.Invariants, Site: o.Site,
		Secrets: configSecrets(o.Config)})
	if err != nil {
		return nil, err
	}
	for _, w := range o.Config.Warnings() {
		o.Logger.Warn(w)
	}
	for _, n := range o.Config.Notes() {
		o.Logger.Info("settings: "+n.Text, "file", n.Path)
	}
	if err := h.Install(ctx, Plugins(), o.Config, enabled(o.Config)); err != nil {
		_ = h.Close(ctx)
		if errors.Is(err, core.ErrConfig) {
			return nil, err
		}
		var pe *core.PluginError
		if errors.As(err, &pe) && errors.Is(err, ErrStoreOpen) {
			err = pe.Err // the store's own message names the file
		}
		return nil, fmt.Errorf("app: %w", err)
	}
	a := &App{Host: h, Config: o.Config, opts: o}
	a.Coordinator, _ = core.Lookup[*store.Coordinator](h)
	a.Compactor, _ = core.Lookup[*compact.Compactor](h)
	a.Subagents, _ = core.Lookup[*subagent.Service](h)
	a.MCP, _ = core.Lookup[*mcp.Manager](h)
	a.Permission, _ = core.Lookup[*permission.Checker](h)
	a.hooks, _ = core.Lookup[*hooks.Bridges](h)
	a.Doctor, _ = core.Lookup[*doctor.Registry](h)
	a.Commands, _ = core.Lookup[*commands.Commands](h)
	a.Skills, _ = core.Lookup[*skills.Skills](h)
	if a.Doctor != nil {
		if err := h.Scope.Add(a.Doctor.Add("settings", func(context.Context) []doctor.Finding { return settingsFindings(o.Config) })); err != nil {
			_ = h.Close(ctx)
			return nil, fmt.Errorf("app: %w", err)
		}
	}
	a.Transcripts, _ = core.Lookup[*transcript.Writer](h)
	a.Prices, _ = core.Lookup[*pricing.Table](h)
	a.Checkpoints, _ = core.Lookup[*checkpoint.Checkpoints](h)
	sel, _ := core.Lookup[providers.Selection](h)
	a.Model, a.Demo, a.DemoFallback = sel.Model, sel.Demo, sel.DemoFallback
	return a, nil
}

// AgentOptions are the per-agent options from the configuration: the
// model, the appended system prompt, the step limit (maxSteps, which
// --max-turns sets) and the approver, wrapped so PermissionRequest hooks
// see every question first.
func (a *App) AgentOptions(approver tool.Approver) agent.Options {
	if a.hooks != nil {
		approver = a.hooks.Approver(approver)
	}
	return agent.Options{
		Model:        a.Model,
		SystemPrompt: SystemPromptKey.Get(a.Config),
		Approver:     approver,
		MaxSteps:     MaxStepsKey.Get(a.Config),
	}
}

// Start creates an agent on a new session in the app's working directory.
func (a *App) Start(ctx context.Context, approver tool.Approver) (*agent.Handle, error) {
	return a.Host.Agents.Create(ctx, agent.CreateOptions{
		AgentID: agent.ID("main-" + fmt.Sprint(a.opts.Now().UnixNano())),
		Header:  session.Header{Cwd: a.opts.Site.Cwd},
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
	infos, err := a.Coordinator.List(ctx, store.Query{Cwd: a.opts.Site.Cwd})
	if err != nil {
		return "", err
	}
	if len(infos) == 0 {
		return "", fmt.Errorf("app: no session to continue in %s", a.opts.Site.Cwd)
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
func (a *App) Hooks() []*hooks.Bridge {
	if a.hooks == nil {
		return nil
	}
	var out []*hooks.Bridge
	for _, b := range []*hooks.Bridge{a.hooks.Claude, a.hooks.Codex} {
		if b != nil {
			out = append(out, b)
		}
	}
	return out
}

// SetEndReason records why an agent's session ends (clear, resume,
// logout, prompt_input_exit) for its SessionEnd hooks; call it before
// disposing the agent. Without it the reason is "other".
func (a *App) SetEndReason(id agent.ID, reason string) {
	if a.hooks != nil {
		a.hooks.SetEndReason(id, reason)
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
		// A server whose resources/list fails is a finding too (its
		// resources are missing from @ completion).
		_, _ = a.MCP.Resources(wctx)
		cancel()
	}
	return a.Doctor.Run(ctx)
}

// Close disposes agents, drains the store and stops background processes.
func (a *App) Close(ctx context.Context) error { return a.Host.Close(ctx) }

// settingsFindings reports the settings files for dsh doctor: each layer
// in force with its keys, the project's layers held back until trust,
// other tools' files that could not be used, and the keys of theirs dsh
// does not use.
func settingsFindings(c *settings.Config) []doctor.Finding {
	var out []doctor.Finding
	for _, f := range c.Files() {
		if f.Layer == settings.LayerCLI {
			continue
		}
		what := "used"
		if f.From != "" {
			what = "used (" + f.From + "'s file)"
		}
		keys := f.Keys()
		msg := what + ": " + strings.Join(keys, ", ")
		if len(keys) == 0 {
			msg = what + ": nothing dsh reads"
		}
		out = append(out, doctor.Finding{Severity: doctor.OK, Subject: f.Path, Message: msg})
	}
	for _, f := range c.Ignored() {
		out = append(out, doctor.Finding{Severity: doctor.Warning, Subject: f.Path, Message: "skipped: the project is not trusted yet",
			Fix: "trust the project (run dsh here interactively, or pass --trust)"})
	}
	for _, n := range c.Skipped() {
		out = append(out, doctor.Finding{Severity: doctor.Warning, Subject: n.Path, Message: "skipped: malformed: " + n.Text})
	}
	for _, n := range c.Notes() {
		out = append(out, doctor.Finding{Severity: doctor.Info, Subject: n.Path, Message: "unknown key ignored: " + n.Text})
	}
	return out
}

// configSecrets are the secrets the settings name beyond the environment's
// credential-named variables, for the host's redaction: the variables a
// provider reads its key from under any name (a custom apiKeyEnv, a
// header's variables), the "env" setting's credential-named entries (given
// to every command), and the password of the configured database URL.
func configSecrets(c *settings.Config) []string {
	out := redact.EnvValues(os.Environ(), providers.SecretEnvNames(providers.FromSettings(c))...)
	var env []string
	for k, v := range EnvKey.Get(c) {
		env = append(env, k+"="+v)
	}
	if u := postgres.Key.Get(c).URL; u != "" {
		env = append(env, "DATABASE_URL="+u)
	}
	return append(out, redact.EnvValues(env)...)
}
