// Package core composes dsh's spine: the live session store, the model
// registry, the tool registry, prompt assembly, the agent registry and the
// loop, plus the invariants checker when asked. Everything else (adapters,
// tools, persistence, hooks, front-ends) is a [Plugin] loaded into a [Host].
package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/internal/redact"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/llm"
	"github.com/dshq/dsh/loop"
	"github.com/dshq/dsh/prompt"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/session/invariants"
	"github.com/dshq/dsh/tool"
)

// Options configure the spine.
type Options struct {
	Logger *slog.Logger
	Clock  func() time.Time
	NewID  func() string
	// Invariants enables the live contract checker (tests, dev builds).
	Invariants bool
	// Site is where the application runs (directories, environment,
	// trust); plugins read it from [Host.Site].
	Site Site
	// Secrets are values known to be secret beyond those of the process
	// environment (which are always known; see [Host.Secrets]).
	Secrets []string
}

// Host is a running spine.
type Host struct {
	Scope    *kernel.Scope
	Sessions *session.Live
	LLM      *llm.Service
	Tools    *tool.Registry
	Prompt   *prompt.Builder
	Agents   *agent.Registry
	Loop     *loop.Loop
	Logger   *slog.Logger
	// Site is where the application runs.
	Site Site
	// Now is the host's clock (Options.Clock, else time.Now).
	Now func() time.Time
	// Secrets are the values every session of the host scrubs from each
	// event before it is appended: the process environment's credentials
	// (redact.EnvValues) from the start, and whatever plugins Add as they
	// read secrets from settings. Nothing can append around it, so no
	// front door, tool or plugin records a known secret.
	Secrets *redact.Set

	mu        sync.Mutex
	provided  map[reflect.Type]any // Provide, Need, Lookup
	installed []string
}

// Plugin extends a host. Everything it registers through scope is undone
// when the plugin is unloaded or the host closes.
type Plugin func(ctx context.Context, h *Host, scope *kernel.Scope) error

// New builds a spine.
func New(opts Options) (*Host, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Host{
		Scope:    kernel.NewScope("host"),
		Sessions: session.NewLive(opts.Clock),
		LLM:      llm.NewService(),
		Tools:    tool.NewRegistry(),
		Prompt:   prompt.New(),
		Agents:   agent.NewRegistry(),
		Logger:   opts.Logger,
		Site:     opts.Site,
		Now:      opts.Clock,
		Secrets:  redact.NewSet(append(redact.EnvValues(os.Environ()), opts.Secrets...)...),
		provided: map[reflect.Type]any{},
	}
	h.Sessions.Redact = h.Secrets
	if h.Now == nil {
		h.Now = time.Now
	}
	h.Loop = loop.New(loop.Deps{Agents: h.Agents, Sessions: h.Sessions, LLM: h.LLM, Tools: h.Tools,
		Prompt: h.Prompt, Logger: opts.Logger, NewID: opts.NewID, Now: opts.Clock})
	if err := h.Loop.Install(h.Scope); err != nil {
		return nil, err
	}
	if opts.Invariants {
		if err := invariants.Install(h.Scope, h.Sessions); err != nil {
			return nil, err
		}
		if err := invariants.InstallStatus(h.Scope, h.Agents.Hub.Status); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// Use loads a plugin into a child scope; if it fails, whatever it
// registered is undone. The returned function unloads it.
func (h *Host) Use(ctx context.Context, name string, p Plugin) (unload func() error, err error) {
	s := h.Scope.Child(name)
	if err := p(ctx, h, s); err != nil {
		_ = s.Close()
		if errors.Is(err, ErrConfig) {
			return nil, err
		}
		return nil, &PluginError{Name: name, Err: err}
	}
	return s.Close, nil
}

// PluginError is a plugin's failure to install, naming the plugin.
type PluginError struct {
	Name string
	Err  error
}

func (e *PluginError) Error() string { return fmt.Sprintf("core: plugin %s: %v", e.Name, e.Err) }
func (e *PluginError) Unwrap() error { return e.Err }

// Close disposes every live agent (so their turns close and flush), then
// unloads every plugin in reverse order.
func (h *Host) Close(ctx context.Context) error {
	return errors.Join(h.Loop.DisposeAll(), h.Scope.Close())
}
