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
	"time"

	"github.com/dshq/dsh/agent"
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
		return nil, fmt.Errorf("core: plugin %s: %w", name, err)
	}
	return s.Close, nil
}

// Close disposes every live agent (so their turns close and flush), then
// unloads every plugin in reverse order.
func (h *Host) Close(ctx context.Context) error {
	return errors.Join(h.Loop.DisposeAll(), h.Scope.Close())
}
