package postgres

import (
	"context"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
)

// A migration takes the schema from version-1 to version. Migrations are
// append-only: once released, a migration's SQL never changes; a later
// change of layout is a new migration.
type migration struct {
	version     int
	description string
	sql         string
}

// migrations is the schema's history. The last entry's version is the
// layout this build reads and writes ([SchemaVersion]).
var migrations = []migration{{
	version:     1,
	description: "sessions, events, leases; the write function that fences every append",
	sql: `
CREATE TABLE sessions(
	id text COLLATE "C" PRIMARY KEY,
	version integer NOT NULL,
	created_at bigint NOT NULL,
	cwd text COLLATE "C",
	parent_session text COLLATE "C",
	seed_length integer,
	title text NOT NULL DEFAULT '',
	last_activity bigint NOT NULL DEFAULT 0,
	turns integer NOT NULL DEFAULT 0,
	event_count bigint NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_activity ON sessions(last_activity DESC, id);
CREATE INDEX sessions_by_cwd ON sessions(cwd, last_activity DESC, id);

-- One row per event. The primary key is what makes a second writer's
-- insert of a seq fail; event holds the event's canonical JSON bytes (the
-- line the JSONL backend writes), read back verbatim.
CREATE TABLE events(
	session_id text COLLATE "C" NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	seq bigint NOT NULL,
	type text NOT NULL,
	time bigint NOT NULL,
	event bytea NOT NULL,
	PRIMARY KEY(session_id, seq)
);

-- The writer lease of a session. A row is never deleted, so the fencing
-- token only grows: a holder is '' once released.
CREATE TABLE leases(
	session_id text COLLATE "C" PRIMARY KEY,
	token bigint NOT NULL,
	holder text NOT NULL,
	host text NOT NULL,
	pid integer NOT NULL,
	pid_start bigint NOT NULL DEFAULT 0,
	machine text NOT NULL DEFAULT '',
	acquired_at timestamptz NOT NULL,
	renewed_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL
);

-- write_events is every write of a session in one statement, so one round
-- trip and one transaction: it checks (and renews) the writer's lease,
-- creates the session when p_create, cuts rows from p_cut when it is not
-- null, checks that the events continue the stored log, inserts them,
-- updates the listing columns and rings the doorbell (NOTIFY at commit).
CREATE FUNCTION write_events(
	p_id text, p_token bigint, p_now timestamptz, p_ttl interval, p_channel text,
	p_create boolean, p_version integer, p_created_at bigint, p_cwd text, p_parent text, p_seed_length integer,
	p_cut bigint,
	p_title text, p_last_activity bigint, p_turns integer,
	p_seqs bigint[], p_types text[], p_times bigint[], p_events bytea[]
) RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
	v_now timestamptz := coalesce(p_now, clock_timestamp());
	v_last bigint;
	v_lease record;
	v_n integer := coalesce(array_length(p_seqs, 1), 0);
BEGIN
	UPDATE leases SET renewed_at = v_now, expires_at = v_now + p_ttl
		WHERE session_id = p_id AND token = p_token AND holder <> '';
	IF NOT FOUND THEN
		SELECT token, host, pid INTO v_lease FROM leases WHERE session_id = p_id;
		RAISE EXCEPTION 'the writer lease of this session was taken over'
			USING ERRCODE = 'DSHFN', DETAIL = coalesce(v_lease.token, 0) || ' ' || coalesce(v_lease.pid, 0) || ' ' || coalesce(v_lease.host, '');
	END IF;
	IF p_create THEN
		INSERT INTO sessions(id, version, created_at, cwd, parent_session, seed_length)
			VALUES (p_id, p_version, p_created_at, p_cwd, p_parent, p_seed_length);
	END IF;
	IF p_cut IS NOT NULL THEN
		DELETE FROM events WHERE session_id = p_id AND seq >= p_cut;
	END IF;
	IF v_n > 0 THEN
		SELECT coalesce(max(seq), -1) INTO v_last FROM events WHERE session_id = p_id;
		IF p_seqs[1] <> v_last + 1 THEN
			RAISE EXCEPTION 'append seq mismatch'
				USING ERRCODE = 'DSHSQ', DETAIL = v_last::text;
		END IF;
		INSERT INTO events(session_id, seq, type, time, event)
			SELECT p_id, u.seq, u.type, u.time, u.event FROM unnest(p_seqs, p_types, p_times, p_events) AS u(seq, type, time, event);
	END IF;
	UPDATE sessions SET title = p_title, last_activity = p_last_activity, turns = p_turns,
		event_count = CASE WHEN v_n > 0 THEN p_seqs[v_n] + 1 ELSE coalesce(p_cut, event_count) END
		WHERE id = p_id;
	IF v_n > 0 THEN
		PERFORM pg_notify(p_channel, p_seqs[v_n] || ' ' || p_id);
	END IF;
END
$fn$;
`,
}, {
	version:     2,
	description: "snapshots: each session's newest snapshot of its derived state",
	sql: `
-- One row per session: its newest snapshot (derived data; the events stay
-- the truth). Written only by the holder of the session's lease.
CREATE TABLE snapshots(
	session_id text COLLATE "C" PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
	covers bigint NOT NULL,
	summary jsonb NOT NULL,
	data bytea NOT NULL
);
`,
}}

// SchemaVersion is the schema version this build reads and writes.
var SchemaVersion = migrations[len(migrations)-1].version

// MigrationResult says what [Migrate] found and did.
type MigrationResult struct {
	Schema  string
	From    int // the version before
	To      int // the version after
	Applied []string
}

// migrate brings schema up to the newest version, in one transaction under
// an advisory lock (two processes opening a fresh database at once apply
// each migration once). A schema newer than this build is refused: an
// older dsh must not write a layout it does not know.
func migrate(ctx context.Context, conn *pgx.Conn, schema string, list []migration) (MigrationResult, error) {
	res := MigrationResult{Schema: schema}
	ident := pgx.Identifier{schema}.Sanitize()
	newest := list[len(list)-1].version
	// The common case, a current schema, in one query and without a lock.
	var current int
	if err := conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+ident+".schema_migrations").Scan(&current); err == nil && current == newest {
		res.From, res.To = current, current
		return res, nil
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return res, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	h := fnv.New64a()
	h.Write([]byte("dsh schema " + schema))
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(h.Sum64())); err != nil {
		return res, err
	}
	if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+ident); err != nil {
		return res, fmt.Errorf("creating schema %s: %w", schema, err)
	}
	if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+ident+`.schema_migrations(
		version integer PRIMARY KEY,
		description text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return res, err
	}
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+ident+".schema_migrations").Scan(&res.From); err != nil {
		return res, err
	}
	res.To = res.From
	if res.From > newest {
		return res, fmt.Errorf("schema %s is at version %d, newer than this build of dsh knows (%d): upgrade dsh", schema, res.From, newest)
	}
	if res.From == newest {
		return res, nil
	}
	if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+ident); err != nil {
		return res, err
	}
	for _, m := range list {
		if m.version <= res.From {
			continue
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return res, fmt.Errorf("migration %d (%s): %w", m.version, m.description, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations(version, description) VALUES ($1, $2)", m.version, m.description); err != nil {
			return res, err
		}
		res.To = m.version
		res.Applied = append(res.Applied, fmt.Sprintf("%d: %s", m.version, m.description))
	}
	if err := tx.Commit(ctx); err != nil {
		return res, err
	}
	return res, nil
}
