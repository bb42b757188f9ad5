package tokens

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dshq/dsh/internal/pgschema"
)

// Postgres is a [Keeper] in a PostgreSQL schema (the session store's), in
// a table of its own, serve_tokens, holding what the file holds (id, name,
// hash, access, workspaces, creation time; never the token): every worker
// on the database authenticates every token made against it, and a
// revocation on any of them is refused by all at their next request. Each
// authenticated request reads one row by primary key.
type Postgres struct {
	pool *pgxpool.Pool
	// timeout bounds each query: the methods take no context (a request's
	// check, a command's create), and a database that does not answer
	// refuses the token rather than hold the request.
	timeout time.Duration
}

const tokensSQL = `CREATE TABLE IF NOT EXISTS serve_tokens(
	id text COLLATE "C" PRIMARY KEY,
	name text NOT NULL UNIQUE,
	hash text NOT NULL,
	access text NOT NULL,
	workspaces text[] NOT NULL DEFAULT '{}',
	created bigint NOT NULL
);`

// OpenPostgres connects to the database at url and makes the table in
// schema (created when missing) if it is not there yet, under an
// advisory lock so workers starting together do not race.
func OpenPostgres(ctx context.Context, url, schema string) (*Postgres, error) {
	pool, err := pgschema.Open(ctx, url, schema, "dsh-tokens", tokensSQL)
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	return &Postgres{pool: pool, timeout: 10 * time.Second}, nil
}

// Close closes the connections.
func (p *Postgres) Close() { p.pool.Close() }

func (p *Postgres) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), p.timeout)
}

// Create implements [Keeper].
func (p *Postgres) Create(name, access string, workspaces []string, now time.Time) (string, Token, error) {
	raw, t, err := newToken(name, access, workspaces, now)
	if err != nil {
		return "", Token{}, err
	}
	ctx, cancel := p.ctx()
	defer cancel()
	ws := t.Workspaces
	if ws == nil {
		ws = []string{}
	}
	_, err = p.pool.Exec(ctx, `INSERT INTO serve_tokens(id, name, hash, access, workspaces, created) VALUES ($1, $2, $3, $4, $5, $6)`,
		t.ID, t.Name, t.Hash, t.Access, ws, t.Created)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" { // unique_violation
		return "", Token{}, fmt.Errorf("tokens: a token named %q exists already (revoke it first)", name)
	}
	if err != nil {
		return "", Token{}, fmt.Errorf("tokens: storing the token: %w", err)
	}
	return raw, t, nil
}

// Revoke implements [Keeper].
func (p *Postgres) Revoke(nameOrID string) (Token, error) {
	ctx, cancel := p.ctx()
	defer cancel()
	rows, err := p.pool.Query(ctx, `DELETE FROM serve_tokens WHERE name = $1 OR id = $1 RETURNING `+columns, nameOrID)
	if err != nil {
		return Token{}, fmt.Errorf("tokens: revoking: %w", err)
	}
	gone, err := pgx.CollectRows(rows, scanToken)
	if err != nil {
		return Token{}, fmt.Errorf("tokens: revoking: %w", err)
	}
	if len(gone) == 0 {
		return Token{}, fmt.Errorf("%w %q", ErrUnknown, nameOrID)
	}
	return gone[0], nil
}

// List implements [Keeper].
func (p *Postgres) List() ([]Token, error) {
	ctx, cancel := p.ctx()
	defer cancel()
	rows, err := p.pool.Query(ctx, `SELECT `+columns+` FROM serve_tokens ORDER BY created, id`)
	if err != nil {
		return nil, fmt.Errorf("tokens: listing: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanToken)
	if err != nil {
		return nil, fmt.Errorf("tokens: listing: %w", err)
	}
	return out, nil
}

// Check implements [Keeper].
func (p *Postgres) Check(raw string) (Token, bool) {
	id, ok := idOf(raw)
	if !ok {
		return Token{}, false
	}
	t, ok := p.byID(id)
	if !ok || !matches(t, raw) {
		return Token{}, false
	}
	return t, true
}

// Current implements [Keeper].
func (p *Postgres) Current(id, hash string) (Token, bool) {
	t, ok := p.byID(id)
	if !ok || subtle.ConstantTimeCompare([]byte(t.Hash), []byte(hash)) != 1 {
		return Token{}, false
	}
	return t, true
}

func (p *Postgres) byID(id string) (Token, bool) {
	ctx, cancel := p.ctx()
	defer cancel()
	rows, err := p.pool.Query(ctx, `SELECT `+columns+` FROM serve_tokens WHERE id = $1`, id)
	if err != nil {
		return Token{}, false
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanToken)
	return t, err == nil
}

const columns = `id, name, hash, access, workspaces, created`

func scanToken(r pgx.CollectableRow) (Token, error) {
	var t Token
	err := r.Scan(&t.ID, &t.Name, &t.Hash, &t.Access, &t.Workspaces, &t.Created)
	if len(t.Workspaces) == 0 {
		t.Workspaces = nil
	}
	return t, err
}
