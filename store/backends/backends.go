// Package backends opens a session store by name: the one place where the
// dsh binary's front doors (the terminal, headless runs, `dsh sessions`,
// `dsh store`, the ACP server) turn the "sessionStore" setting into
// storage, so they always agree on where sessions live.
package backends

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dshq/dsh/session"
	"github.com/dshq/dsh/settings"
	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/jsonl"
	"github.com/dshq/dsh/store/postgres"
	"github.com/dshq/dsh/store/sqlite"
)

// The store names, as settings spell them.
const (
	JSONL    = "jsonl"
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Config is the store the user chose: the settings keys "sessionStore"
// ([Key]) and "postgres" ([postgres.Key]).
type Config struct {
	// Store names the backend ("" is JSONL).
	Store string
	// Postgres configures the PostgreSQL backend (connection string,
	// schema, lease duration); DSH_DATABASE_URL fills or overrides its
	// URL when the store opens.
	Postgres postgres.Config
}

// FromSettings reads the store keys of the configuration.
func FromSettings(c *settings.Config) Config {
	return Config{Store: Chosen(c), Postgres: postgres.Key.Get(c)}
}

// Options are what opening a store needs besides the settings: where and
// in what process it runs.
type Options struct {
	// Home is $DSH_HOME (where JSONL and SQLite keep sessions).
	Home string
	// NoSync turns fsync off (tests, benchmarks; for PostgreSQL:
	// synchronous_commit off).
	NoSync bool
	// Getenv reads the environment (nil: the process's).
	Getenv func(string) string
	// Logf receives what a store reports without a caller: PostgreSQL's
	// retries during an outage, a lease lost to another host.
	Logf func(format string, args ...any)
	// OnLost is told when a PostgreSQL lease this process held was taken
	// over: the session's agent must stop.
	OnLost func(id session.ID, err error)
}

// Path is where the named store keeps sessions under the dsh home: the
// sessions/ directory for JSONL, sessions.db for SQLite ("" for
// PostgreSQL, which keeps nothing there). Switching stores does not move
// existing sessions; each store only sees its own (`dsh sessions copy`
// copies them).
func Path(home, name string) string {
	switch name {
	case SQLite:
		return filepath.Join(home, "sessions.db")
	case Postgres:
		return ""
	}
	return filepath.Join(home, "sessions")
}

// Where describes the store's location for people: a path, or the
// database (its password redacted) and schema.
func Where(cfg Config, o Options) string {
	if cfg.Store != Postgres {
		return Path(o.Home, cfg.Store)
	}
	pc, err := cfg.Postgres.Resolve(o.Getenv)
	if err != nil {
		return "(not configured: " + err.Error() + ")"
	}
	schema := pc.Schema
	if schema == "" {
		schema = postgres.DefaultSchema
	}
	return postgres.Redact(pc.URL) + " (schema " + schema + ")"
}

// Open opens the store cfg names.
func Open(ctx context.Context, cfg Config, o Options) (store.Backend, error) {
	switch cfg.Store {
	case "", JSONL:
		return jsonl.Open(Path(o.Home, JSONL), jsonl.Options{NoSync: o.NoSync})
	case SQLite:
		return sqlite.Open(Path(o.Home, SQLite), sqlite.Options{NoSync: o.NoSync})
	case Postgres:
		po, err := postgresOptions(cfg, o)
		if err != nil {
			return nil, err
		}
		return postgres.Open(ctx, po)
	}
	return nil, fmt.Errorf("backends: unknown session store %q (want one of %s)", cfg.Store, strings.Join(Names, ", "))
}

func postgresOptions(cfg Config, o Options) (postgres.Options, error) {
	pc, err := cfg.Postgres.Resolve(o.Getenv)
	if err != nil {
		return postgres.Options{}, err
	}
	po := pc.Options()
	po.Logf, po.OnLost, po.NoSync = o.Logf, o.OnLost, o.NoSync
	return po, nil
}

// Migrate brings the store's layout up to this build's: PostgreSQL runs
// its pending migrations; JSONL and SQLite have none (SQLite refuses a
// database of another layout version) and just open. It returns a line
// saying what was done.
func Migrate(ctx context.Context, cfg Config, o Options) (string, error) {
	if cfg.Store != Postgres {
		b, err := Open(ctx, cfg, o)
		if err != nil {
			return "", err
		}
		if err := b.Close(); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s store at %s: no migrations (its layout is current)", nameOr(cfg.Store), Where(cfg, o)), nil
	}
	po, err := postgresOptions(cfg, o)
	if err != nil {
		return "", err
	}
	res, err := postgres.Migrate(ctx, po)
	if err != nil {
		return "", err
	}
	if len(res.Applied) == 0 {
		return fmt.Sprintf("postgres store at %s: schema version %d, up to date", Where(cfg, o), res.To), nil
	}
	return fmt.Sprintf("postgres store at %s: migrated from version %d to %d (%s)", Where(cfg, o), res.From, res.To, strings.Join(res.Applied, "; ")), nil
}

func nameOr(name string) string {
	if name == "" {
		return JSONL
	}
	return name
}
