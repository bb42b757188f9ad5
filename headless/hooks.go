package headless

import (
	"maps"
	"sync"

	"github.com/dshq/dsh/hooks"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/permission"
	"github.com/dshq/dsh/session"
)

// sdkHooks runs the hook callbacks the SDK registers in initialize, with
// Claude Code's hook protocol (payloads, matchers, answers), through a
// hook bridge of their own: the callbacks are in-process hooks
// (hooks.Hook.Func) that ask the SDK over the control protocol.
type sdkHooks struct {
	mu     sync.Mutex
	events map[string][]hooks.Group
	scope  *kernel.Scope
}

// install puts the bridge on the app's points. It is installed before the
// permission prompt (so canUseTool is asked after PreToolUse callbacks
// ran, as in Claude Code) and outside the permission layer: a callback's
// deny is final, its allow answers the permission question, and its
// updatedInput is the consistent rewrite.
func (r *run) installSDKHooks() (*sdkHooks, error) {
	s := &sdkHooks{events: map[string][]hooks.Group{}, scope: kernel.NewScope("headless-sdk-hooks")}
	a := r.a
	mode := func(id session.ID) string {
		if a.Permission == nil {
			return string(permission.ModeDefault)
		}
		return string(a.Permission.SessionMode(string(id)))
	}
	b := hooks.New(hooks.Options{Dialect: hooks.Claude, Config: s.config, Trusted: func(string) bool { return true },
		Mode: mode, Model: a.Model, Logger: r.o.Logger.With("component", "sdk-hooks")}, a.Host.Agents)
	if err := b.Install(s.scope, a.Host.Tools, a.Host.Sessions, a.Compactor); err != nil {
		_ = s.scope.Close()
		return nil, err
	}
	return s, nil
}

func (s *sdkHooks) config(string) *hooks.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &hooks.Config{Dialect: hooks.Claude, Events: maps.Clone(s.events)}
}

func (s *sdkHooks) add(event string, groups ...hooks.Group) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events[event] = append(s.events[event], groups...)
}

func (s *sdkHooks) close() { _ = s.scope.Close() }
