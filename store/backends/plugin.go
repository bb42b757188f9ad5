package backends

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dshq/dsh/agent"
	"github.com/dshq/dsh/core"
	"github.com/dshq/dsh/doctor"
	"github.com/dshq/dsh/kernel"
	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/postgres"
)

// Names are the stores "sessionStore" can name.
var Names = []string{JSONL, SQLite, Postgres}

// Key is "sessionStore": where sessions are stored, "jsonl" (the default,
// one file per session), "sqlite" (one database) or "postgres" (a
// PostgreSQL database many hosts share, configured by "postgres"). Every session of the
// machine lives in one store, which a project must not be able to move:
// only the user's own layers (user settings, --settings, flags) choose
// it; a project or local file that sets it gets a warning instead.
var Key = settings.Key[string]{
	Name:  "sessionStore",
	Merge: settings.Latest[string],
	Validate: func(name string) error {
		if name != "" && !slices.Contains(Names, name) {
			return fmt.Errorf("unknown session store %q (want one of %s)", name, strings.Join(Names, ", "))
		}
		return nil
	},
	Policy: func(layer settings.Layer, path, name string) (string, bool, string) {
		if name == "" || !layer.Project() {
			return name, true, ""
		}
		return "", false, fmt.Sprintf("settings: ignoring sessionStore %q in %s: the session store is chosen in your user settings or --settings", name, path)
	},
}

// Chosen returns the store the configuration names ("jsonl" unless set).
func Chosen(c *settings.Config) string {
	if name := Key.Get(c); name != "" {
		return name
	}
	return JSONL
}

// ErrOpen is returned when the session store cannot be opened (a full
// disk, a damaged database): nothing could be saved, so nothing runs.
var ErrOpen = errors.New("opening the session store")

// openError is ErrOpen with its cause; like a configuration error it is
// reported as it is, without the plugin's name.
type openError struct{ err error }

func (e *openError) Error() string   { return ErrOpen.Error() + ": " + e.err.Error() }
func (e *openError) Unwrap() []error { return []error{ErrOpen, e.err} }

// Plugin is the persistence capability: the chosen store, a
// [store.Coordinator] mirroring every live session into it, set as the
// agents' loader (resume, fork) and provided to front doors (listings,
// --continue). A disposed agent's session is written out and released: its
// lock and buffers go, so a long-running server does not accumulate them,
// and another process may resume it.
//
// On a store with leases, an agent whose session another host took over
// is cancelled (its lease renewal found out, or a flush was refused): it
// can record nothing more, and the new holder closes its turn as
// interrupted. The [*LostLeases] provided say which sessions were lost.
// What the store reports with no caller to return to (an outage and its
// The agent loop finds the coordinator's Resume through agent.Resumer: a
// signature that drifted from it would silently turn every resume into a
// replay.
var _ agent.Resumer = (*store.Coordinator)(nil)

// retries, a lost lease) is logged and shown through the site's Warn.
func Plugin(cfg Config) core.Plugin {
	return func(ctx context.Context, h *core.Host, scope *kernel.Scope) error {
		lost := &LostLeases{}
		cancel := func(id session.ID, err error) {
			lost.m.Store(id, err)
			for _, ag := range h.Agents.List() {
				if ag.Session().ID() == id {
					ag.Cancel(err.Error())
				}
			}
		}
		backend, err := Open(ctx, cfg, Options{Home: h.Site.Home, NoSync: h.Site.NoSync, Getenv: h.Site.Env, OnLost: cancel,
			Logf: func(f string, args ...any) {
				msg := fmt.Sprintf(f, args...)
				h.Logger.Warn(msg)
				if h.Site.Warn != nil {
					h.Site.Warn(msg)
				}
			}})
		if err != nil {
			return &openError{err}
		}
		coord, err := store.Attach(scope, h.Sessions, backend, store.Options{Logf: func(f string, args ...any) {
			h.Logger.Warn(fmt.Sprintf(f, args...))
		}, Warn: func(msg string) {
			h.Logger.Warn(msg)
			if h.Site.Warn != nil {
				h.Site.Warn(msg)
			}
		}})
		if err != nil {
			return err
		}
		if err := scope.Add(h.Agents.SetLoader(coord)); err != nil {
			return err
		}
		if err := scope.Add(h.Agents.Hub.Disposed.Listen(func(ctx context.Context, ag agent.Agent) error {
			if err := coord.Release(context.WithoutCancel(ctx), ag.Session().ID()); err != nil {
				h.Logger.Warn("releasing a session failed", "session", ag.Session().ID(), "err", err)
			}
			return nil
		})); err != nil {
			return err
		}
		// A flush refused because the lease was taken over stops the agent
		// even before the renewal notices.
		if err := scope.Add(h.Agents.Hub.Error.Listen(func(_ context.Context, n agent.ErrorNote) error {
			if n.Agent != nil && errors.Is(n.Err, store.ErrFenced) {
				cancel(n.Agent.Session().ID(), n.Err)
			}
			return nil
		})); err != nil {
			return err
		}
		if checks, ok := core.Lookup[*doctor.Registry](h); ok {
			where := Where(cfg, Options{Home: h.Site.Home, Getenv: h.Site.Env})
			if err := scope.Add(checks.Add("store", func(ctx context.Context) []doctor.Finding {
				return findings(ctx, cfg, where, backend)
			})); err != nil {
				return err
			}
		}
		if err := core.Provide(h, scope, lost); err != nil {
			return err
		}
		return core.Provide(h, scope, coord)
	}
}

// LostLeases records the sessions whose lease another host took over from
// this process.
type LostLeases struct{ m sync.Map }

// Err returns what took the lease of id away, or nil.
func (l *LostLeases) Err(id session.ID) error {
	if l == nil {
		return nil
	}
	if err, ok := l.m.Load(id); ok {
		return err.(error)
	}
	return nil
}

// findings is the store's report for `dsh doctor`: where sessions go, and
// for PostgreSQL whether the database answers now.
func findings(ctx context.Context, cfg Config, where string, b store.Backend) []doctor.Finding {
	name := cmp.Or(cfg.Store, JSONL)
	pg, ok := b.(*postgres.Backend)
	if !ok {
		return []doctor.Finding{{Severity: doctor.OK, Subject: name, Message: "sessions are stored at " + where}}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := pg.Ping(ctx)
	if err != nil {
		return []doctor.Finding{{Severity: doctor.Error, Subject: name, Message: err.Error(),
			Fix: "check the database at " + where + " (DSH_DATABASE_URL or \"postgres\" in your user settings)"}}
	}
	return []doctor.Finding{{Severity: doctor.OK, Subject: name,
		Message: fmt.Sprintf("sessions are stored at %s, schema version %d, leases held as host %s", where, v, pg.Host())}}
}
