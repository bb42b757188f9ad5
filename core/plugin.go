package core

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/dshq/dsh/bash"
	"github.com/dshq/dsh/fs"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/settings"
)

// Site is where an application runs: the directories, the process
// environment and the network client its plugins use. It is the part of
// a plugin's input that is not settings.
type Site struct {
	// Home is $DSH_HOME: sessions, logs, trust, custom agents.
	Home string
	// Cwd is the working directory (absolute): the project.
	Cwd string
	// UserHome is the user's home directory (~ in permission rules,
	// ~/.claude and ~/.codex files); empty skips user hook files.
	UserHome string
	// Getenv reads the process environment; nil means os.Getenv.
	Getenv func(string) string
	// HTTPClient is for model adapters and web providers (tests pass a
	// loopback client); nil means each one's default.
	HTTPClient *http.Client
	// Trusted reports whether a directory's own configuration (hooks, MCP
	// servers) applies; nil trusts none. The settings pipeline decided it
	// for Cwd; a session resumed from another directory asks for that one.
	Trusted func(dir string) bool
	// NoSync skips fsync (tests, benchmarks).
	NoSync bool
	// WrapFS and WrapExec, when set, wrap the filesystem provider and the
	// shell executor the tools run on (the ACP server sends edits and
	// commands to the editor through them).
	WrapFS   func(fs.Provider) fs.Provider
	WrapExec func(bash.Executor) bash.Executor
	// Version is dsh's version (written into transcripts).
	Version string
	// Warn receives problems the user must see while the app runs (a hook
	// that timed out, an unsupported hook type): headless runs print them
	// on stderr. Nil: the log only.
	Warn func(msg string)
	// Stopping closes on the process's first stop signal, Aborting on its
	// second: SessionEnd hooks then get a short grace, or are stopped at
	// once. Nil: never.
	Stopping, Aborting <-chan struct{}
}

// Env reads one environment variable.
func (s Site) Env(k string) string {
	if s.Getenv == nil {
		return os.Getenv(k)
	}
	return s.Getenv(k)
}

// TrustedDir reports whether dir's own configuration applies.
func (s Site) TrustedDir(dir string) bool { return s.Trusted != nil && s.Trusted(dir) }

// Spec declares one plugin of an application's plugin list: what it is
// called, what it needs installed before it, which settings keys it reads
// and how it is built from the configuration. An application is an
// ordered []Spec (dsh's is app.Plugins); [CheckOrder] and [Host.Install]
// refuse a list in which a plugin comes before one it needs.
type Spec struct {
	// Name is the plugin's name (scopes, errors, enabledPlugins).
	Name string
	// Doc says in one line what the plugin adds.
	Doc string
	// Needs names the plugins that must be installed before this one: it
	// uses what they provide ([Need]) when it installs.
	Needs []string
	// After names optional plugins that, when installed, must come before
	// this one: it uses what they provide if they are there ([Lookup]).
	After []string
	// Optional plugins can be switched off (settings "enabledPlugins").
	Optional bool
	// Settings are the keys the plugin reads; the application's schema is
	// the union of its plugins'.
	Settings settings.Schema
	// New builds the plugin from the configuration.
	New func(cfg *settings.Config) Plugin
}

// Schema returns the settings keys of every plugin in list, in order.
func Schema(list []Spec) settings.Schema {
	var out settings.Schema
	for _, s := range list {
		out = append(out, s.Settings...)
	}
	return out
}

// CheckOrder reports the first declaration the order of list breaks: a
// duplicate or empty name, a Needs or After naming no plugin of the list,
// or naming one listed later (or the plugin itself).
func CheckOrder(list []Spec) error {
	at := map[string]int{}
	for i, s := range list {
		if s.Name == "" {
			return fmt.Errorf("core: plugin %d has no name", i)
		}
		if _, dup := at[s.Name]; dup {
			return fmt.Errorf("core: plugin %s is listed twice", s.Name)
		}
		at[s.Name] = i
	}
	for i, s := range list {
		for _, deps := range [][]string{s.Needs, s.After} {
			for _, d := range deps {
				j, ok := at[d]
				switch {
				case !ok:
					return fmt.Errorf("core: plugin %s needs %s, which is not in the list", s.Name, d)
				case j >= i:
					return fmt.Errorf("core: plugin %s is listed before %s, which it needs", s.Name, d)
				}
			}
		}
	}
	return nil
}

// Install loads the plugins of list in order, built from cfg. Optional
// plugins that enabled (nil: all) switches off are skipped; a plugin whose
// Needs names one that is off or missing is refused. If a plugin fails,
// the ones installed before it stay (the caller closes the host).
func (h *Host) Install(ctx context.Context, list []Spec, cfg *settings.Config, enabled func(name string) bool) error {
	if err := CheckOrder(list); err != nil {
		return err
	}
	on := map[string]bool{}
	for _, s := range list {
		if s.Optional && enabled != nil && !enabled(s.Name) {
			continue
		}
		for _, d := range s.Needs {
			if !on[d] {
				return fmt.Errorf("core: plugin %s needs %s, which is switched off", s.Name, d)
			}
		}
		if s.New == nil {
			return fmt.Errorf("core: plugin %s has no constructor", s.Name)
		}
		if _, err := h.Use(ctx, s.Name, s.New(cfg)); err != nil {
			return err
		}
		on[s.Name] = true
	}
	h.mu.Lock()
	for name := range on {
		h.installed = append(h.installed, name)
	}
	slices.Sort(h.installed)
	h.mu.Unlock()
	return nil
}

// Installed lists the plugins [Host.Install] loaded, sorted.
func (h *Host) Installed() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.installed)
}

// Provide publishes v, something plugins installed later use (the
// compactor, the subagent service, the shell executor), under its type T,
// until scope closes. Only one value of a type can be provided at a time.
func Provide[T any](h *Host, scope *kernel.Scope, v T) error {
	t := reflect.TypeFor[T]()
	h.mu.Lock()
	if _, dup := h.provided[t]; dup {
		h.mu.Unlock()
		return fmt.Errorf("core: a %v is already provided", t)
	}
	h.provided[t] = v
	h.mu.Unlock()
	return scope.Add(func() {
		h.mu.Lock()
		delete(h.provided, t)
		h.mu.Unlock()
	})
}

// Need returns the T an earlier plugin provided, or an error naming T: a
// plugin calls it for what its Spec's Needs promise.
func Need[T any](h *Host) (T, error) {
	v, ok := Lookup[T](h)
	if !ok {
		return v, fmt.Errorf("core: no %v is provided (install the plugin that provides it first)", strings.TrimPrefix(reflect.TypeFor[T]().String(), "*"))
	}
	return v, nil
}

// Lookup returns the T a plugin provided, if any: for what a Spec's After
// names (used when present), and for run-time uses of plugins installed
// later.
func Lookup[T any](h *Host) (T, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.provided[reflect.TypeFor[T]()]
	if !ok {
		var zero T
		return zero, false
	}
	return v.(T), true
}

// ErrConfig marks an error in what the user configured (a permission rule
// that does not parse, a model nothing serves): nothing ran, and front
// doors exit with their usage code. Wrap such errors with [ConfigError].
var ErrConfig = errors.New("configuration error")

// ConfigError marks err as a configuration error; its message is err's,
// and [Host.Use] passes it through without naming the plugin.
func ConfigError(err error) error {
	if err == nil {
		return nil
	}
	return &configError{err}
}

type configError struct{ err error }

func (e *configError) Error() string   { return e.err.Error() }
func (e *configError) Unwrap() []error { return []error{e.err, ErrConfig} }
