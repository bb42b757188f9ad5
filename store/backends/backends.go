// Package backends opens a session store by name: the one place where the
// dsh binary's front doors (the terminal, headless runs, `dsh sessions`,
// the ACP server) turn the "sessionStore" setting into storage, so they
// always agree on where sessions live.
package backends

import (
	"fmt"
	"path/filepath"

	"github.com/dshq/dsh/store"
	"github.com/dshq/dsh/store/jsonl"
	"github.com/dshq/dsh/store/sqlite"
)

// The store names, as settings spell them.
const (
	JSONL  = "jsonl"
	SQLite = "sqlite"
)

// Path is where the named store keeps sessions under the dsh home: the
// sessions/ directory for JSONL, sessions.db for SQLite. Switching stores
// does not move existing sessions; each store only sees its own.
func Path(home, name string) string {
	if name == SQLite {
		return filepath.Join(home, "sessions.db")
	}
	return filepath.Join(home, "sessions")
}

// Open opens the named store ("" is JSONL) under home. noSync turns fsync
// off (tests, benchmarks).
func Open(home, name string, noSync bool) (store.Backend, error) {
	switch name {
	case "", JSONL:
		return jsonl.Open(Path(home, JSONL), jsonl.Options{NoSync: noSync})
	case SQLite:
		return sqlite.Open(Path(home, SQLite), sqlite.Options{NoSync: noSync})
	}
	return nil, fmt.Errorf("backends: unknown session store %q (want %s or %s)", name, JSONL, SQLite)
}
