package weblogin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dshq/dsh/internal/pgschema"
)

// Postgres is a [Store] in a PostgreSQL schema (the session store's), in
// a table of its own, web_logins: every worker on the database sees every
// log-in the moment it is made or ended. Each request a cookie
// authenticates reads one row by primary key.
type Postgres struct {
	pool *pgxpool.Pool
}

// schemaSQL makes the table. Its layout is the only one there has been;
// a later change would be a new statement guarded by the same lock.
const schemaSQL = `CREATE TABLE IF NOT EXISTS web_logins(
	key text COLLATE "C" PRIMARY KEY,
	token_id text NOT NULL,
	token_hash text NOT NULL,
	expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS web_logins_by_expiry ON web_logins(expires_at);`

// OpenPostgres connects to the database at url and makes the table in
// schema (created when missing) if it is not there yet. Workers starting
// together take turns under an advisory lock (CREATE ... IF NOT EXISTS
// alone races).
func OpenPostgres(ctx context.Context, url, schema string) (*Postgres, error) {
	pool, err := pgschema.Open(ctx, url, schema, "dsh-weblogin", schemaSQL)
	if err != nil {
		return nil, fmt.Errorf("weblogin: %w", err)
	}
	return &Postgres{pool: pool}, nil
}

// Put implements [Store]; it also deletes log-ins expired by now.
func (p *Postgres) Put(ctx context.Context, key string, l Login, now time.Time) error {
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM web_logins WHERE expires_at <= $1`, now.UnixMilli()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO web_logins(key, token_id, token_hash, expires_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (key) DO UPDATE SET token_id = excluded.token_id, token_hash = excluded.token_hash, expires_at = excluded.expires_at`,
			key, l.TokenID, l.TokenHash, l.Expires.UnixMilli())
		return err
	})
	if err != nil {
		return fmt.Errorf("weblogin: storing a log-in: %w", err)
	}
	return nil
}

// Get implements [Store].
func (p *Postgres) Get(ctx context.Context, key string, now time.Time) (Login, bool, error) {
	var l Login
	var exp int64
	err := p.pool.QueryRow(ctx, `SELECT token_id, token_hash, expires_at FROM web_logins WHERE key = $1 AND expires_at > $2`,
		key, now.UnixMilli()).Scan(&l.TokenID, &l.TokenHash, &exp)
	if errors.Is(err, pgx.ErrNoRows) {
		return Login{}, false, nil
	}
	if err != nil {
		return Login{}, false, fmt.Errorf("weblogin: reading a log-in: %w", err)
	}
	l.Expires = time.UnixMilli(exp)
	return l, true, nil
}

// Delete implements [Store].
func (p *Postgres) Delete(ctx context.Context, key string) error {
	if _, err := p.pool.Exec(ctx, `DELETE FROM web_logins WHERE key = $1`, key); err != nil {
		return fmt.Errorf("weblogin: ending a log-in: %w", err)
	}
	return nil
}

// Close closes the connections.
func (p *Postgres) Close() { p.pool.Close() }
