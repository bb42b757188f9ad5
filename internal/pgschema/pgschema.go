// Package pgschema opens a small pool on the PostgreSQL session store's
// database for a side table of dsh serve (web log-ins, tokens) and makes
// the table in the store's schema if it is not there yet.
package pgschema

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Open connects to url with schema on the search path (default "dsh",
// created when missing) and runs ddl, its CREATE ... IF NOT EXISTS
// statements, under an advisory lock named for the table and schema:
// workers starting together take turns (CREATE ... IF NOT EXISTS alone
// races). app names the connections in pg_stat_activity.
func Open(ctx context.Context, url, schema, app, ddl string) (*pgxpool.Pool, error) {
	if schema == "" {
		schema = "dsh"
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, errors.New("the connection string does not parse")
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = app
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting: %w", err)
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(app + "\x00" + schema))
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(h.Sum64())); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, ddl)
		return err
	})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("making the table: %w", err)
	}
	return pool, nil
}
